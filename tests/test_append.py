"""`zmem append` against the repository's state: merges, rebases, detached HEAD, ignored files,
a missing git, huge notes, CRLF files, file modes."""
from __future__ import annotations

import datetime as dt
import json
import os
import stat

import pytest

from conftest import commit_all, git, run, write
from zmem.append import insert_entry


def _today() -> str:
    return f"memory/{dt.date.today().isoformat()}.md"


def _refused(res, message: str) -> None:
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith("zmem: ") and message in res.stderr and "hint:" in res.stderr, res.stderr
    assert "Traceback" not in res.output


def test_refuses_during_a_merge_with_the_log_in_conflict(ws):
    write(ws, _today(), f"# {dt.date.today()}\n\n## Notes\n\n- base\n")
    commit_all(ws, "base")
    git(ws, "switch", "-q", "-c", "other")
    write(ws, _today(), f"# {dt.date.today()}\n\n## Notes\n\n- theirs\n")
    commit_all(ws, "theirs")
    git(ws, "switch", "-q", "main")
    write(ws, _today(), f"# {dt.date.today()}\n\n## Notes\n\n- ours\n")
    commit_all(ws, "ours")
    git(ws, "merge", "other", check=False)
    conflicted = (ws / _today()).read_text()
    assert "<<<<<<<" in conflicted
    res = run(["-C", str(ws), "append", "during the merge"])
    _refused(res, "a merge is in progress")
    assert "git merge --abort" in res.stderr and "not written" in res.stderr
    assert (ws / _today()).read_text() == conflicted
    assert git(ws, "diff", "--name-only", "--diff-filter=U") == _today()  # still unresolved


def test_refuses_during_a_rebase_in_a_linked_worktree_only(ws, tmp_path):
    wt = tmp_path / "wt"
    git(ws, "worktree", "add", "-q", "-b", "side", str(wt))
    commit_all(wt, "one more")
    git(wt, "rebase", "-x", "false", "HEAD~1", check=False)  # stops with the rebase in progress
    head = git(wt, "rev-parse", "HEAD")
    _refused(run(["-C", str(wt), "append", "during the rebase"]), "a rebase is in progress")
    assert not (wt / _today()).exists() and git(wt, "rev-parse", "HEAD") == head
    # the rebase belongs to the other worktree: here appending works
    assert run(["-C", str(ws), "append", "in the main worktree"]).exit_code == 0


def test_refuses_a_log_left_in_conflict_by_stash_pop(ws):
    assert run(["-C", str(ws), "append", "first"]).exit_code == 0
    (ws / _today()).write_text((ws / _today()).read_text() + "- stashed\n")
    git(ws, "stash", "-q")
    assert run(["-C", str(ws), "append", "second"]).exit_code == 0
    git(ws, "stash", "pop", check=False)  # a conflict, and no MERGE_HEAD
    before = (ws / _today()).read_text()
    _refused(run(["-C", str(ws), "append", "third"]), f"{_today()} has unresolved conflicts")
    assert (ws / _today()).read_text() == before


def test_detached_head_commits_with_a_warning(ws):
    git(ws, "switch", "-q", "--detach")
    res = run(["-C", str(ws), "append", "on a detached head", "--json"])
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and out["committed"]
    assert f"committed at {out['commit'][:10]} on no branch" in res.stderr
    assert git(ws, "rev-parse", "HEAD") == out["commit"]


def test_git_missing_from_path_writes_nothing(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    _refused(run(["-C", str(ws), "append", "no git"]), "git is not on PATH")
    assert not (ws / _today()).exists()


def test_a_huge_note_from_stdin_is_committed(ws):
    res = run(["-C", str(ws), "append", "-", "--json"], input="y" * 4_000_000)
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["committed"]
    assert git(ws, "log", "-1", "--format=%s") == f"zmem append: {_today()}"
    assert git(ws, "status", "--porcelain") == ""


def test_todays_log_as_a_directory_is_an_error(ws):
    (ws / _today()).mkdir(parents=True)
    _refused(run(["-C", str(ws), "append", "x"]), f"{_today()} is a directory")


def test_crlf_log_keeps_its_line_endings(ws):
    old = f"# {dt.date.today()}\r\n\r\n## Notes\r\n\r\n- one\r\n\r\n## Retain\r\n\r\n- W @Ana: likes tea\r\n"
    (ws / _today()).write_bytes(old.encode())
    commit_all(ws)
    assert run(["-C", str(ws), "append", "two\nlines"]).exit_code == 0
    assert (ws / _today()).read_bytes().decode() == old.replace("- one\r\n", "- one\r\n- two\r\n  lines\r\n")


@pytest.mark.parametrize("content, expected", [
    ("# d\r\n", "# d\r\n\r\n## Notes\r\n\r\n- x\r\n"),
    ("# d\r\n\r\n## Retain\r\n\r\n- W: y", "# d\r\n\r\n## Notes\r\n\r\n- x\r\n\r\n## Retain\r\n\r\n- W: y\r\n"),
    ("# d\n\n## Notes\r\n\n- a", "# d\n\n## Notes\r\n\n- a\n- x\n"),  # mixed: existing lines untouched
    ("", "# d\n\n## Notes\n\n- x\n"),
])
def test_insert_entry_line_endings(content, expected):
    new, line = insert_entry(content, "- x\n", "d", retain=False)
    assert new == expected and new.split("\n")[line - 1].rstrip("\r") == "- x"


def test_new_log_gets_the_umask_mode_and_an_existing_one_keeps_its_mode(ws):
    old = os.umask(0o027)
    try:
        assert run(["-C", str(ws), "append", "new file"]).exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((ws / _today()).stat().st_mode) == 0o640
    os.chmod(ws / _today(), 0o604)
    assert run(["-C", str(ws), "append", "again"]).exit_code == 0
    assert stat.S_IMODE((ws / _today()).stat().st_mode) == 0o604


def test_ignored_memory_dir_says_so(ws):
    write(ws, ".gitignore", "memory/\n")
    commit_all(ws, "ignore memory")
    res = run(["-C", str(ws), "append", "ignored note", "--json"])
    assert res.exit_code == 0 and not json.loads(res.stdout)["committed"]
    assert f"{_today()} is ignored by git (.gitignore), so it was written but neither committed nor indexed" in res.stderr
    assert "un-ignore memory/" in res.stderr and "advice.addIgnoredFile" not in res.stderr
    assert "- ignored note" in (ws / _today()).read_text()


def test_state_dir_that_is_a_file_is_a_clear_error(ws):
    import shutil
    shutil.rmtree(ws / ".zmem")
    (ws / ".zmem").write_text("not a directory\n")
    res = run(["-C", str(ws), "append", "a note"])
    assert res.exit_code == 1 and "is not a directory" in res.stderr and "hint:" in res.stderr
