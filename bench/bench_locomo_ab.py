"""A/B of in-process recall latency at LoCoMo size (bm25 and hybrid adaptive), two versions of the code.

    python3 ../shared/bench/make_workspace.py --data ../shared/bench/locomo-dev.json --out /tmp/locomo-ws
    python bench/quality.py /tmp/locomo-ws --provider onnx --model-path /tmp/minilm.onnx   # indexes, embeds
    python bench/bench_locomo_ab.py /tmp/locomo-ws --model-path /tmp/minilm.onnx --a /work/main --b . [--rounds 5]

The questions' vectors are embedded once (this checkout's onnx provider) and shared by both sides, so
only recall is timed: each round runs one process per side (alternating A, B; B first in even rounds),
which times every question once after a warm-up pass. Prints per side and mode the median over rounds
of the per-round median (wall and CPU, ms), and the load average before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, pickle, statistics, sys, time
from pathlib import Path
from zmem.index.catchup import open_index
from zmem.index.embedding import providers
from zmem.memory import _query_vector
from zmem.query.search import recall
from zmem.workspace.core import find_workspace
root, vectors = Path(sys.argv[1]), pickle.load(open(sys.argv[2], "rb"))
qs = [json.loads(l) for l in open(root / "questions.jsonl") if l.strip()]
out = {"bm25": ([], []), "hybrid": ([], [])}
by = {}
for q in qs:
    by.setdefault(q["workspace"], []).append(q)
for name, group in by.items():
    ws = find_workspace(root / name)
    conn = open_index(ws)
    _, store, _ = _query_vector(ws, conn, group[0]["question"], 30, False, lambda: providers(ws))
    for timed in (False, True):
        for q in group:
            for mode in ("bm25", "hybrid"):
                w, c = time.perf_counter(), time.process_time()
                recall(conn, q["question"], k=10, mode=mode, query_vector=vectors[q["id"]], store=store,
                       fusion="adaptive", text_weight=0.7, vector_weight=0.3, multiplier=ws.config.candidate_multiplier)
                if timed:
                    out[mode][0].append(time.perf_counter() - w)
                    out[mode][1].append(time.process_time() - c)
    conn.close()
import zmem
print(zmem.__file__, file=sys.stderr)
print(json.dumps({m: [statistics.median(w) * 1000, statistics.median(c) * 1000] for m, (w, c) in out.items()}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--model-path", required=True)
    ap.add_argument("--a", required=True, help="PYTHONPATH of version A (the baseline)")
    ap.add_argument("--b", required=True, help="PYTHONPATH of version B")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="zmem-locomo-ab-"))
    (home / "zmem").mkdir()
    (home / "zmem" / "config.toml").write_text(
        f'[index]\nchunk_tokens = 400\nchunk_overlap = 80\n[embeddings]\nprovider = "onnx"\n'
        f'model_path = "{Path(args.model_path).expanduser()}"\nthreads = 2\n')
    os.environ["XDG_CONFIG_HOME"] = str(home)
    from zmem.index.catchup import open_index
    from zmem.index.embedding import providers
    from zmem.memory import _query_vector
    from zmem.workspace.core import find_workspace
    vectors = {}
    by: dict[str, list] = {}
    for line in open(args.root / "questions.jsonl", encoding="utf-8"):
        if line.strip():
            q = json.loads(line)
            by.setdefault(q["workspace"], []).append(q)
    for name, group in by.items():
        ws = find_workspace(args.root / name)
        conn = open_index(ws)
        provs = providers(ws)
        for q in group:
            vectors[q["id"]] = _query_vector(ws, conn, q["question"], 30, False, lambda: provs)[0]
        conn.close()
    vec_file = home / "vectors.pkl"
    vec_file.write_bytes(pickle.dumps(vectors))
    print(f"load before: {os.getloadavg()[0]:.2f}  (A = {args.a}, B = {args.b}, {len(vectors)} questions)")
    got: dict[str, list] = {"A": [], "B": []}
    for r in range(args.rounds):
        for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
            env = dict(os.environ, PYTHONPATH=getattr(args, side.lower()))
            # run from the workspaces' root: `python -c` puts its working directory first on sys.path,
            # which would import this checkout's zmem on both sides when run from it
            res = subprocess.run([sys.executable, "-c", CHILD, str(args.root), str(vec_file)], env=env,
                                 capture_output=True, text=True, check=True, cwd=str(args.root))
            got[side].append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(f"{'mode':8} {'A wall':>8} {'B wall':>8} {'A CPU':>8} {'B CPU':>8}  (ms, median over rounds of per-round medians)")
    for mode in ("bm25", "hybrid"):
        cells = [statistics.median(x[mode][i] for x in got[s]) for i in (0, 1) for s in ("A", "B")]
        print(f"{mode:8} {cells[0]:8.1f} {cells[1]:8.1f} {cells[2]:8.1f} {cells[3]:8.1f}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
