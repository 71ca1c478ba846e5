"""Installed hooks keep the index fresh: real `git commit/checkout/rebase/merge` through the console script."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, indexed_paths, wait_for, write, zmem_exe, zmem_proc


def _indexed_commit(root: Path) -> str | None:
    conn = sqlite3.connect(root / ".zmem" / "index.sqlite")
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'indexed_commit'").fetchone()
        return row[0] if row else None
    finally:
        conn.close()


@pytest.fixture
def hooked(tmp_path) -> Path:
    root = tmp_path / "hooked ws"
    proc = zmem_proc("init", str(root))
    assert proc.returncode == 0, proc.stderr
    commit_all(root, "layout")
    return root


@pytest.mark.slow
def test_init_installs_hooks(hooked):
    proc = zmem_proc("-C", str(hooked), "hooks", "status", "--json")
    assert proc.returncode == 0, proc.stderr
    assert all(v.startswith("installed") for v in json.loads(proc.stdout).values())


def test_commit_updates_index_without_any_zmem_command(hooked):
    write(hooked, "memory/2025-12-01.md", "# 2025-12-01\n\n- The hook indexed this line.\n")
    git(hooked, "add", "-A")
    proc = subprocess.run(["git", "commit", "-q", "-m", "note"], cwd=hooked,
                                        capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""  # no noise on success
    head = git(hooked, "rev-parse", "HEAD")
    assert wait_for(lambda: _indexed_commit(hooked) == head)  # indexed in the background
    assert "memory/2025-12-01.md" in indexed_paths(hooked)


def _at_head(root) -> bool:
    head = git(root, "rev-parse", "HEAD")
    return wait_for(lambda: _indexed_commit(root) == head)


@pytest.mark.slow
def test_checkout_rebase_amend_merge_keep_index_at_head(hooked):
    write(hooked, "memory/2025-12-01.md", "# a\n\n- main note\n")
    commit_all(hooked, "main note")
    git(hooked, "checkout", "-q", "-b", "topic")
    write(hooked, "memory/2025-12-02.md", "# b\n\n- topic note\n")
    commit_all(hooked, "topic note")
    assert _at_head(hooked)
    git(hooked, "checkout", "-q", "main")  # post-checkout
    assert _at_head(hooked)
    assert "memory/2025-12-02.md" not in indexed_paths(hooked)
    write(hooked, "memory/2025-12-03.md", "# c\n\n- another main note\n")
    commit_all(hooked, "main 2")
    git(hooked, "commit", "-q", "--amend", "-m", "main 2 amended")  # post-rewrite
    assert _at_head(hooked)
    git(hooked, "checkout", "-q", "topic")
    git(hooked, "rebase", "-q", "main")  # post-rewrite / post-checkout
    assert _at_head(hooked)
    assert wait_for(lambda: {"memory/2025-12-02.md", "memory/2025-12-03.md"} <= indexed_paths(hooked))
    git(hooked, "checkout", "-q", "main")
    git(hooked, "merge", "-q", "--no-edit", "--no-ff", "topic")  # post-merge
    assert _at_head(hooked)
    git(hooked, "reset", "-q", "--hard", "HEAD~1")  # no hook fires: the next command catches up
    proc = zmem_proc("-C", str(hooked), "recall", "topic", "--json")
    assert proc.returncode == 0
    assert _indexed_commit(hooked) == git(hooked, "rev-parse", "HEAD")
    assert "memory/2025-12-02.md" not in indexed_paths(hooked)


@pytest.mark.slow
def test_large_commit_is_indexed_by_a_detached_process(hooked):
    (hooked / "zmem.toml").write_text("[hooks]\ninline_max_files = 5\n")
    for i in range(30):
        write(hooked, f"memory/2025-10-{i + 1:02d}.md", f"# day {i}\n\n- bulk note {i}\n")
    commit_all(hooked, "bulk")
    head = git(hooked, "rev-parse", "HEAD")
    assert wait_for(lambda: _indexed_commit(hooked) == head)
    assert len([p for p in indexed_paths(hooked) if p.startswith("memory/2025-10-")]) == 30


@pytest.mark.slow
def test_two_hooks_at_once_do_not_corrupt(hooked):
    write(hooked, "memory/2025-12-05.md", "# x\n\n- concurrent hooks\n")
    commit_all(hooked, "x")
    env = {**os.environ}
    procs = [subprocess.Popen([zmem_exe(), "hook", "post-commit"], cwd=hooked, env=env)
             for _ in range(4)]
    assert all(p.wait(60) == 0 for p in procs)
    conn = sqlite3.connect(hooked / ".zmem" / "index.sqlite")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert _indexed_commit(hooked) == git(hooked, "rev-parse", "HEAD")


def test_hook_outside_a_workspace_is_silent_and_succeeds(tmp_path):
    proc = zmem_proc("hook", "post-commit", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


@pytest.mark.slow
def test_hook_ignores_zmem_workspace_env_pointing_elsewhere(hooked, tmp_path):
    other = tmp_path / "other"
    assert zmem_proc("init", "--no-hooks", str(other)).returncode == 0
    write(hooked, "memory/2025-12-12.md", "# x\n\n- hook with a foreign ZMEM_WORKSPACE\n")
    git(hooked, "add", "-A")
    subprocess.run(["git", "commit", "-q", "-m", "x"], cwd=hooked, check=True,
                   env={**os.environ, "ZMEM_WORKSPACE": str(other)})
    assert _at_head(hooked)
