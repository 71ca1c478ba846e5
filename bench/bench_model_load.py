"""What a fresh process pays to embed one query with the onnx provider (not a test): fresh Python
processes each build the provider, embed one query (as a fresh hybrid recall does), and report the
wall and CPU of each phase; medians over --runs, the load average noted.

    python bench/bench_model_load.py /path/to/model.onnx-dir [--runs 9]

Phases: provider (OnnxEmbedder(): reads the configs, hashes the model's ends for its fingerprint),
runtime (numpy, onnxruntime, tokenizers imported), load (tokenizer.json read, the session made),
first query (tokenized and run). Run it with PYTHONPATH=<another checkout> to compare versions; the
first run of each version is not counted (zmem writes its cached graph then)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
marks = {}
def mark(name):
    global t0, c0
    t, c = time.perf_counter(), time.process_time()
    marks[name] = ((t - t0) * 1000, (c - c0) * 1000)
    t0, c0 = t, c
from zmem.embedders.onnx import OnnxEmbedder
e = OnnxEmbedder(sys.argv[1], threads=2); mark("provider")
import numpy, onnxruntime, tokenizers; mark("runtime")
if hasattr(e, "_load"):
    import inspect
    light = "prepack" in inspect.signature(e._load).parameters  # a fresh recall's one query loads this way
    with e._lock:
        e._load(prepack=False) if light else e._load()
mark("load")
v = e.embed(["which machine runs the gateway"], "query")[0]; mark("first query")
print(json.dumps({"marks": marks, "vector": v[:3]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="an onnx model directory")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="zmem-model-load-")
    # no automatic watcher: it would load the model in its place (and embed the queries) after the first run
    env = {**os.environ, "XDG_CACHE_HOME": os.path.join(home, "cache"), "ZMEM_WATCH_AUTO": "0"}
    rows = []
    for i in range(args.runs + 1):
        out = subprocess.run([sys.executable, "-c", CHILD, args.model], env=env, capture_output=True, text=True,
                             cwd=home)  # not a checkout's directory: `-c` puts the cwd first on sys.path
        if out.returncode:
            raise SystemExit(out.stderr)
        if i:
            rows.append(json.loads(out.stdout))
    print(f"one query embedded by a fresh process, {args.model}, ms, median of {args.runs} (wall / CPU):")
    total_wall = total_cpu = 0.0
    for phase in rows[0]["marks"]:
        wall = statistics.median(r["marks"][phase][0] for r in rows)
        cpu = statistics.median(r["marks"][phase][1] for r in rows)
        total_wall, total_cpu = total_wall + wall, total_cpu + cpu
        print(f"  {phase:12} {wall:6.1f} / {cpu:6.1f}")
    print(f"  {'sum':12} {total_wall:6.1f} / {total_cpu:6.1f}   vector[:3] {rows[0]['vector']}")
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
