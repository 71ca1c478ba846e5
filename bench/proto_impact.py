"""PROTOTYPE (not wired into zmem): exact top-k BM25 through impact-ordered term lists, measured
against FTS5's own `ORDER BY rank LIMIT k` on an indexed workspace.

    python bench/proto_impact.py --ws /tmp/ws [--k 24] [--min-df 2000] [--batch 64]

Per query word with at least --min-df chunks (a "listed" term), the list of its chunks with their
weighted term frequency f (text 1.0, heading 0.5, cjk_bi 1.0, cjk_uni 0.5: recall's bm25 weights)
and their length D in tokens, sorted by the term's BM25 contribution. Lists are built here, in
memory, from fts5vocab and the docsize table; a real side index would be written at index time.
A threshold algorithm (Fagin's TA) reads the lists in parallel in batches, scores every chunk it
meets exactly (FTS5's bm25 arithmetic, replayed in Python: same doubles, same order of operations)
with random access to each term's f, and stops once the k-th best score beats the best score an
unseen chunk could still reach. Rarer words' chunks are all scored. Prints, per query, FTS5's time,
the TA's time, the chunks it scored, the time to build the lists it needed first (here,
from fts5vocab), and whether the k hits (ids and scores, ties by rowid) equal
FTS5's exactly.
"""
from __future__ import annotations

import argparse
import heapq
import math
import os
import statistics
import sys
import time

K1, B = 1.2, 0.75
WEIGHT = {"text": 1.0, "heading": 0.5, "cjk_bi": 1.0, "cjk_uni": 0.5}
QUERIES = ["gateway backup Mac Studio", "Peter Lisbon", "aniversário Marrakech", "deploy script database",
           "Ana Lisbon next week", "retry backoff", "Peter", "the", "Mac backup", "Lisbon Porto Madrid"]


def varints(blob: bytes) -> list[int]:
    """SQLite varints (as FTS5 writes its averages and docsize records)."""
    out, i = [], 0
    while i < len(blob):
        v = 0
        for j in range(9):
            c = blob[i]
            i += 1
            if j == 8:
                v = (v << 8) | c
                break
            v = (v << 7) | (c & 0x7F)
            if not c & 0x80:
                break
        out.append(v)
    return out


class Lists:
    def __init__(self, conn):
        self.conn = conn
        avg = varints(conn.execute("SELECT block FROM chunks_fts_data WHERE id = 1").fetchone()[0])
        self.n_row, self.avgdl = avg[0], sum(avg[1:]) / avg[0]
        self.avgdl = float(sum(avg[1:])) / float(avg[0])
        self.doclen = {i: sum(varints(sz)) for i, sz in conn.execute("SELECT id, sz FROM chunks_fts_docsize")}
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.proto_vi USING fts5vocab(main, chunks_fts, instance)")
        self.f: dict[str, dict[int, float]] = {}
        self.ordered: dict[str, list[tuple[float, int]]] = {}

    def freqs(self, token: str) -> dict[int, float]:
        if token not in self.f:
            f: dict[int, float] = {}
            for doc, col in self.conn.execute("SELECT doc, col FROM temp.proto_vi WHERE term = ?", (token,)):
                f[doc] = f.get(doc, 0.0) + WEIGHT[col]
            self.f[token] = f
        return self.f[token]

    def g(self, f: float, d: int) -> float:
        return (f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / self.avgdl))

    def ordered_list(self, token: str) -> list[tuple[float, int]]:
        if token not in self.ordered:
            f = self.freqs(token)
            self.ordered[token] = sorted(((self.g(v, self.doclen[doc]), doc) for doc, v in f.items()),
                                         key=lambda x: (-x[0], x[1]))
        return self.ordered[token]


def top_k(lists: Lists, tokens: list[str], k: int, min_df: int, batch: int) -> tuple[list[tuple[int, float]], int, int]:
    """(rowid, rank) best first, as FTS5 orders them; how many chunks were scored; how deep the
    deepest list was read (a side index keeping only each term's best M chunks needs M >= that)."""
    freqs = [lists.freqs(t) for t in tokens]
    idf = []
    for f in freqs:
        v = math.log((lists.n_row - len(f) + 0.5) / (len(f) + 0.5))
        idf.append(1e-6 if v <= 0.0 else v)
    listed = [i for i, f in enumerate(freqs) if len(f) >= min_df]
    scored: dict[int, float] = {}

    def score(doc: int) -> None:
        d = lists.doclen[doc]
        s = 0.0
        for i, f in enumerate(freqs):
            s += idf[i] * ((f.get(doc, 0.0) * (K1 + 1.0)) / (f.get(doc, 0.0) + K1 * (1 - B + B * d / lists.avgdl)))
        scored[doc] = -1.0 * s

    for i, f in enumerate(freqs):
        if i not in listed:
            for doc in f:
                if doc not in scored:
                    score(doc)
    ordered = {i: lists.ordered_list(tokens[i]) for i in listed}
    at = dict.fromkeys(listed, 0)
    while True:
        bound = 0.0
        for i in listed:
            if at[i] < len(ordered[i]):
                bound += idf[i] * ordered[i][at[i]][0]
        best = heapq.nsmallest(k, scored.items(), key=lambda x: (x[1], x[0]))
        if not listed or bound == 0.0 or (len(best) == k and -best[-1][1] > bound):
            return best, len(scored), max(at.values(), default=0)
        for i in listed:
            for _, doc in ordered[i][at[i]:at[i] + batch]:
                if doc not in scored:
                    score(doc)
            at[i] += batch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ws", required=True)
    ap.add_argument("--k", type=int, default=24)
    ap.add_argument("--min-df", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    os.chdir(args.ws)
    from zmem.index.catchup import open_index
    from zmem.store.fts import build_match, fts_tokens, query_terms
    from zmem.workspace.core import find_workspace
    conn = open_index(find_workspace(None))
    t0 = time.perf_counter()
    lists = Lists(conn)
    print(f"chunk lengths read from the docsize table: {(time.perf_counter() - t0) * 1000:.1f} ms")
    print(f"load {os.getloadavg()[0]:.2f}; {lists.n_row} chunks; k={args.k} min_df={args.min_df} batch={args.batch}")
    print(f"{'query':28} {'FTS5 ms':>8} {'TA ms':>7} {'scored':>7} {'matching':>8} {'depth':>6} {'lists ms':>8}  same")
    for q in QUERIES:
        words = query_terms(q)
        toks = fts_tokens(words)
        if any(len(t) != 1 for t in toks):
            print(f"{q:28} (a word of several tokens: not handled by the prototype)")
            continue
        tokens = [t[0] for t in toks]
        t0 = time.perf_counter()
        new = [t for t in tokens if t not in lists.f]
        for t in tokens:  # the lists a side index would already hold
            if len(lists.freqs(t)) >= args.min_df:
                lists.ordered_list(t)
        build = (time.perf_counter() - t0) * 1000
        match = build_match(q)
        sql = "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?"
        fts_t, ta_t = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            want = conn.execute(sql, (match, args.k)).fetchall()
            fts_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            got, n_scored, depth = top_k(lists, tokens, args.k, args.min_df, args.batch)
            ta_t.append(time.perf_counter() - t0)
        matching = conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)).fetchone()[0]
        same = [tuple(r) for r in want] == [tuple(r) for r in got]
        print(f"{q:28} {statistics.median(fts_t) * 1000:8.1f} {statistics.median(ta_t) * 1000:7.1f} "
              f"{n_scored:7} {matching:8} {depth:6} {build:8.1f}  {same}"
              + (f" (new lists: {' '.join(new)})" if new else ""))
        if not same:
            print("   FTS5:", want[:4], "\n   TA:  ", got[:4], file=sys.stderr)


if __name__ == "__main__":
    main()
