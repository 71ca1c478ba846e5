"""A/B of in-process BM25 recall (search + snippets, no freshness check) on one indexed workspace.

    python bench/bench_recall.py --ws /tmp/ws --a /path/to/old --b /path/to/new [--rounds 5] [--runs 9]

--a and --b are PYTHONPATH entries holding a `zmem` package. Each round runs one process per side
(alternating A, B), which times every query `--runs` times after a warm-up; prints, per query and
side, the median over rounds of the per-round medians (ms, wall and CPU), then the median over queries.
The queries are bench_core.py's plus common-word ones (words in most chunks of the synthetic corpus).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

QUERIES = ["gateway backup Mac Studio", "Peter Lisbon", "aniversário Marrakech", "北京 出差", "deploy script database",
           "Ana Lisbon next week", "retry backoff", "Peter", "the"]

CHILD = """
import json, statistics, sys, time
from zmem.index.catchup import open_index
from zmem.query.search import recall
from zmem.workspace.core import find_workspace
queries, runs = json.loads(sys.argv[1]), int(sys.argv[2])
conn = open_index(find_workspace(None))
out = {}
for q in queries:
    recall(conn, q, k=6)
    wall, cpu = [], []
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        recall(conn, q, k=6)
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    out[q] = [statistics.median(wall) * 1000, statistics.median(cpu) * 1000]
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ws", required=True)
    ap.add_argument("--a", required=True, help="PYTHONPATH of version A (the baseline)")
    ap.add_argument("--b", required=True, help="PYTHONPATH of version B")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    sides = {"A": args.a, "B": args.b}
    print(f"load before: {os.getloadavg()[0]:.2f}  (A = {args.a}, B = {args.b})")
    got = {s: {q: [] for q in QUERIES} for s in sides}
    for _ in range(args.rounds):
        for side, path in sides.items():
            proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(QUERIES), str(args.runs)], cwd=args.ws,
                                  capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}, check=True)
            for q, times in json.loads(proc.stdout).items():
                got[side][q].append(times)
    print(f"{'query':30} {'A wall':>8} {'B wall':>8} {'A CPU':>8} {'B CPU':>8}  (ms)")
    med = {s: {q: [statistics.median(t[i] for t in got[s][q]) for i in (0, 1)] for q in QUERIES} for s in sides}
    for q in QUERIES:
        print(f"{q:30} {med['A'][q][0]:8.1f} {med['B'][q][0]:8.1f} {med['A'][q][1]:8.1f} {med['B'][q][1]:8.1f}")
    overall = {s: [statistics.median(med[s][q][i] for q in QUERIES) for i in (0, 1)] for s in sides}
    print(f"{'median over the queries':30} {overall['A'][0]:8.1f} {overall['B'][0]:8.1f} "
          f"{overall['A'][1]:8.1f} {overall['B'][1]:8.1f}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
