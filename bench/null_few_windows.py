"""Whether a few windows tell a crowded model (fusion.CROWDED, fusion.NULL_MIN): for every cached question of a
bench/eval.py cache, its mean cosine with n windows of each workspace drawn at random, against the side of
CROWDED that the whole index gives it (a benchmark, not a test).

    python bench/null_few_windows.py /tmp/eval-e5 /tmp/eval-minilm     # the --cache of bench/eval.py runs
"""
from __future__ import annotations

import pickle
import random
import sys
from pathlib import Path

import numpy as np

from zmem.index.catchup import open_index
from zmem.query import fusion
from zmem.store.vectors import VectorStore
from zmem.workspace.core import find_workspace

SIZES = (3, 5, 8, 12, 20)
DRAWS = 10  # random subsets per question, workspace and size
QUESTIONS = 400  # at most, per workspace


def measure(cache: Path) -> None:
    vectors = pickle.loads((cache / "query-vectors.pickle").read_bytes())
    rng = random.Random(1)
    turned = {n: 0 for n in SIZES}
    drawn = {n: 0 for n in SIZES}
    low = {n: 9.0 for n in SIZES}
    high = {n: -9.0 for n in SIZES}
    for index in sorted(cache.rglob(".zmem/index.sqlite")):
        ws = find_workspace(index.parent.parent)
        conn = open_index(ws)
        fp = VectorStore(conn).fingerprint()
        windows = np.array([np.frombuffer(r[0], dtype=np.float32) for r in conn.execute("SELECT vector FROM chunk_vectors")])
        conn.close()
        queries = [np.asarray(v, dtype=np.float32) for (f, _), v in vectors.items() if f == fp][:QUESTIONS]
        if not len(windows) or not queries:
            continue
        for q in queries:
            sims = windows @ q
            whole = sims.mean() >= fusion.CROWDED
            for n in SIZES:
                for _ in range(DRAWS):
                    mean = float(sims[rng.sample(range(len(sims)), min(n, len(sims)))].mean())
                    low[n], high[n] = min(low[n], mean), max(high[n], mean)
                    drawn[n] += 1
                    turned[n] += (mean >= fusion.CROWDED) != whole
    print(f"{cache}:")
    for n in SIZES:
        print(f"  {n:2d} windows: {turned[n]} of {drawn[n]} draws on the other side of CROWDED "
              f"({fusion.CROWDED}); means {low[n]:.3f} .. {high[n]:.3f}")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        measure(Path(arg))
