"""store.impact's state key on a real index: a catch-up that only re-stats files (a `touch`, the
re-check after a hook's catch-up) keeps it, so a watcher's lists hold; any change of the notes'
rows, and a rebuild into a new file (`zmem index --full`), moves it."""
from __future__ import annotations

import os

from helpers.workspace import run, write
from zmem.memory import Memory
from zmem.store import db, impact


def _key(root) -> str:
    conn = db.connect(root / ".zmem" / "index.sqlite", readonly=True)
    try:
        return impact.state_key(conn)
    finally:
        conn.close()


def _snapshot(root) -> str:
    conn = db.connect(root / ".zmem" / "index.sqlite", readonly=True)
    try:
        return db.get_meta(conn, "snapshot_ns")
    finally:
        conn.close()


def _catch_up(root) -> None:
    with Memory.open(root) as mem:
        mem.catch_up()


def test_a_restat_keeps_the_state_and_a_change_of_the_notes_moves_it(ws):
    _catch_up(ws)
    key, taken = _key(ws), _snapshot(ws)
    note = ws / "memory" / "2025-11-24.md"
    st = note.stat()
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # same content, new mtime
    _catch_up(ws)
    assert _snapshot(ws) != taken  # the catch-up recorded the new stat signature
    assert _key(ws) == key
    write(ws, "memory/2025-11-24.md", note.read_text() + "- The gateway restarts nightly.\n")
    _catch_up(ws)
    edited = _key(ws)
    assert edited != key
    (ws / "memory" / "2025-11-27.md").unlink()  # only deletes: the averages' row count moves
    _catch_up(ws)
    assert _key(ws) != edited


def test_a_rebuild_is_a_new_index_file_with_a_new_id(ws):
    _catch_up(ws)
    key = _key(ws)
    res = run(["-C", str(ws), "index", "--full", "-q"])
    assert res.exit_code == 0, res.output
    rebuilt = _key(ws)
    assert rebuilt.split(".")[0] != key.split(".")[0]  # the id: the same notes may give the same sequence and counts
