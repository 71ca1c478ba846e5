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


class SideIndex:
    """The tables a real side index would keep, here in temp: per listed term its best m chunks by
    contribution (term, -g, chunk, f) and the contribution of the best chunk left out (0 when none is),
    and per chunk its length and every term's f as text (` term f term f … `, a forward index) for
    random access. Built from fts5vocab in SQL (seconds: bench only)."""

    def __init__(self, lists: Lists, m: int):
        conn = self.conn = lists.conn
        self.lists, self.m = lists, m
        t0 = time.perf_counter()
        conn.execute("CREATE TEMP TABLE side_post AS SELECT term, doc, sum(CASE col WHEN 'heading' THEN 0.5 WHEN "
                     "'cjk_uni' THEN 0.5 ELSE 1.0 END) AS f FROM temp.proto_vi GROUP BY term, doc")
        conn.execute("CREATE TEMP TABLE side_len(chunk INTEGER PRIMARY KEY, len INTEGER)")
        conn.executemany("INSERT INTO temp.side_len VALUES(?, ?)", lists.doclen.items())
        conn.execute("CREATE TEMP TABLE side_fwd AS SELECT p.doc AS chunk, l.len AS len, ' ' || group_concat(p.term "
                     "|| ' ' || printf('%.1f', p.f), ' ') || ' ' AS freqs FROM temp.side_post p JOIN temp.side_len l "
                     "ON l.chunk = p.doc GROUP BY p.doc")
        conn.execute("CREATE UNIQUE INDEX temp.side_fwd_chunk ON side_fwd(chunk)")
        conn.execute("CREATE TEMP TABLE side_df AS SELECT term, count(*) AS df FROM temp.side_post GROUP BY term")
        conn.execute("CREATE UNIQUE INDEX temp.side_df_term ON side_df(term)")
        conn.execute("CREATE TEMP TABLE side_list(term TEXT, neg_g REAL, chunk INTEGER, f REAL, "
                     "PRIMARY KEY(term, neg_g, chunk)) WITHOUT ROWID")
        conn.execute("CREATE TEMP TABLE side_rest(term TEXT PRIMARY KEY, g_rest REAL)")
        fwd = conn.execute("SELECT sum(length(freqs)) FROM temp.side_fwd").fetchone()[0]
        self.build_ms = (time.perf_counter() - t0) * 1000
        print(f"side index (temp): forward index {fwd / 1e6:.1f} MB of text, built in {self.build_ms:.0f} ms")

    def listed(self, token: str, min_df: int) -> bool:
        row = self.conn.execute("SELECT df FROM temp.side_df WHERE term = ?", (token,)).fetchone()
        if not row or row[0] < min_df:
            return False
        if not self.conn.execute("SELECT 1 FROM temp.side_rest WHERE term = ?", (token,)).fetchone():
            ordered = self.lists.ordered_list(token)
            self.conn.executemany("INSERT INTO temp.side_list VALUES(?, ?, ?, ?)",
                                  [(token, -g, doc, self.lists.f[token][doc]) for g, doc in ordered[:self.m]])
            self.conn.execute("INSERT INTO temp.side_rest VALUES(?, ?)",
                              (token, ordered[self.m][0] if len(ordered) > self.m else 0.0))
        return True


def top_k_sql(side: SideIndex, match: str, tokens: list[str], k: int, min_df: int, batch: int):
    """top_k with every read from the side index's tables (lists in batches, the forward index for
    random access, df) and the rarer words' chunks from FTS5 (rowids only). None when a list's m
    chunks run out before the threshold is beaten (then FTS5 as today)."""
    conn, lists = side.conn, side.lists
    n_row, avgdl = lists.n_row, lists.avgdl
    dfs = [(conn.execute("SELECT df FROM temp.side_df WHERE term = ?", (t,)).fetchone() or (0,))[0] for t in tokens]
    idf = []
    for df in dfs:
        v = math.log((n_row - df + 0.5) / (df + 0.5))
        idf.append(1e-6 if v <= 0.0 else v)
    listed = [i for i, t in enumerate(tokens) if dfs[i] >= min_df]
    rest = {i: conn.execute("SELECT g_rest FROM temp.side_rest WHERE term = ?", (tokens[i],)).fetchone()[0]
            for i in listed}
    keys = [f" {t} " for t in tokens]
    scored: dict[int, float] = {}

    def score(docs) -> None:
        docs = [d for d in dict.fromkeys(docs) if d not in scored]
        for i in range(0, len(docs), 500):
            part = docs[i:i + 500]
            for doc, d, freqs in conn.execute(f"SELECT chunk, len, freqs FROM temp.side_fwd WHERE chunk IN "
                                              f"({','.join('?' * len(part))})", part):
                s = 0.0
                for j, key in enumerate(keys):
                    at = freqs.find(key)
                    f = float(freqs[at + len(key):freqs.index(" ", at + len(key))]) if at >= 0 else 0.0
                    s += idf[j] * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))
                scored[doc] = -1.0 * s

    rare = [i for i in range(len(tokens)) if i not in listed and dfs[i]]
    if rare:
        score(r for (r,) in conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?",
                                         (" OR ".join(f'"{tokens[i]}"' for i in rare),)))
    at = {i: (float("-inf"), 0) for i in listed}
    nxt = {i: None for i in listed}  # the contribution of the next unread entry; 0 when the list ran out
    done = set()
    while True:
        for i in listed:
            if i in done:
                continue
            rows = conn.execute("SELECT neg_g, chunk FROM temp.side_list WHERE term = ? AND (neg_g, chunk) > (?, ?) "
                                "ORDER BY neg_g, chunk LIMIT ?", (tokens[i], *at[i], batch + 1)).fetchall()
            score(doc for _, doc in rows[:batch])
            if len(rows) > batch:
                at[i] = tuple(rows[batch - 1])
                nxt[i] = -rows[batch][0]
            else:
                done.add(i)
                nxt[i] = rest[i]
        bound = sum(idf[i] * nxt[i] for i in listed)
        best = heapq.nsmallest(k, scored.items(), key=lambda x: (x[1], x[0]))
        if bound == 0.0 or (len(best) == k and -best[-1][1] > bound):
            return best, len(scored)
        if len(done) == len(listed):
            return None, len(scored)  # the lists' m chunks were not enough


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ws", required=True)
    ap.add_argument("--k", type=int, default=24)
    ap.add_argument("--min-df", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--m", type=int, default=0, help="also time the side index in SQL tables keeping m chunks per list")
    args = ap.parse_args()
    os.chdir(args.ws)
    from zmem.index.catchup import open_index
    from zmem.store.fts import build_match, fts_tokens, query_terms
    from zmem.workspace.core import find_workspace
    conn = open_index(find_workspace(None))
    t0 = time.perf_counter()
    lists = Lists(conn)
    print(f"chunk lengths read from the docsize table: {(time.perf_counter() - t0) * 1000:.1f} ms")
    side = SideIndex(lists, args.m) if args.m else None
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
        sql_part = ""
        if side is not None:
            for t in tokens:
                side.listed(t, args.min_df)
            sql_t = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                got_sql, n_sql = top_k_sql(side, match, tokens, args.k, args.min_df, args.batch)
                sql_t.append(time.perf_counter() - t0)
            verdict = "ran out (FTS5)" if got_sql is None else str([tuple(r) for r in want] == got_sql)
            sql_part = f"  SQL side index {statistics.median(sql_t) * 1000:.1f} ms, {n_sql} scored, same: {verdict}"
        print(f"{q:28} {statistics.median(fts_t) * 1000:8.1f} {statistics.median(ta_t) * 1000:7.1f} "
              f"{n_scored:7} {matching:8} {depth:6} {build:8.1f}  {same}"
              + (f" (new lists: {' '.join(new)})" if new else "") + sql_part)
        if not same:
            print("   FTS5:", want[:4], "\n   TA:  ", got[:4], file=sys.stderr)


if __name__ == "__main__":
    main()
