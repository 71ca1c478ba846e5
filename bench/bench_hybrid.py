"""Hybrid recall latency at N chunks (not a test). Vector search cost does not depend on what the
vectors mean, so the windows get random unit vectors of the model's dimension; that isolates
zmem's search + fusion + snippets from the embedding model.

    python bench/bench_hybrid.py --out /tmp/zmem-hybrid --chunks 10000 [--dims 384] [--runs 7]
"""
from __future__ import annotations

import argparse
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
    args = ap.parse_args()
    import numpy as np


    from zmem.text.chunking import chunk_windows
    from zmem.index.catchup import catch_up, open_index
    from zmem.query.search import recall
    from zmem.store.vectors import VectorMatrix, VectorStore
    from zmem.workspace.core import find_workspace

    shutil.rmtree(args.out, ignore_errors=True)
    make_workspace(args.out, files=max(1, args.chunks * 10 // 28), commits=20, seed=3)
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
    store.reset("bench-random")
    store.add([(cid, a, b, v.tolist()) for (cid, a, b, _), v in zip(wins, vecs)])
    conn.execute("COMMIT")
    print(f"{len(rows)} chunks, {len(wins)} windows x {args.dims} dims; vector store: {store.detail}")
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


if __name__ == "__main__":
    main()
