"""A watcher's side of store.impact (what zmem.index.fsmonitor's keyword searches call): answers only
for exactly the asker's index state and only from lists already made, equal to FTS5's `ORDER BY rank
LIMIT k`; lists made ahead only as far as MAX_ENTRIES allows; the lists held for a state are shared
by the process's connections to the same index file; a fresh process asks only when lists could answer."""
from __future__ import annotations

import random

import pytest

from helpers.impact_tables import add_rows, fts5_top as _fts5, random_index
from zmem.store import db, impact

SIZES, HEADING_SIZES = (1, 3, 8, 8, 13, 40), (0, 1, 2)


def _index(r: random.Random, rows: int):
    return random_index(r, rows, by_rowid=False, sizes=SIZES, heading_sizes=HEADING_SIZES)


def _add(conn, r: random.Random, rows: int) -> None:
    add_rows(conn, r, rows, sizes=SIZES, heading_sizes=HEADING_SIZES)


@pytest.fixture(autouse=True)
def _small(monkeypatch):
    monkeypatch.setattr(impact, "LIST_DF", 10)
    monkeypatch.setattr(impact, "FTS5_FIRST", 2)


def test_answers_come_only_from_lists_made_for_exactly_that_state(monkeypatch):
    r = random.Random(11)
    conn = _index(r, 400)
    key = impact.state_key(conn)
    words = ["w0", "w3", "w20"]
    assert impact.served_top_k(conn, key, words, 6) == (None, True)  # no lists yet
    assert impact.build(conn, words, evict=True) == key
    for k in (1, 6, 24, 200):
        assert impact.served_top_k(conn, key, words, k) == (_fts5(conn, words, k), False)
    assert impact.served_top_k(conn, key, ["w1"], 6) == (None, True)  # another common word: not made
    assert impact.served_top_k(conn, key, ["nowhere"], 6) == (None, False)  # no common word: FTS5 answers
    _add(conn, r, 5)  # a new state
    assert impact.served_top_k(conn, key, words, 6) == (None, False)
    new = impact.state_key(conn)
    assert new != key and impact.served_top_k(conn, new, words, 6) == (None, True)
    impact.build(conn, words)
    assert impact.served_top_k(conn, new, words, 6) == (_fts5(conn, words, 6), False)


def test_lists_made_ahead_stop_at_max_entries_and_asked_ones_make_room(monkeypatch):
    conn = _index(random.Random(12), 600)
    dfs = dict(zip(["w0", "w1", "w2"], impact.document_frequencies(conn, ["w0", "w1", "w2"])))
    monkeypatch.setattr(impact, "MAX_ENTRIES", dfs["w0"] + dfs["w1"])
    key = impact.build(conn, ["w0", "w1", "w2"])  # w2 does not fit
    assert [impact.served_top_k(conn, key, [w], 6)[1] for w in ("w0", "w1", "w2")] == [False, False, True]
    impact.build(conn, ["w2"], evict=True)
    assert impact.served_top_k(conn, key, ["w2"], 6) == (_fts5(conn, ["w2"], 6), False)
    assert impact.served_top_k(conn, key, ["w0", "w1", "w2"], 6) == (None, False)  # more than the lists hold


def test_a_fresh_process_asks_only_for_what_lists_could_answer_and_only_first(monkeypatch):
    conn = _index(random.Random(13), 300)
    asked = []

    def ask(key, tokens, k):
        asked.append((key, tokens, k))
        return [(1, -1.0)]
    assert impact.top_k(conn, ["nowhere"], 6, ask=ask) is None and asked == []  # no common word
    assert impact.top_k(conn, ["w0", "w1"], 6, ask=ask) == [(1, -1.0)]
    assert asked == [(impact.state_key(conn), ["w0", "w1"], 6)]
    # after FTS5_FIRST searches of the state (the first counted too): its own lists
    assert impact.top_k(conn, ["w0"], 6, ask=ask) == _fts5(conn, ["w0"], 6)
    assert len(asked) == 1


def test_connections_to_one_index_file_share_its_states_lists(tmp_path):
    path = tmp_path / "index.sqlite"
    conn = _index(random.Random(14), 300)
    conn.execute(f"VACUUM INTO '{path}'")
    a, b = db.connect(path, readonly=True), db.connect(path, readonly=True)
    try:
        key = impact.build(a, ["w0"], evict=True)
        assert impact.served_top_k(b, key, ["w0"], 6) == (_fts5(b, ["w0"], 6), False)  # made through a
        assert impact.served_top_k(a, key, ["w0"], 24) == (_fts5(a, ["w0"], 24), False)
    finally:
        a.close()
        b.close()
