"""store.impact (exact top-k BM25 from impact-ordered word lists) against FTS5's own `ORDER BY rank
LIMIT k` on random tables: the same rowids, the same float scores, equal scores by rowid, including
words floored at idf 1e-6, heading-only matches, many equal-length chunks, rows deleted (FTS5's
tombstones where SQLite has contentless_delete) and a state change between two questions."""
from __future__ import annotations

import random

import pytest

from helpers.impact_tables import VOCAB, add_rows as _add, fts5_top as _fts5, random_index as _index
from zmem.store import impact
from zmem.store.fts import deletes_by_rowid


def _delete(conn, r: random.Random, share: float) -> None:
    rows = conn.execute("SELECT id, text, heading FROM chunks").fetchall()
    gone = [row for row in rows if r.random() < share]
    for rowid, text, heading in gone:
        if deletes_by_rowid(conn, "chunks_fts"):
            conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (rowid,))
        else:
            conn.execute("INSERT INTO chunks_fts(chunks_fts, rowid, text, heading, cjk_bi, cjk_uni) "
                         "VALUES('delete', ?, ?, ?, '', '')", (rowid, text, heading))
        conn.execute("DELETE FROM chunks WHERE id = ?", (rowid,))


@pytest.fixture(autouse=True)
def _lists_at_once(monkeypatch):
    monkeypatch.setattr(impact, "FTS5_FIRST", 0)


@pytest.mark.parametrize("by_rowid", [True, False], ids=["contentless_delete", "delete_by_values"])
@pytest.mark.parametrize("seed", range(6))
def test_top_k_is_exactly_fts5s_on_random_tables_before_and_after_changes(seed, by_rowid, monkeypatch):
    r = random.Random(seed)
    answered = asked = 0
    conn = _index(r, r.choice([30, 200, 600]), by_rowid)
    for round_ in range(4):
        if round_:  # the index changes: rows deleted and added (the state is read again)
            _delete(conn, r, r.choice([0.05, 0.3]))
            _add(conn, r, r.choice([5, 50, 200]))
        for _ in range(12):
            words = list(dict.fromkeys(r.choices(VOCAB[:12] if r.random() < 0.6 else VOCAB, k=r.randint(1, 4))))
            monkeypatch.setattr(impact, "LIST_DF", r.choice([1, 10, 50]))
            monkeypatch.setattr(impact, "BATCH", r.choice([1, 4, 16, 64]))
            for k in (1, 6, 24, 200):
                got = impact.top_k(conn, words, k)
                asked += 1
                if got is not None:
                    answered += 1
                    assert got == _fts5(conn, words, k), (seed, round_, words, k)
    assert answered > asked * 0.5


def test_a_query_without_a_common_word_or_with_too_many_rare_chunks_is_left_to_fts5(monkeypatch):
    conn = _index(random.Random(1), 300)
    monkeypatch.setattr(impact, "LIST_DF", 10_000)
    assert impact.top_k(conn, ["w0"], 6) is None  # no word in LIST_DF chunks
    monkeypatch.setattr(impact, "LIST_DF", 10)
    monkeypatch.setattr(impact, "SCAN_MAX", 0)
    assert impact.top_k(conn, ["w0", "w23"], 6) in (None, _fts5(conn, ["w0", "w23"], 6))
    assert impact.top_k(conn, ["w0"], 6) == _fts5(conn, ["w0"], 6)  # nothing rare to scan
    monkeypatch.setattr(impact, "ENABLED", False)
    assert impact.top_k(conn, ["w0"], 6) is None


def test_the_first_searches_of_an_index_state_are_left_to_fts5(monkeypatch):
    r = random.Random(3)
    conn = _index(r, 300)
    monkeypatch.setattr(impact, "LIST_DF", 10)
    monkeypatch.setattr(impact, "FTS5_FIRST", 2)
    assert [impact.top_k(conn, ["w0"], 6) for _ in range(3)] == [None, None, _fts5(conn, ["w0"], 6)]
    _add(conn, r, 3)  # a new state: FTS5 again first
    assert [impact.top_k(conn, ["w1"], 6) for _ in range(3)] == [None, None, _fts5(conn, ["w1"], 6)]


def test_a_word_in_no_chunk_adds_nothing_and_changes_nothing(monkeypatch):
    conn = _index(random.Random(2), 200)
    monkeypatch.setattr(impact, "LIST_DF", 10)
    for words in (["w0", "nowhere"], ["nowhere", "w1", "w0"]):
        got = impact.top_k(conn, words, 24)
        assert got is not None and got == _fts5(conn, words, 24)


def _varint(v: int) -> bytes:
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    return bytes(reversed(out))


def test_a_chunks_length_is_the_sum_of_its_docsize_varints_however_long_they_are():
    r = random.Random(5)
    for _ in range(20_000):
        sizes = [r.choice([0, 1, 5, 127, 128, 129, 300, 16383, 16384, 70_000, r.randint(0, 20_000)])
                 for _ in range(r.randint(1, 5))]
        record = b"".join(_varint(v) for v in sizes)
        assert impact.varints(record) == sizes
        assert impact._length(record) == sum(sizes)
