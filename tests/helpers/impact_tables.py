"""Random in-memory indexes holding what zmem.store.impact reads (the chunks' id sequence, meta's
index_id, chunks_fts), and FTS5's own answer to compare its lists with."""
from __future__ import annotations

import random

from zmem.store import db
from zmem.store.fts import TOKENIZER, can_delete_by_rowid

VOCAB = [f"w{i}" for i in range(24)]
WEIGHTS = [1.0 / (i + 1) ** 0.7 for i in range(len(VOCAB))]  # a few words in most rows, most in few
SIZES = (1, 2, 3, 5, 8, 8, 8, 13, 40)  # repeated lengths: equal scores
HEADING_SIZES = (0, 0, 1, 2)


def random_index(r: random.Random, rows: int, by_rowid: bool = True, **add):
    """An in-memory index of rows random chunks (chunks_fts deleting by rowid, FTS5's tombstones, where
    SQLite can and by_rowid; else by the values indexed). add: add_rows' sizes."""
    conn = db.sqlite.connect(":memory:", isolation_level=None, check_same_thread=False)
    option = ", contentless_delete=1" if by_rowid and can_delete_by_rowid() else ""
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta VALUES('index_id', ?)", (f"{r.getrandbits(64):016x}",))
    conn.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT, heading TEXT)")
    conn.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, heading, cjk_bi, cjk_uni, content=''{option}, "
                 f"tokenize='{TOKENIZER}')")
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('rank', 'bm25(1.0, 0.5, 1.0, 0.5)')")
    add_rows(conn, r, rows, **add)
    return conn


def add_rows(conn, r: random.Random, rows: int, sizes=SIZES, heading_sizes=HEADING_SIZES) -> None:
    """rows random chunks more (a new index state: the chunk id sequence moves)."""
    for _ in range(rows):
        text = " ".join(r.choices(VOCAB, WEIGHTS, k=r.choice(sizes)))
        heading = " ".join(r.choices(VOCAB, WEIGHTS, k=r.choice(heading_sizes)))
        rowid = conn.execute("INSERT INTO chunks(text, heading) VALUES(?, ?)", (text, heading)).lastrowid
        conn.execute("INSERT INTO chunks_fts(rowid, text, heading, cjk_bi, cjk_uni) VALUES(?, ?, ?, '', '')",
                     (rowid, text, heading))


def fts5_top(conn, words: list[str], k: int) -> list[tuple[int, float]]:
    """FTS5's `ORDER BY rank LIMIT k` for any of words."""
    match = " OR ".join(f'"{w}"' for w in words)
    return [tuple(row) for row in conn.execute(
        "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?", (match, k))]
