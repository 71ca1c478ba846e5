"""The cheap freshness check never lets a note slip by: a note written while a catch-up waits for
the lock or lists a directory, a note that could not be read once, a directory whose mtime was
put back. Real repositories, the real CLI (in-process and as processes)."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.workspace import indexed_paths, recall_json, roll_back_schema, run, wait_for, write, zmem_exe
from zmem.store import db
from zmem.store import migrations


def _has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def memory_on_disk(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in (root / "memory").rglob("*.md")}


def memory_indexed(root: Path) -> set[str]:
    return {p for p in indexed_paths(root) if p.startswith("memory/")}


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the process wait for the lock")
@pytest.mark.slow
def test_a_note_written_while_a_catch_up_waits_for_the_lock_is_indexed_next_time(ws):
    assert recall_json(ws, "gateway")["results"]
    lock_path = ws / ".zmem" / "lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another writer is busy
    try:
        write(ws, "memory/2026-01-01.md", "# 2026-01-01\n\n- first note about apples\n")
        proc = subprocess.Popen([zmem_exe(), "-C", str(ws), "recall", "apples", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # it has checked the files and now waits for the lock
        wait_for(lambda: _has_open(proc.pid, lock_path) or proc.poll() is not None, 30, interval=0.01)
        assert proc.poll() is None, proc.communicate()
        write(ws, "memory/2026-01-02.md", "# 2026-01-02\n\n- second note about bananas\n")
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    first = json.loads(out)
    assert first["results"] and first["results"][0]["path"] == "memory/2026-01-01.md" and not first["stale"]
    second = recall_json(ws, "bananas")
    assert [h["path"] for h in second["results"]] == ["memory/2026-01-02.md"] and not second["stale"]
    assert memory_indexed(ws) == memory_on_disk(ws)


@pytest.mark.slow
def test_notes_written_during_a_stream_of_catch_ups_are_all_indexed(ws):
    """A writer makes new notes while catch-ups run, a burst in one directory after another: what a
    catch-up's listing of a directory missed, its snapshot must not vouch for (a later note in the
    same directory would hide the loss; the last ones of each burst have none)."""
    for d in range(30):
        (ws / "memory" / f"d{d:02d}").mkdir()
    assert recall_json(ws, "gateway")["results"]
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\n"
        "for d in range(30):\n"
        "    for i in range(10):\n"
        "        open(f'{sys.argv[1]}/memory/d{d:02d}/2026-02-{i:02d}.md', 'w').write(f'# n\\n\\n- note w{d}x{i}\\n')\n"
        "        time.sleep(0.003)\n"), str(ws)])
    from zmem.index.catchup import catch_up
    from zmem.workspace.core import find_workspace
    w = find_workspace(ws)
    while writer.poll() is None:
        catch_up(w)
    assert writer.returncode == 0
    recall_json(ws, "anything")  # one catch-up after the writer is done
    assert len(memory_on_disk(ws)) == 302
    assert memory_indexed(ws) == memory_on_disk(ws)


@pytest.mark.slow
def test_a_new_note_in_a_directory_whose_mtime_was_put_back_is_seen(ws):
    """tar, rsync -a and unzip restore a directory's mtime after adding entries; its ctime moves."""
    time.sleep(2.1)  # past the window in which a directory's recent signature is not trusted anyway
    assert recall_json(ws, "gateway")["results"]
    memory = ws / "memory"
    st = memory.stat()
    write(ws, "memory/2025-12-24.md", "# 2025-12-24\n\n- restored note about lanterns\n")
    os.utime(memory, ns=(st.st_atime_ns, st.st_mtime_ns))  # touch -r
    assert memory.stat().st_mtime_ns == st.st_mtime_ns
    out = recall_json(ws, "lanterns")
    assert [h["path"] for h in out["results"]] == ["memory/2025-12-24.md"] and not out["stale"]


def test_an_index_from_before_directory_ctimes_keeps_working_and_finds_what_it_lost(ws):
    """Upgrade: before step dir_ctime dirs had no ctime_ns. The migration neither fails nor re-reads every note;
    every memory directory is listed again once, which also recovers a note the old check lost."""
    assert recall_json(ws, "gateway")["results"]
    from zmem.index.catchup import _remove_file
    from zmem.store.vectors import VectorStore
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    with db.write_transaction(conn):
        conn.execute("ALTER TABLE dirs DROP COLUMN ctime_ns")
        _remove_file(conn, "memory/2025-11-24.md", VectorStore(conn))  # lost by the old check
        roll_back_schema(conn, "fts_words_against_cjk")
    fingerprint = db.get_meta(conn, "fingerprint")
    conn.close()
    res = run(["-C", str(ws), "index", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["updated"] == ["memory/2025-11-24.md"]  # only the lost note is read
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    try:
        assert db.schema_version(conn) == migrations.SCHEMA_VERSION
        assert db.get_meta(conn, "fingerprint") == fingerprint
        assert conn.execute("SELECT count(*) FROM dirs WHERE ctime_ns = 0").fetchone()[0] == 0
    finally:
        conn.close()
    assert recall_json(ws, "gateway")["results"]
    assert json.loads(run(["-C", str(ws), "index", "--json"]).stdout)["updated"] == []


# --- a note that cannot be read ------------------------------------------------------------------
@pytest.mark.slow
def test_a_note_that_could_not_be_read_once_is_indexed_when_it_can_be_again(unprivileged):
    root, as_user = unprivileged

    def recall(query) -> dict:
        return json.loads(as_user(zmem_exe(), "-C", str(root), "recall", query, "--json").stdout)
    note = root / "memory" / "2025-12-01.md"
    as_user(sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write('# d\\n\\n- the quince orchard\\n')",
            str(note))
    as_user("git", "-C", str(root), "add", "-A")
    as_user("git", "-C", str(root), "commit", "-qm", "notes")
    assert recall("quince")["results"]

    os.chmod(note, 0)  # e.g. a sync tool's temporary permissions
    out = recall("quince")
    assert out["results"] == [] and any("2025-12-01.md" in w and "cannot read" in w for w in out["warnings"])
    again = recall("orchard")  # nothing changed since: the index still says why the note is missing
    assert any("2025-12-01.md" in w and "cannot read" in w for w in again["warnings"])

    os.chmod(note, 0o644)
    out = recall("quince")
    assert [h["path"] for h in out["results"]] == ["memory/2025-12-01.md"] and not out["stale"]
    assert not any("cannot read" in w for w in out["warnings"])
    status = json.loads(as_user(zmem_exe(), "-C", str(root), "status", "--json").stdout)
    assert not status["stale"] and not any("cannot read" in w for w in status["file_warnings"])


@pytest.mark.slow
def test_a_new_note_that_cannot_be_read_yet_is_indexed_once_it_can(unprivileged):
    root, as_user = unprivileged
    assert as_user(zmem_exe(), "-C", str(root), "recall", "x", "--json").returncode == 0
    note = root / "memory" / "2025-12-02.md"
    as_user(sys.executable, "-c", "import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0); "
            "os.write(fd, b'# d\\n\\n- the medlar tree\\n')", str(note))
    out = json.loads(as_user(zmem_exe(), "-C", str(root), "recall", "medlar", "--json").stdout)
    assert out["results"] == [] and any("cannot read" in w for w in out["warnings"])
    os.chmod(note, 0o600)  # nobody owns it
    out = json.loads(as_user(zmem_exe(), "-C", str(root), "recall", "medlar", "--json").stdout)
    assert [h["path"] for h in out["results"]] == ["memory/2025-12-02.md"] and not out["stale"]
