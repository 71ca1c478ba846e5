"""Full-text rows deleted with other values than they were indexed with (an older zmem process still
running after an upgrade, another Python's word boundaries) left tokens behind in a contentless FTS5
table: silent damage, invisible to FTS5's integrity-check. Tables made by SQLite >= 3.43 delete by
rowid (contentless_delete=1, schema step contentless_delete_fts); `zmem doctor` finds and repairs what an older index
holds; the stdlib sqlite3 (older here) keeps deleting by value, correctly."""
from __future__ import annotations

import os
import re

import pytest
from helpers.workspace import classic_fts, commit_all, recall_json, roll_back_schema, run, write, zmem_proc

from zmem.store import db
from zmem.store import fts
from zmem.index import catchup as indexer
from zmem.store import migrations

NOTE = "# 2025-01-01\n\n## Notes\n\n- party at the office with Ana🥳 tonight\n"
needs_rowid_deletes = pytest.mark.skipif(not fts.can_delete_by_rowid(),
                                         reason=f"SQLite {db.sqlite_version()} has no contentless_delete")


def _index(ws):
    return db.connect(ws / ".zmem" / "index.sqlite")


def _problems(ws) -> list[tuple[str, str]]:
    conn = _index(ws)
    try:
        return fts.check_tables(conn)
    finally:
        conn.close()


def _by_rowid(ws) -> dict[str, bool]:
    conn = _index(ws)
    try:
        return {t: fts.deletes_by_rowid(conn, t) for t in fts.TABLES}
    finally:
        conn.close()


def _indexed_in_the_old_form(ws) -> None:
    """NOTE committed and indexed, in full-text tables as SQLite < 3.43 makes them (or an index converted
    by one): a delete is given what was indexed."""
    write(ws, "memory/2025-01-01.md", NOTE)
    commit_all(ws)
    assert recall_json(ws, "Ana")["results"]
    conn = _index(ws)
    with db.write_transaction(conn):
        classic_fts(conn)
    conn.close()


def _rewrite_as_an_older_process(ws, monkeypatch) -> None:
    """The note changes and is re-indexed by a process whose CJK columns are the previous release's
    (FTS_VERSION 2: no words glued to newer emoji): it deletes the old rows with the values it
    derives, not those that were indexed (`ana` in cjk_bi)."""
    with monkeypatch.context() as old:
        old.setattr(fts, "cjk_columns", fts._cjk_columns_v2)
        write(ws, "memory/2025-01-01.md", "# 2025-01-01\n\n## Notes\n\n- quiet evening\n")
        commit_all(ws)
        assert run(["-C", str(ws), "index"]).exit_code == 0


def _doctor(ws) -> list[str]:
    res = run(["-C", str(ws), "doctor"])
    return [line for line in res.stdout.splitlines() if "full-text index" in line]


def test_a_delete_with_other_values_damages_an_old_table_and_doctor_repairs_it(ws, monkeypatch):
    _indexed_in_the_old_form(ws)
    assert _problems(ws) == []
    _rewrite_as_an_older_process(ws, monkeypatch)
    damaged = dict(_problems(ws))
    assert set(damaged) == {"chunks_fts"} and "differ" in damaged["chunks_fts"], damaged
    conn = _index(ws)  # FTS5's own check sees nothing wrong
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
    conn.close()
    lines = _doctor(ws)
    assert any(re.search(r"\[WARN\] full-text index: chunks_fts: \d+ terms? differ from what its rows give; "
                         r"repaired: rebuilt from the stored text \(\d+ rows\)", line) for line in lines), lines
    assert _problems(ws) == []
    if fts.can_delete_by_rowid():  # the tables it rebuilt, and those it converted, delete by rowid now
        assert all(_by_rowid(ws).values())
    assert "quiet evening" in recall_json(ws, "quiet")["results"][0]["snippet"]
    assert recall_json(ws, "Ana")["results"] == []
    assert _doctor(ws) == [f"[ok  ] full-text index: {len(fts.TABLES)} tables hold exactly what their rows give; "
                           + ("rows are deleted by rowid" if fts.can_delete_by_rowid() else
                              f"SQLite {db.sqlite_version()} predates contentless_delete (3.43): rows are deleted by value")]


@needs_rowid_deletes
def test_under_the_new_form_a_delete_is_exact_whatever_the_values(ws, monkeypatch):
    write(ws, "memory/2025-01-01.md", NOTE)
    commit_all(ws)
    assert recall_json(ws, "Ana")["results"]
    assert all(_by_rowid(ws).values())
    _rewrite_as_an_older_process(ws, monkeypatch)
    assert _problems(ws) == []
    assert recall_json(ws, "Ana")["results"] == []


@needs_rowid_deletes
def test_an_old_form_index_is_converted_and_repaired_when_opened(ws, monkeypatch):
    """An index from before schema step contentless_delete_fts (tables that delete by value), already damaged by such a
    delete: the first command of this zmem rebuilds its tables from the stored rows."""
    _indexed_in_the_old_form(ws)
    _rewrite_as_an_older_process(ws, monkeypatch)
    assert _problems(ws)
    conn = _index(ws)
    with db.write_transaction(conn):
        roll_back_schema(conn, "fts_form")
    conn.close()
    assert not any(_by_rowid(ws).values())
    assert "quiet evening" in recall_json(ws, "quiet")["results"][0]["snippet"]
    conn = _index(ws)
    assert db.schema_version(conn) == migrations.SCHEMA_VERSION
    conn.close()
    assert all(_by_rowid(ws).values())
    assert _problems(ws) == []


# --- the stdlib sqlite3 (3.40 here: no contentless_delete) -----------------------------------------


@pytest.fixture
def stdlib_env(tmp_path):
    """The environment of a zmem process that cannot import pysqlite3, so it runs the stdlib sqlite3; the
    test is skipped when that sqlite3 has contentless_delete (nothing old to check then)."""
    blocker = tmp_path / "no-pysqlite3" / "pysqlite3"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('pysqlite3 is hidden by the test')\n")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(blocker.parent), os.environ.get("PYTHONPATH")]))}
    if _stdlib_version(env) >= fts.CONTENTLESS_DELETE:
        pytest.skip("this Python's sqlite3 has contentless_delete")
    return env


def _stdlib_version(env) -> tuple[int, ...]:
    out = zmem_proc("doctor", env=env).stdout
    m = re.search(r"sqlite: (\S+) (\d+)\.(\d+)\.(\d+)", out)
    assert m, out
    assert m.group(1) == "sqlite3", out
    return tuple(int(x) for x in m.groups()[1:])


@pytest.mark.slow
def test_the_stdlib_sqlite_keeps_deleting_by_value_correctly(ws, stdlib_env):
    write(ws, "memory/2025-01-01.md", NOTE)
    commit_all(ws)
    res = zmem_proc("-C", str(ws), "index", "--full", env=stdlib_env)
    assert res.returncode == 0, res.stderr
    assert not any(_by_rowid(ws).values())
    write(ws, "memory/2025-01-01.md", "# 2025-01-01\n\n## Notes\n\n- quiet evening with Bia🥳\n")
    commit_all(ws)
    res = zmem_proc("-C", str(ws), "recall", "Bia", "--json", env=stdlib_env)
    assert res.returncode == 0 and "quiet evening" in res.stdout, res.stderr
    assert _problems(ws) == []
    res = zmem_proc("-C", str(ws), "doctor", env=stdlib_env)
    assert "[ok  ] full-text index: 4 tables hold exactly what their rows give; SQLite 3." in res.stdout
    assert "predates contentless_delete (3.43): rows are deleted by value" in res.stdout


@needs_rowid_deletes
@pytest.mark.slow
def test_an_index_the_stdlib_sqlite_cannot_read_says_so_and_rebuilds(ws, stdlib_env):
    assert recall_json(ws, "gateway")["results"]  # made by pysqlite3: contentless_delete tables
    res = zmem_proc("-C", str(ws), "recall", "gateway", env=stdlib_env)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    first, hint = res.stderr.strip().splitlines()[-2:]
    assert "written with SQLite 3.43 or newer" in first and "cannot read its full-text tables" in first, first
    assert hint.startswith("hint: ") and "zmem index --full" in hint, hint
    res = zmem_proc("-C", str(ws), "index", "--full", env=stdlib_env)
    assert res.returncode == 0, res.stderr
    res = zmem_proc("-C", str(ws), "recall", "gateway", "--json", env=stdlib_env)
    assert res.returncode == 0 and "Mac Studio" in res.stdout, res.stderr
    # back on pysqlite3: doctor turns the tables the stdlib made into ones that delete by rowid
    assert not any(_by_rowid(ws).values())
    lines = _doctor(ws)
    assert len(lines) == 4 and all("made by a SQLite without contentless_delete; rebuilt to delete rows by rowid"
                                   in line and line.startswith("[ok  ]") for line in lines), lines
    assert all(_by_rowid(ws).values()) and _problems(ws) == []


def test_doctor_on_a_read_only_index_reports_without_repairing(ws, monkeypatch):
    _indexed_in_the_old_form(ws)
    _rewrite_as_an_older_process(ws, monkeypatch)
    monkeypatch.setattr(indexer, "write_denied", lambda ws: "no permission to write (the test says so)")
    lines = _doctor(ws)
    assert any(line.startswith("[FAIL] full-text index: chunks_fts: ") and "not repaired: no permission" in line
               for line in lines), lines
    assert dict(_problems(ws))
