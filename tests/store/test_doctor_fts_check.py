"""`zmem doctor`'s full-text check on tables that delete by rowid (issue 14: the term-by-term rebuild
cost ~0.1 ms a row, seconds at 10k files): FTS5's integrity-check through the pragma and the rows'
recorded form, which find a damaged table and rows in an older form, and the rebuild repairs both."""
from __future__ import annotations

import pytest

from helpers.workspace import recall_json, run
from zmem.store import db
from zmem.store import fts

pytestmark = pytest.mark.skipif(not fts.can_delete_by_rowid(),
                                reason=f"SQLite {db.sqlite_version()} has no contentless_delete")


def _index(ws):
    return db.connect(ws / ".zmem" / "index.sqlite")


def _full_text_lines(ws) -> list[str]:
    return [line for line in run(["-C", str(ws), "doctor"]).stdout.splitlines() if "full-text index" in line]


def test_a_damaged_table_is_found_without_the_term_by_term_rebuild_and_repaired(ws):
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    conn = _index(ws)
    try:
        ran: list[str] = []
        conn.set_trace_callback(ran.append)
        assert fts.check_tables(conn) == []
        assert not any("zmem_fresh" in sql for sql in ran)  # no table built afresh to compare with
        conn.set_trace_callback(None)
        with db.write_transaction(conn):  # a lost block of the full-text index
            conn.execute("DELETE FROM chunks_fts_data WHERE rowid = (SELECT max(rowid) FROM chunks_fts_data)")
        assert [(t, p.split(" (")[0]) for t, p in fts.check_tables(conn)] == [("chunks_fts", "SQLite cannot read it")]
    finally:
        conn.close()
    lines = _full_text_lines(ws)
    assert len(lines) == 1 and "chunks_fts: SQLite cannot read it" in lines[0] and "repaired" in lines[0], lines
    conn = _index(ws)
    try:
        assert fts.check_tables(conn) == []
    finally:
        conn.close()
    assert recall_json(ws, "gateway")["results"][0]["path"] == "memory/2025-11-24.md"


def test_history_rows_in_an_older_form_are_found_and_repaired(ws):
    assert run(["-C", str(ws), "index", "--history", "-q"]).exit_code == 0
    conn = _index(ws)
    try:
        with db.write_transaction(conn):
            conn.execute("UPDATE hist_chunks SET fts_form = ? WHERE id = (SELECT min(id) FROM hist_chunks)",
                         (fts.FTS_VERSION - 1,))
        assert fts.check_tables(conn) == [("hist_fts", "1 row indexed in an older form")]
    finally:
        conn.close()
    lines = _full_text_lines(ws)
    assert len(lines) == 1 and "hist_fts: 1 row indexed in an older form; repaired" in lines[0], lines
    conn = _index(ws)
    try:
        assert fts.check_tables(conn) == []
    finally:
        conn.close()
