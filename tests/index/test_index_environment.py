"""The index's environment gone wrong — a read-only workspace, .zmem closed to us, a full disk or a
file size limit, a directory where .zmem keeps a file, a note nobody may read — gets an answer
from the index as it is (said to be stale when it may be) or one `zmem: …` line with a hint that
helps (never `zmem index --full` when that would fail the same way), and loses nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.workspace import recall_json, run, still_works, zmem_exe, zmem_proc


def _chmod_tree(root: Path, writable: bool) -> None:
    for d, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            p = Path(d) / name
            if not p.is_symlink():
                mode = p.stat().st_mode
                os.chmod(p, (mode | 0o200) if writable else (mode & ~0o222))
    mode = root.stat().st_mode
    os.chmod(root, (mode | 0o200) if writable else (mode & ~0o222))


def _error_lines(err: str) -> tuple[str, str]:
    lines = [ln for ln in err.splitlines() if not ln.startswith("warning:")]
    assert len(lines) == 2 and lines[0].startswith("zmem: ") and lines[1].startswith("hint: "), err
    return lines[0], lines[1]


# --- 2: a read-only workspace --------------------------------------------------------------------

@pytest.mark.slow
def test_a_read_only_workspace_is_answered_from_its_index_and_says_when_it_may_be_stale(unprivileged):
    root, as_user = unprivileged
    zmem = zmem_exe()
    note = root / "memory" / "2025-12-01.md"
    as_user(sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write("
            "'# d\\n\\n- the quince orchard\\n\\n## Retain\\n\\n- W @Peter likes quince\\n')", str(note))
    as_user("git", "-C", str(root), "add", "-A")
    as_user("git", "-C", str(root), "commit", "-qm", "notes")
    assert json.loads(as_user(zmem, "-C", str(root), "recall", "quince", "--json").stdout)["results"]
    try:
        _chmod_tree(root, writable=False)  # chmod -R a-w: every ctime moves, no content does

        out = json.loads(as_user(zmem, "-C", str(root), "recall", "quince", "--json").stdout)
        # (both of the note's quince lines: a chunk holding two answers gives two hits)
        assert {h["path"] for h in out["results"]} == {"memory/2025-12-01.md"} and not out["stale"], out
        for argv in (["facts"], ["status", "--json"], ["entity", "Peter"], ["blame", "memory/2025-12-01.md"],
                     ["log", "memory/2025-12-01.md"], ["doctor"]):
            proc = as_user(zmem, "-C", str(root), *argv, check=False)
            assert proc.returncode == 0 and "Traceback" not in proc.stderr, (argv, proc.stderr)
        assert "likes quince" in as_user(zmem, "-C", str(root), "facts").stdout
        assert not json.loads(as_user(zmem, "-C", str(root), "status", "--json").stdout)["stale"]

        os.chmod(note, 0o644)  # the owner of the notes (root here) edits one; zmem still cannot write
        note.write_text(note.read_text() + "- the medlar tree\n")
        os.chmod(note, 0o444)
        proc = as_user(zmem, "-C", str(root), "recall", "quince", "--json")
        out = json.loads(proc.stdout)
        assert out["stale"] and out["results"], out
        warning = next(w for w in out["warnings"] if "could not be updated" in w)
        assert "permission" in warning and ".zmem" in warning, warning
        assert json.loads(as_user(zmem, "-C", str(root), "status", "--json").stdout)["stale"]
        proc = as_user(zmem, "-C", str(root), "index", check=False)
        assert proc.returncode == 1 and "NOT brought up to date" in proc.stdout, proc.stdout + proc.stderr
        message, hint = proc.stderr.splitlines()[-2:]
        assert message.startswith("zmem: the index could not be brought up to date") and hint.startswith("hint: ")

        proc = as_user(zmem, "-C", str(root), "index", "--full", check=False)
        assert proc.returncode == 1, proc.stderr
        message, hint = _error_lines(proc.stderr)
        assert "permission" in message and "index --full" not in hint and "write access" in hint, proc.stderr

        proc = as_user(zmem, "-C", str(root), "recall", "quince", "--as-of", "HEAD", check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        _error_lines(proc.stderr)
    finally:
        _chmod_tree(root, writable=True)
    out = json.loads(as_user(zmem, "-C", str(root), "recall", "medlar", "--json").stdout)
    assert out["results"] and not out["stale"]  # writable again: caught up


@pytest.mark.slow
def test_a_read_only_workspace_without_an_index_is_a_clear_error(unprivileged):
    root, as_user = unprivileged
    subprocess.run(["rm", "-rf", str(root / ".zmem")], check=True)
    try:
        _chmod_tree(root, writable=False)
        for argv in (["recall", "x"], ["status"], ["index", "--full"]):
            proc = as_user(zmem_exe(), "-C", str(root), *argv, check=False)
            assert proc.returncode == 1, (argv, proc.stderr)
            message, hint = _error_lines(proc.stderr)
            assert "Permission denied" in message and ".zmem" in message, proc.stderr
            assert "write access" in hint and "index --full" not in hint, proc.stderr
    finally:
        _chmod_tree(root, writable=True)


# --- 3: errors that name their cause, hints that help ------------------------------------------

@pytest.mark.slow
def test_a_zmem_directory_closed_to_us_is_named_as_the_problem(unprivileged):
    root, as_user = unprivileged
    as_user(zmem_exe(), "-C", str(root), "recall", "x")
    os.chmod(root / ".zmem", 0)
    try:
        for argv in (["recall", "x"], ["index", "--full"], ["append", "a note"]):
            proc = as_user(zmem_exe(), "-C", str(root), *argv, check=False)
            assert proc.returncode == 1, (argv, proc.stderr)
            message, hint = _error_lines(proc.stderr)
            assert message.startswith(f"zmem: cannot use {root / '.zmem'}") and "Permission denied" in message
            assert f"chmod u+rwx {root / '.zmem'}" in hint and "workspace directory" not in hint, proc.stderr
    finally:
        os.chmod(root / ".zmem", 0o755)
    assert not list((root / "memory").glob("*.md")), "the append must not have written its note"


@pytest.mark.slow
def test_a_rebuild_past_the_file_size_limit_names_the_limit_and_keeps_the_old_index(ws):
    assert zmem_proc("index", "--full", "--no-embed", cwd=ws).returncode == 0
    before = recall_json(ws, "gateway")["results"]
    proc = subprocess.run(["bash", "-c", f"ulimit -f 100; exec {zmem_exe()} index --full --no-embed"], cwd=ws,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    message, hint = _error_lines(proc.stderr)
    assert "file size limit" in message and "ulimit -f" in message and "no transaction" not in message
    assert "ulimit -f unlimited" in hint and "index --full" not in hint
    assert not list((ws / ".zmem").glob("index.sqlite.rebuild-*"))
    assert recall_json(ws, "gateway")["results"] == before


def test_a_rebuild_that_fails_for_an_unknown_reason_does_not_suggest_itself(ws, monkeypatch):
    from zmem.index import catchup as indexer

    def broken(*a, **k):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(indexer, "_swap_in", broken)
    res = run(["-C", str(ws), "index", "--full", "--no-embed"])
    assert res.exit_code == 1
    message, hint = _error_lines(res.stderr)
    assert "Input/output error" in message and "unchanged" in message
    assert "index --full" not in hint and "index.sqlite" in hint


# --- 4: a directory where .zmem keeps a file -----------------------------------------------------

@pytest.mark.parametrize("name", ["index.sqlite", "index.sqlite-wal", "index.sqlite-journal", "lock"])
@pytest.mark.slow
def test_a_directory_in_place_of_a_state_file_is_named_with_a_fix(ws, name):
    assert zmem_proc("recall", "gateway", cwd=ws).returncode == 0
    target = ws / ".zmem" / name
    if target.exists():
        target.unlink()
    target.mkdir()
    (ws / "memory" / "2025-12-09.md").write_text("# d\n\n- the pangolin\n")  # something to catch up on
    for argv in (["recall", "gateway"], ["index"], ["index", "--full"], ["status"], ["append", "a note"]):
        proc = zmem_proc(*argv, cwd=ws)
        assert proc.returncode == 1, (argv, proc.returncode, proc.stderr)
        message, hint = _error_lines(proc.stderr)
        assert str(target) in message and "directory" in message, proc.stderr
        assert f"rm -r {target}" in hint and "index --full" not in hint, proc.stderr
    assert "a note" not in "".join(p.read_text() for p in (ws / "memory").glob("*.md")), "append must not write"
    target.rmdir()
    assert recall_json(ws, "pangolin")["results"]


# --- 5: status and an unreadable uncommitted note ------------------------------------------------

@pytest.mark.slow
def test_status_agrees_with_catch_up_about_a_note_it_cannot_read(unprivileged):
    root, as_user = unprivileged
    note = root / "memory" / "2025-12-02.md"
    as_user(sys.executable, "-c", "import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0); "
            "os.write(fd, b'# d\\n\\n- the medlar tree\\n')", str(note))
    out = json.loads(as_user(zmem_exe(), "-C", str(root), "recall", "medlar", "--json").stdout)
    assert any("cannot read" in w for w in out["warnings"]) and not out["stale"]
    status = json.loads(as_user(zmem_exe(), "-C", str(root), "status", "--json").stdout)
    assert not status["stale"], status
    assert any("2025-12-02.md" in w and "cannot read" in w for w in status["file_warnings"])
    os.chmod(note, 0o600)  # readable again (nobody owns it): its stat changed, so it is due again
    status = json.loads(as_user(zmem_exe(), "-C", str(root), "status", "--json").stdout)
    assert status["stale"]


def test_state_dir_that_is_a_file_is_a_clear_error(ws):
    import shutil
    shutil.rmtree(ws / ".zmem", ignore_errors=True)
    (ws / ".zmem").write_text("not a directory\n")
    for args in (["recall", "Mac"], ["index"], ["status"]):
        res = run(["-C", str(ws), *args])
        assert res.exit_code == 1 and ".zmem" in res.stderr and "move it aside" in res.stderr, (args, res.output)
    (ws / ".zmem").unlink()
    still_works(ws)
