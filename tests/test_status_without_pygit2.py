"""`zmem status` reads HEAD and the uncommitted paths from `git status` instead of pygit2 (whose
import alone costs a fresh process ~100 ms): the same answers as pygit2's, and no pygit2 loaded."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.fresh import fresh
from helpers.workspace import commit_all, git, run, write
from zmem.git.gitstatus import worktree_status
from zmem.git.repo import open_repo



def pygit2_says(root: Path):
    repo = open_repo(root)
    return repo.head(), repo.dirty_paths(), repo.is_shallow()


def test_the_same_head_and_uncommitted_paths_as_pygit2(tmp_path):
    top = tmp_path / "repo"
    ws = top / "notes ws"  # a workspace in a subdirectory of the repository, with a space
    top.mkdir()
    git(top, "init", "-q")
    assert run(["init", "--no-hooks", str(ws)]).exit_code == 0
    status = worktree_status(ws)
    assert (status.head, status.dirty, status.shallow) == pygit2_says(ws)  # no commits yet
    for name in ("a.md", "b.md", "João café.md", "gone.md", "old name.md", "conflict.md"):
        write(ws, f"memory/{name}", f"- {name}\n")
    write(top, "outside.md", "- not in the workspace\n")
    commit_all(top)
    write(ws, "memory/a.md", "- changed\n")  # modified
    write(ws, "memory/new dir/c.md", "- untracked in a new directory\n")
    (ws / "memory/gone.md").unlink()  # deleted
    git(ws, "mv", "memory/old name.md", "memory/new name.md")  # a staged rename: both names
    write(ws, "memory/João café.md", "- staged\n")
    git(ws, "add", "memory/João café.md")
    write(top, "outside.md", "- changed outside the workspace\n")
    status = worktree_status(ws)
    assert (status.head, status.dirty, status.shallow) == pygit2_says(ws)
    assert {"memory/a.md", "memory/new dir/c.md", "memory/gone.md", "memory/old name.md", "memory/new name.md",
            "memory/João café.md"} <= status.dirty


def fresh_modules(*args) -> tuple[list[str], subprocess.CompletedProcess]:
    report, proc = fresh(*args)
    return report["modules"], proc


def test_a_fresh_status_or_doctor_loads_no_pygit2(tmp_path):
    assert run(["init", "--no-hooks", str(tmp_path)]).exit_code == 0
    write(tmp_path, "memory/2025-01-01.md", "# 2025-01-01\n\n- A note.\n")
    commit_all(tmp_path)
    modules, proc = fresh_modules("-C", str(tmp_path), "status", "--json")
    assert json.loads(proc.stdout)["head"] == git(tmp_path, "rev-parse", "HEAD")
    assert "pygit2" not in modules
    modules, proc = fresh_modules("-C", str(tmp_path), "doctor")
    assert "[ok  ] repository: HEAD" in proc.stdout and "pygit2" not in modules
