"""Ignore rules reach the index, through the real CLI (a process) on real git repositories: a changed
.gitignore, one in a memory directory, info/exclude, core.excludesFile, git's global ignore file and
rules above a workspace in a subdirectory remove and restore files as a full rebuild would."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, recall_proc, write, zmem_proc


def cited(root, query, *extra) -> list[str]:
    got, _ = recall_proc(root, query, *extra)
    assert got["stale"] is False
    return [r["citation"] for r in got["results"]]


def indexed_paths(root) -> set[str]:
    from zmem.store import db
    conn = db.connect(Path(root) / ".zmem" / "index.sqlite")
    try:
        return {p for (p,) in conn.execute("SELECT path FROM files")}
    finally:
        conn.close()


NOTE = "# d\n\n- secretword\n"


HIT = ["memory/2025-01-01.md#L3-L3"]  # the matching line, not the whole note


@pytest.mark.slow
def test_a_gitignore_change_removes_and_restores_an_indexed_file(ws):
    write(ws, "memory/2025-01-01.md", NOTE)
    assert cited(ws, "secretword") == HIT
    with open(ws / ".gitignore", "a") as f:
        f.write("memory/2025-01-01.md\n")
    assert cited(ws, "secretword") == []
    assert "memory/2025-01-01.md" not in indexed_paths(ws)
    # un-ignored: found again at once (nothing else changed in its directory)
    (ws / ".gitignore").write_text((ws / ".gitignore").read_text().replace("memory/2025-01-01.md\n", ""))
    assert cited(ws, "secretword") == HIT
    # a full rebuild agrees with the incremental answer, both ways
    assert zmem_proc("-C", str(ws), "index", "--full").returncode == 0
    assert cited(ws, "secretword") == HIT


@pytest.mark.slow
def test_ignore_rules_from_memory_dirs_info_exclude_and_the_excludes_file(ws):
    write(ws, "memory/2025-01-01.md", NOTE)
    assert cited(ws, "secretword") == HIT
    write(ws, "memory/.gitignore", "2025-01-01.md\n")  # a new .gitignore in a memory directory
    assert cited(ws, "secretword") == []
    (ws / "memory/.gitignore").unlink()
    assert cited(ws, "secretword") == HIT
    exclude = ws / ".git" / "info" / "exclude"
    original = exclude.read_text() if exclude.exists() else ""
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text(original + "memory/*.md\n")
    assert cited(ws, "secretword") == []
    exclude.write_text(original)
    assert cited(ws, "secretword") == HIT
    # core.excludesFile: setting it, then filling the file it names
    git(ws, "config", "--global", "core.excludesFile", "~/my-ignores")
    assert cited(ws, "secretword") == HIT
    (Path(os.environ["HOME"]) / "my-ignores").write_text("2025-01-01.md\n")
    assert cited(ws, "secretword") == []
    git(ws, "config", "--global", "--unset", "core.excludesFile")
    assert cited(ws, "secretword") == HIT
    # git's default global ignore file ($XDG_CONFIG_HOME/git/ignore)
    write(Path(os.environ["XDG_CONFIG_HOME"]), "git/ignore", "*.md\n")
    assert cited(ws, "secretword") == []


@pytest.mark.slow
def test_ignore_rules_above_a_workspace_in_a_subdirectory(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, "README.md", "top\n")
    commit_all(repo, "top")
    ws = repo / "notes"
    assert zmem_proc("init", "--no-hooks", str(ws)).returncode == 0
    write(ws, "memory/2025-01-01.md", NOTE)
    assert cited(ws, "secretword") == HIT
    write(repo, ".gitignore", "notes/memory/2025-01-01.md\n")  # the repository's top, above the workspace
    assert cited(ws, "secretword") == []
    (repo / ".gitignore").unlink()
    assert cited(ws, "secretword") == HIT


@pytest.mark.slow
def test_a_committed_file_ignored_later_leaves_the_index_the_same_way_a_rebuild_does(ws):
    write(ws, "memory/2025-01-01.md", NOTE)
    commit_all(ws, "note")
    assert cited(ws, "secretword") == HIT
    write(ws, ".gitignore", (ws / ".gitignore").read_text() + "memory/2025-01-01.md\n")
    commit_all(ws, "ignore it")
    assert cited(ws, "secretword") == []
    assert zmem_proc("-C", str(ws), "index", "--full").returncode == 0
    assert cited(ws, "secretword") == []


@pytest.mark.slow
def test_the_no_op_check_stays_cheap_with_ignore_rules_recorded(ws):
    from zmem.index.catchup import catch_up
    from zmem.workspace.core import find_workspace
    w = find_workspace(ws)
    catch_up(w)
    time.sleep(2.1)  # past the racy window: stat alone is trusted from here on
    catch_up(w)
    result = catch_up(w)
    assert result.updated == [] and not result.full_scan and result.previous == result.head
    # the same content written again (a new mtime): read and compared, nothing reindexed
    gi = ws / ".gitignore"
    gi.write_text(gi.read_text())
    result = catch_up(w)
    assert result.updated == [] and result.removed == []
