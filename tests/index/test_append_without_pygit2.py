"""`zmem append` is a fresh process per note: its checks, its commit and the catch-up after it ask
the git command (gitstatus.CommandRepo), never pygit2, whose import alone cost ~1/3 of its CPU. What
it commits and indexes is what it did with pygit2 (tests/index/test_append*.py hold the cases)."""
from __future__ import annotations

from helpers.fresh import fresh
from helpers.workspace import git, recall_json, write
from zmem.git.gitstatus import open_command_repo
from zmem.git.repo import open_repo


def test_a_fresh_append_commits_and_indexes_without_pygit2(ws):
    report, proc = fresh("-C", str(ws), "append", "The okapi moved to the north enclosure")
    assert report["code"] in (None, 0), proc.stderr
    assert "pygit2" not in report["modules"] and "zmem.git.repo" not in report["modules"]
    assert "committed" in proc.stdout
    assert git(ws, "status", "--porcelain") == ""
    assert git(ws, "log", "-1", "--format=%s").startswith("zmem append: memory/")
    assert recall_json(ws, "okapi")["results"]


def test_a_fresh_append_leaves_other_staged_work_staged(ws):
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- staged, not for this commit\n")
    git(ws, "add", "memory/2025-11-24.md")
    report, proc = fresh("-C", str(ws), "append", "Only this note is committed")
    assert report["code"] in (None, 0), proc.stderr
    assert "memory/2025-11-24.md" not in git(ws, "show", "--name-only", "--format=", "HEAD")
    assert git(ws, "diff", "--cached", "--name-only").split() == ["memory/2025-11-24.md"]


def test_the_command_repo_answers_as_pygit2_does(ws):
    """Every question the append and the catch-up ask, both ways, on the states they meet."""
    write(ws, "memory/new.md", "# new\n")
    write(ws, "memory/staged.md", "# staged\n")
    git(ws, "add", "memory/staged.md")
    (ws / ".gitignore").write_text(".zmem/\nmemory/ignored.md\n")
    old = git(ws, "rev-parse", "HEAD")
    write(ws, "memory/2025-11-24.md", "# changed\n")
    git(ws, "commit", "-q", "-am", "change")
    new = git(ws, "rev-parse", "HEAD")
    command, library = open_command_repo(ws), open_repo(ws)
    assert type(command).__name__ == "CommandRepo"
    paths = ["memory/2025-11-24.md", "memory/new.md", "memory/staged.md", "memory/ignored.md", "memory/none.md",
             "memory/[a-z]*.md"]
    for rel in paths:
        for question in ("in_index", "in_head", "in_conflict", "is_ignored"):
            assert getattr(command, question)(rel) == getattr(library, question)(rel), (question, rel)
    assert command.changed_paths(old, new) == library.changed_paths(old, new)
    assert command.has_commit(old) and not command.has_commit("0" * 40)
    assert (command.git_dir(), command.common_dir()) == (library.git_dir(), library.common_dir())
    assert command.head_is_detached() is library.head_is_detached() is False
    git(ws, "checkout", "-q", "--detach")
    assert open_command_repo(ws).head_is_detached() is True
