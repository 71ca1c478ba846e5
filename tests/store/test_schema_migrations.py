"""Schema migrations as named steps (migrations.STEPS): each recorded by name in _migrations in the
transaction that applies it, user_version kept as the number of steps (what an older zmem reads),
an index an older zmem wrote (user_version N: steps 1..N) brought up to date without running a step
again, and a newer index refused."""
from __future__ import annotations

import dataclasses

import pytest
from helpers.workspace import commit_all, roll_back_schema, run, write

from zmem.store import db
from zmem.store import migrations
from zmem.errors import IndexUnusable

NAMES = [s.name for s in migrations.STEPS]


def _schema(conn) -> list[tuple]:
    return sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))


def _recorded(conn) -> list[tuple[str, bool]]:
    """(name, whether its time is known) in the order the steps were recorded."""
    return [(name, applied_at is not None)
            for name, applied_at in conn.execute("SELECT name, applied_at FROM _migrations ORDER BY rowid")]


def _as_an_older_zmem(path, steps: int):
    """An index as a zmem that knew the first `steps` steps left it: applied one transaction each,
    recorded in user_version only."""
    conn = db.connect(path)
    for position, step in enumerate(migrations.STEPS[:steps], 1):
        with db.write_transaction(conn):
            step.apply(conn)
            conn.execute(f"PRAGMA user_version = {position}")
    return conn


def _counting_steps(monkeypatch) -> list[str]:
    """The names of the steps applied from here on, in order (the steps still run)."""
    applied: list[str] = []

    def counted(step):
        def apply(conn):
            applied.append(step.name)
            step.apply(conn)
        return dataclasses.replace(step, apply=apply)
    monkeypatch.setattr(migrations, "STEPS", [counted(s) for s in migrations.STEPS])
    return applied


def test_a_fresh_index_records_every_step_by_name(ws):
    write(ws, "memory/2025-01-01.md", "# 2025-01-01\n\n- lunch with Ana\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index"]).exit_code == 0
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    try:
        assert _recorded(conn) == [(name, True) for name in NAMES]
        assert db.schema_version(conn) == migrations.SCHEMA_VERSION == len(NAMES)
        assert len(set(NAMES)) == len(NAMES)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def fresh_schema(tmp_path_factory):
    conn = db.connect(tmp_path_factory.mktemp("fresh") / "index.sqlite")
    migrations.migrate(conn)
    try:
        return _schema(conn), _recorded(conn)
    finally:
        conn.close()


@pytest.mark.parametrize("steps", range(len(NAMES) + 1))
def test_an_index_an_older_zmem_wrote_migrates_to_the_schema_of_a_fresh_one(tmp_path, monkeypatch, fresh_schema,
                                                                           steps):
    conn = _as_an_older_zmem(tmp_path / "index.sqlite", steps)
    applied = _counting_steps(monkeypatch)
    migrations.migrate(conn)
    assert applied == NAMES[steps:]  # each step not applied yet, once, in order
    schema, recorded = fresh_schema
    assert _schema(conn) == schema
    # the steps the older zmem applied are named, their time unknown
    assert _recorded(conn) == [(name, i >= steps) for i, (name, _) in enumerate(recorded)]
    assert db.schema_version(conn) == migrations.SCHEMA_VERSION
    applied.clear()
    migrations.migrate(conn)
    assert applied == []
    conn.close()


@pytest.mark.parametrize("steps", range(1, len(NAMES)))
def test_an_index_a_zmem_with_fewer_named_steps_wrote_runs_only_the_later_ones(tmp_path, monkeypatch, steps):
    with monkeypatch.context() as older:  # a zmem with named steps that knew only the first `steps`
        older.setattr(migrations, "STEPS", migrations.STEPS[:steps])
        older.setattr(migrations, "SCHEMA_VERSION", steps)
        conn = db.connect(tmp_path / "index.sqlite")
        migrations.migrate(conn)
    assert [name for name, _ in _recorded(conn)] == NAMES[:steps] and db.schema_version(conn) == steps
    applied = _counting_steps(monkeypatch)
    migrations.migrate(conn)
    assert applied == NAMES[steps:]
    assert _recorded(conn) == [(name, True) for name in NAMES] and db.schema_version(conn) == migrations.SCHEMA_VERSION
    conn.close()


def test_steps_an_older_zmem_took_by_number_after_ours_are_not_run_again(tmp_path, monkeypatch):
    """This zmem recorded the steps up to fts_form, then a zmem before named steps (still running
    somewhere) took the rest and set user_version: nothing runs again; the record catches up."""
    conn = db.connect(tmp_path / "index.sqlite")
    migrations.migrate(conn)
    with db.write_transaction(conn):
        roll_back_schema(conn, "fts_form", recorded=True)
        conn.execute(f"PRAGMA user_version = {migrations.SCHEMA_VERSION}")
    applied = _counting_steps(monkeypatch)
    migrations.migrate(conn)
    assert applied == []
    assert [name for name, _ in _recorded(conn)] == NAMES
    conn.close()


def test_a_snapshot_only_step_keeps_the_notes_schema():
    """NOTES_SCHEMA (in the index fingerprint) is the position of the last step that changes what
    notes derive to; the steps after fts_glued_words only changed the freshness snapshot or the
    history and session rows in place."""
    assert migrations.NOTES_SCHEMA == NAMES.index("fts_glued_words") + 1
    assert all(s.snapshot_only for s in migrations.STEPS[migrations.NOTES_SCHEMA:])


@pytest.mark.parametrize("newer", ["step", "user_version"])
def test_an_index_a_newer_zmem_wrote_is_refused(ws, newer):
    write(ws, "memory/2025-01-01.md", "# 2025-01-01\n\n- lunch with Ana\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index"]).exit_code == 0
    path = ws / ".zmem" / "index.sqlite"
    conn = db.connect(path)
    with db.write_transaction(conn):
        if newer == "step":  # a step this zmem does not know, however many it counts
            conn.execute("INSERT INTO _migrations(name, applied_at) VALUES('a_future_step', datetime('now'))")
        else:
            conn.execute(f"PRAGMA user_version = {migrations.SCHEMA_VERSION + 1}")
    schema = _schema(conn)
    conn.close()
    res = run(["-C", str(ws), "recall", "Ana"])
    assert res.exit_code == 1, res.output
    assert "the index was written by a newer zmem" in res.stderr and "hint: upgrade zmem" in res.stderr
    assert ("a_future_step" in res.stderr) == (newer == "step")
    assert "Traceback" not in res.output
    with pytest.raises(IndexUnusable, match="newer zmem"):  # read-only, too
        migrations.connect_readonly_index(path, "a read-only file system", hint="h")
    conn = db.connect(path)
    assert _schema(conn) == schema  # left as it was
    conn.close()
    assert run(["-C", str(ws), "index", "--full"]).exit_code == 0  # the hint's way out
    assert run(["-C", str(ws), "recall", "Ana"]).exit_code == 0


def test_an_older_zmem_refuses_this_zmems_index_by_its_user_version(tmp_path, monkeypatch):
    """A zmem before named steps reads only user_version (no _migrations): this zmem's index counts
    more steps than one that knows fewer, which refuses it."""
    conn = db.connect(tmp_path / "index.sqlite")
    migrations.migrate(conn)
    with db.write_transaction(conn):
        conn.execute("DROP TABLE _migrations")  # what such a zmem cannot see
    monkeypatch.setattr(migrations, "STEPS", migrations.STEPS[:-1])
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", len(migrations.STEPS))
    with pytest.raises(IndexUnusable, match=rf"newer zmem \(schema {len(NAMES)}; this zmem knows {len(NAMES) - 1}\)"):
        migrations.migrate(conn)
    conn.close()
