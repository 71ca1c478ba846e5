"""Keyword recall leaves out words in half the chunks or more when rarer query words fill the hits
(issue 14: scoring every chunk a common word is in was most of a recall's time). FTS5's bm25 gives
such a word the floor weight 1e-6, so the hits and their order stay those of the whole query."""
from __future__ import annotations

import pytest

from helpers.workspace import commit_all, run, write
from zmem.store.fts import build_match, common_terms
from zmem.index.catchup import open_index
from zmem.query.search import _bm25, search_bm25
from zmem.workspace.core import find_workspace

FILLER = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]


@pytest.fixture
def index(tmp_path):
    """40 daily logs of distinct lengths: `relay` in 30 of them, `zebra` in 9, `koala` in 2."""
    assert run(["init", "--no-hooks", str(tmp_path)]).exit_code == 0
    for i in range(40):
        words = " ".join(FILLER[j % len(FILLER)] for j in range(i + 3))
        lines = [f"# 2025-01-{i % 28 + 1:02d}", "", f"- {words}."]
        if i % 4:
            lines.append("- The relay dropped messages again" + " and again" * (i % 3) + ".")
        if i % 5 == 2 or i == 7:
            lines.append("- Saw a zebra" + " zebra" * (i % 2) + " at the zoo.")
        if i in (11, 29):
            lines.append("- A koala slept on the fence.")
        write(tmp_path, f"memory/2025/2025-{i // 28 + 1:02d}-{i % 28 + 1:02d}.md", "\n".join(lines) + "\n")
    commit_all(tmp_path)
    assert run(["-C", str(tmp_path), "index", "-q"]).exit_code == 0
    conn = open_index(find_workspace(tmp_path))
    yield conn
    conn.close()


def statements(conn, fn):
    """What fn returns, and the SQL statements it ran (a trace of the real connection)."""
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        return fn(), seen
    finally:
        conn.set_trace_callback(None)


def test_a_word_in_most_chunks_is_left_out_when_rarer_words_fill_the_hits(index):
    query = "relay zebra"
    assert common_terms(index, query) == {"relay"}
    hits, ran = statements(index, lambda: search_bm25(index, query, k=6))
    whole = _bm25(index, build_match(query), 6, None, None, None, None)
    assert [cid for cid, _ in hits] == [cid for cid, _ in whole]
    assert all(abs(a - b) < 1e-5 for (_, a), (_, b) in zip(hits, whole))
    assert not any('"relay"' in sql and "ORDER BY" in sql for sql in ran)  # never ranked by the common word


def test_too_few_hits_of_the_rarer_words_search_the_whole_query(index):
    query = "relay koala"
    hits, ran = statements(index, lambda: search_bm25(index, query, k=6))
    assert hits == _bm25(index, build_match(query), 6, None, None, None, None)
    assert len(hits) == 6  # the two koala chunks first, then chunks holding only `relay`
    assert any('"relay" OR "koala"' in sql for sql in ran)


def test_filters_apply_to_the_rarer_words_search(index):
    query = "relay zebra"
    hits = search_bm25(index, query, k=3, since="2025-01-05")
    whole = _bm25(index, build_match(query), 3, "2025-01-05", None, None, None)
    assert [cid for cid, _ in hits] == [cid for cid, _ in whole]


def test_one_word_and_all_common_words_are_searched_as_they_are(index):
    assert common_terms(index, "relay") == frozenset()  # one word: nothing to leave out
    assert common_terms(index, "relay again") == {"relay", "again"}
    assert build_match("relay again", leave_out=frozenset({"relay", "again"})) is None
    assert search_bm25(index, "relay again", k=6) == _bm25(index, build_match("relay again"), 6, None, None, None, None)
