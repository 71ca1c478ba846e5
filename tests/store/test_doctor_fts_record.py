"""`zmem doctor` records the digest of each full-text table FTS5's integrity-check passed
(.zmem/fts-checked.json) and does not check a table whose stored bytes are still those (issue 14:
the check reads every block, ~0.4 s at 10k files); any change to the bytes, even in place at the
same length, is checked again."""
from __future__ import annotations

import json

import pytest

from helpers.workspace import run
from zmem.store import db
from zmem.store import fts

pytestmark = pytest.mark.skipif(not fts.can_delete_by_rowid(),
                                reason=f"SQLite {db.sqlite_version()} has no contentless_delete")


def _index(ws):
    return db.connect(ws / ".zmem" / "index.sqlite")


def _checked(conn, passed: dict) -> tuple[list, list[str]]:
    """(problems, tables the integrity-check ran on)."""
    ran: list[str] = []
    conn.set_trace_callback(ran.append)
    try:
        problems = fts.check_tables(conn, passed)
    finally:
        conn.set_trace_callback(None)
    return problems, [sql.split("(")[1].rstrip(")") for sql in ran if sql.startswith("PRAGMA integrity_check(")]


def _flip_a_byte_in_place(conn, table: str) -> None:
    """The last block of table, one byte changed: same row, same length."""
    rowid, block = conn.execute(f"SELECT id, block FROM {table}_data ORDER BY id DESC LIMIT 1").fetchone()
    damaged = block[:-1] + bytes([block[-1] ^ 0xFF])
    with db.write_transaction(conn):
        conn.execute(f"UPDATE {table}_data SET block = ? WHERE id = ?", (damaged, rowid))


def test_an_unchanged_table_is_not_checked_again_and_a_changed_one_is(ws):
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    conn = _index(ws)
    try:
        passed: dict[str, str] = {}
        problems, ran = _checked(conn, passed)
        assert problems == [] and "chunks_fts" in ran and passed["chunks_fts"] == fts.stored_digest(conn, "chunks_fts")
        problems, ran = _checked(conn, passed)
        assert problems == [] and ran == []  # nothing changed: nothing checked
        with db.write_transaction(conn):  # a new row: the table is checked again, and passes
            conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES (999999, 'a new row')")
        problems, ran = _checked(conn, passed)
        assert problems == [] and ran == ["chunks_fts"]
        _flip_a_byte_in_place(conn, "chunks_fts")
        before = dict(passed)
        problems, ran = _checked(conn, passed)
        assert ran == ["chunks_fts"] and passed == before  # a table that fails is not recorded
    finally:
        conn.close()


def test_doctor_records_what_passed_and_finds_damage_made_after_it(ws):
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    assert run(["-C", str(ws), "doctor"]).exit_code == 0
    record = json.loads((ws / ".zmem" / "fts-checked.json").read_text())
    assert set(record) == set(fts.TABLES)
    conn = _index(ws)
    try:
        _flip_a_byte_in_place(conn, "chunks_fts")
        problems, _ = _checked(conn, dict(record))
        assert [t for t, _ in problems] == ["chunks_fts"], problems  # the record does not hide it
    finally:
        conn.close()
    lines = [line for line in run(["-C", str(ws), "doctor"]).stdout.splitlines() if "full-text index" in line]
    assert len(lines) == 1 and "chunks_fts: SQLite cannot read it" in lines[0] and "repaired" in lines[0], lines
