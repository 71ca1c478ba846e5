"""Hybrid recall latency at N chunks (not a test). Vector search cost does not depend on what the
vectors mean, so the windows get random unit vectors of the model's dimension; that isolates
zmem's search + fusion + snippets from the embedding model.

    python bench/bench_hybrid.py --out /tmp/zmem-hybrid --chunks 10000 [--dims 384] [--runs 7]
    python bench/bench_hybrid.py --out /tmp/zmem-hybrid --chunks 10000 --fresh /path/to/model.onnx [--runs 9]

--fresh MODEL: fresh `zmem recall QUERY --json` processes (the console script beside this Python:
hybrid, the default with vectors) with the onnx provider on that model directory (the random vectors
are stored under its fingerprint, so recall embeds the query with the real model), alternating runs
without a watcher, right after a `zmem watch` says "watching", and once that watcher embeds queries
for them (zmem.index.fsmonitor); wall and CPU (user+sys) medians, the load average noted.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_synthetic import make_workspace  # noqa: E402

QUERIES = ["gateway backup Mac Studio", "Peter Lisbon", "aniversário Marrakech", "北京 出差", "deploy script database"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp/zmem-hybrid"))
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--fresh", type=Path, help="an onnx model directory: time fresh processes, with and without a watcher")
    args = ap.parse_args()
    import numpy as np


    from zmem.text.chunking import chunk_windows
    from zmem.index.catchup import catch_up, open_index
    from zmem.query.search import recall
    from zmem.store.vectors import VectorMatrix, VectorStore
    from zmem.workspace.core import find_workspace

    shutil.rmtree(args.out, ignore_errors=True)
    make_workspace(args.out, files=max(1, args.chunks * 10 // 28), commits=20, seed=3)
    fingerprint = "bench-random"
    if args.fresh:
        os.environ.update(fresh_env(args.out))
        from zmem.embedders import make_embedder
        from zmem.index.embedding import vector_fingerprint
        embedder = make_embedder({"provider": "onnx", "model_path": str(args.fresh.resolve()), "threads": 2})
        fingerprint = vector_fingerprint(embedder)
        args.dims = len(embedder.embed(["x"])[0])
    ws = find_workspace(args.out)
    catch_up(ws, lock_timeout=600)
    conn = open_index(ws)
    store = VectorStore(conn)
    rng = np.random.default_rng(0)
    rows = conn.execute("SELECT id, text, heading, start_line FROM chunks").fetchall()
    wins = [w for r in rows for w in chunk_windows(*r)]
    vecs = rng.normal(size=(len(wins), args.dims)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    conn.execute("BEGIN")
    store.reset(fingerprint)
    store.add([(cid, a, b, v.tolist()) for (cid, a, b, _), v in zip(wins, vecs)])
    conn.execute("COMMIT")
    print(f"{len(rows)} chunks, {len(wins)} windows x {args.dims} dims; vector store: {store.detail}")
    if args.fresh:
        conn.close()
        return fresh_processes(args.out, args.runs)
    matrix = VectorMatrix()
    VectorStore(conn, matrix)  # a long-running process loads the matrix once
    for label, mode, st, fusion in (("bm25", "bm25", store, "adaptive"), ("vector", "vector", store, "adaptive"),
                                    ("hybrid adaptive", "hybrid", store, "adaptive"),
                                    ("hybrid weighted", "hybrid", store, "weighted"),
                                    ("vector, vectors in memory (long-running process)", "vector", None, "adaptive"),
                                    ("hybrid adaptive, vectors in memory (long-running process)", "hybrid", None, "adaptive"),
                                    ("hybrid weighted, vectors in memory (long-running process)", "hybrid", None, "weighted")):
        samples = []
        for _ in range(args.runs):
            for q in QUERIES:
                qv = rng.normal(size=args.dims).astype(np.float32)
                qv /= np.linalg.norm(qv)
                t = time.perf_counter()
                st_ = st or VectorStore(conn, matrix)  # per recall, as the MCP server does: checks for changes
                recall(conn, q, k=6, mode=mode, query_vector=qv.tolist(), store=st_, fusion=fusion,
                       vector_weight=0.3, text_weight=0.7)
                samples.append(time.perf_counter() - t)
        ms = sorted(s * 1000 for s in samples)
        print(f"  {label:7} recall in-process: median {statistics.median(ms):6.1f} ms (min {ms[0]:.1f}, max {ms[-1]:.1f})")
    store.vec_loaded = False
    samples = []
    for _ in range(3):
        qv = rng.normal(size=args.dims).astype(np.float32)
        t = time.perf_counter()
        recall(conn, QUERIES[0], k=6, mode="hybrid", query_vector=(qv / np.linalg.norm(qv)).tolist(), store=store)
        samples.append(time.perf_counter() - t)
    print(f"  hybrid with the in-process fallback (no sqlite-vec): median {statistics.median(samples) * 1000:.1f} ms")
    conn.close()


def fresh_env(out: Path) -> dict:
    """HOME and XDG_CONFIG_HOME beside the workspace, the model in the user config (it is trusted there)."""
    home = out.parent / f"{out.name}-home"
    (home / "config" / "zmem").mkdir(parents=True, exist_ok=True)
    # no automatic watcher (an in-process model would start one): the "watcher" runs start their own
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"), "ZMEM_WATCH_AUTO": "0"}


def fresh_processes(ws: Path, runs: int) -> None:
    import json
    import resource
    import subprocess
    model = sys.argv[sys.argv.index("--fresh") + 1]
    env = {**os.environ, **fresh_env(ws)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cfg = Path(env["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    cfg.write_text(f'[embeddings]\nprovider = "onnx"\nmodel_path = "{Path(model).resolve()}"\nthreads = 2\n')
    # the console script agents run (its plain `recall WORDS --json` path; hybrid: the default with vectors)
    zmem = [str(Path(sys.executable).parent / "zmem"), "-C", str(ws)]

    def recall(query: str, mode: str = "hybrid") -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run([*zmem, "recall", query, *(["--mode", mode] if mode != "hybrid" else []), "--json"],
                              env=env, capture_output=True, text=True, cwd=ws)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode or json.loads(proc.stdout)["mode"] != mode:
            raise SystemExit(f"recall failed: {proc.stdout[:300]} {proc.stderr}")
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    def start_watcher() -> subprocess.Popen:
        """`zmem watch`, once it says "watching"."""
        proc = subprocess.Popen([*zmem, "watch", "--json"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        for line in proc.stdout:
            if '"watching"' in line:
                break
        return proc

    def wait_serving() -> None:
        """Until the watcher embeds queries (its model loaded; asking also starts the load)."""
        from zmem.index import fsmonitor
        from zmem.index.catchup import open_index
        from zmem.store import db
        from zmem.workspace.core import find_workspace
        conn = open_index(find_workspace(ws))
        fp = db.get_meta(conn, "vec_fingerprint")
        conn.close()
        while fsmonitor.embedded(ws / ".zmem", fp, "warm", timeout=5.0) is None:
            time.sleep(0.05)

    def cpu_of(pid: int) -> float:
        """A process's CPU seconds so far (user + sys, from /proc)."""
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(pid: int) -> float:
        status = Path(f"/proc/{pid}/status").read_text()
        return int(status.split("VmRSS:")[1].split()[0]) / 1024

    recall("warm the bytecode and page caches")  # and the model's cached graph, where zmem keeps one
    # bm25 with the watcher: the floor (the watcher also spares every process the stat sweep)
    samples: dict[str, list[tuple[float, float]]] = {"without a watcher": [], "first, as zmem watch starts": [],
                                                     "with zmem watch": [], "bm25, with zmem watch": []}
    served: list[float] = []  # the watcher's own CPU during each recall it served (embedding the query)
    loaded: list[tuple[float, float]] = []  # the watcher's (CPU s, RSS MB) once serving
    for i in range(runs):  # alternating, so load drifts hit both alike
        query = f"{QUERIES[i % len(QUERIES)]} {i}"
        samples["without a watcher"].append(recall(query))
        watcher = start_watcher()
        try:
            samples["first, as zmem watch starts"].append(recall(query + " first"))
            wait_serving()
            loaded.append((cpu_of(watcher.pid), rss_mb(watcher.pid)))
            spent = cpu_of(watcher.pid)
            samples["with zmem watch"].append(recall(query + " again"))
            served.append(cpu_of(watcher.pid) - spent)
            samples["bm25, with zmem watch"].append(recall(query, "bm25"))
        finally:
            watcher.terminate()
            watcher.wait()
    print(f"fresh `zmem recall QUERY --json` (hybrid), onnx provider ({Path(model).name}), ms, median (min-max) of {runs}:")
    for label, rows in samples.items():
        wall = sorted(r[0] * 1000 for r in rows)
        cpu = sorted(r[1] * 1000 for r in rows)
        print(f"  {label:28} wall {statistics.median(wall):6.0f} ({wall[0]:.0f}-{wall[-1]:.0f})"
              f"   CPU {statistics.median(cpu):6.0f} ({cpu[0]:.0f}-{cpu[-1]:.0f})")
    print(f"  the watcher's CPU per served recall: median {statistics.median(served) * 1000:.0f} ms "
          f"(max {max(served) * 1000:.0f}; clock ticks of {1000 / os.sysconf('SC_CLK_TCK'):.0f} ms)")
    print(f"  the watcher once serving: CPU since start {statistics.median(c for c, _ in loaded) * 1000:.0f} ms, "
          f"RSS {statistics.median(r for _, r in loaded):.0f} MB (medians)")
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
