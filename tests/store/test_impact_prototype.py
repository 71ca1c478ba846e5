"""bench/proto_impact.py (a prototype, not wired into recall): FTS5's bm25 replayed in Python and the
threshold algorithm over impact-ordered term lists (in memory, and in SQL tables keeping m chunks per
list with a forward index for random access) give exactly FTS5's `ORDER BY rank LIMIT k` (the
same rowids, the same float scores, ties by rowid) on random tables, including terms floored at
idf 1e-6, heading-only matches and many equal-length chunks."""
from __future__ import annotations

import importlib.util
import random
from pathlib import Path

from zmem.store import db
from zmem.store.fts import TOKENIZER

_spec = importlib.util.spec_from_file_location("proto_impact", Path(__file__).parents[2] / "bench" / "proto_impact.py")
proto = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(proto)

VOCAB = [f"w{i}" for i in range(24)]


def _table(r: random.Random, rows: int):
    conn = db.sqlite.connect(":memory:", isolation_level=None)
    conn.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, heading, cjk_bi, cjk_uni, content='', "
                 f"tokenize='{TOKENIZER}')")
    weights = [1.0 / (i + 1) ** 0.7 for i in range(len(VOCAB))]  # a few words in most rows, most in few
    for rowid in range(1, rows + 1):
        size = r.choice([1, 2, 3, 5, 8, 8, 8, 13, 40])  # repeated lengths: equal scores
        text = " ".join(r.choices(VOCAB, weights, k=size))
        heading = " ".join(r.choices(VOCAB, weights, k=r.choice([0, 0, 1, 2])))
        conn.execute("INSERT INTO chunks_fts(rowid, text, heading, cjk_bi, cjk_uni) VALUES(?, ?, ?, '', '')",
                     (rowid, text, heading))
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('rank', 'bm25(1.0, 0.5, 1.0, 0.5)')")
    return conn


def test_threshold_algorithm_returns_exactly_fts5s_top_k_on_random_tables():
    r = random.Random(14)
    checked = ran_out = 0
    for _ in range(12):
        conn = _table(r, r.choice([30, 200, 600]))
        lists = proto.Lists(conn)
        side = proto.SideIndex(lists, m=r.choice([5, 40, 1000]))  # lists of m chunks in SQL tables
        for _ in range(15):
            words = list(dict.fromkeys(r.choices(VOCAB[:12] if r.random() < 0.6 else VOCAB, k=r.randint(1, 4))))
            match = " OR ".join(f'"{w}"' for w in words)
            for k in (1, 6, 24):
                want = conn.execute("SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank "
                                    "LIMIT ?", (match, k)).fetchall()
                min_df, batch = r.choice([1, 10, 50]), r.choice([1, 4, 16])
                got, *_ = proto.top_k(lists, words, k, min_df=min_df, batch=batch)
                assert [tuple(x) for x in want] == got, (match, k)
                for w in words:
                    side.listed(w, min_df)
                got_sql, _ = proto.top_k_sql(side, match, words, k, min_df=min_df, batch=batch)
                if got_sql is None:  # a list's m chunks ran out: recall would ask FTS5
                    ran_out += 1
                else:
                    assert [tuple(x) for x in want] == got_sql, (match, k, "sql")
                checked += 1
    assert checked == 12 * 15 * 3
    assert ran_out < checked / 2
