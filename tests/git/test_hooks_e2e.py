"""Installed hooks keep the index fresh: real `git commit/checkout/rebase/merge` through the console script."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, indexed_paths, run, wait_for, write, zmem_exe, zmem_proc


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


@pytest.mark.slow
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


@pytest.fixture
def bigrepo(tmp_path) -> Path:
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    return root


@pytest.mark.slow
def test_subdirectory_workspaces_are_indexed_by_the_hooks(bigrepo):
    for sub in ("notes/agent", "notes/agent2"):
        proc = zmem_proc("init", sub, cwd=bigrepo)
        assert proc.returncode == 0, proc.stderr
    assert git(bigrepo, "config", "--get-all", "zmem.workspace").splitlines() == ["notes/agent", "notes/agent2"]
    write(bigrepo, "notes/agent/memory/2025-02-01.md", "# x\n\n- the okapi lives in the forest\n")
    write(bigrepo, "notes/agent2/memory/2025-02-02.md", "# x\n\n- the quokka smiles\n")
    commit_all(bigrepo, "notes")  # the installed hooks catch up both, in the background
    assert wait_for(lambda: "memory/2025-02-01.md" in indexed_paths(bigrepo / "notes/agent")
                     and "memory/2025-02-02.md" in indexed_paths(bigrepo / "notes/agent2"))
    proc = zmem_proc("hook", "post-commit", cwd=bigrepo)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


@pytest.mark.slow
def test_with_core_hookspath_subdirectory_workspaces_are_registered_and_hooks_never_fail_git(bigrepo):
    git(bigrepo, "config", "core.hooksPath", ".hk")
    hk = bigrepo / ".hk"
    hk.mkdir()
    for name in ("post-checkout", "post-commit"):  # what the README tells husky users to add
        (hk / name).write_text(f"#!/bin/sh\n'{zmem_exe()}' hook {name} \"$@\"\n")
        (hk / name).chmod(0o755)
    proc = zmem_proc("init", "notes/agent", cwd=bigrepo)
    assert proc.returncode == 0 and "core.hooksPath" in proc.stderr, proc.stderr
    assert git(bigrepo, "config", "--get-all", "zmem.workspace") == "notes/agent"
    write(bigrepo, "notes/agent/memory/2025-02-01.md", "# x\n\n- the pangolin rolls up\n")
    git(bigrepo, "add", "-A")
    commit = subprocess.run(["git", "commit", "-q", "-m", "notes"], cwd=bigrepo, capture_output=True, text=True)
    assert commit.returncode == 0, commit.stderr
    assert "memory/2025-02-01.md" in indexed_paths(bigrepo / "notes/agent")  # `zmem hook` runs in the foreground
    checkout = subprocess.run(["git", "checkout", "-q", "-b", "y"], cwd=bigrepo, capture_output=True, text=True)
    assert checkout.returncode == 0 and checkout.stderr == "", checkout.stderr


@pytest.mark.slow
def test_a_broken_registered_workspace_does_not_fail_the_hook_or_hide_the_others(bigrepo):
    assert zmem_proc("init", "--no-hooks", "notes/agent", cwd=bigrepo).returncode == 0
    assert zmem_proc("init", "--no-hooks", "notes/gone", cwd=bigrepo).returncode == 0
    for sub in ("notes/gone", "notes/agent", "notes/agent", "notes/deleted"):  # by hand: twice, and a stale one
        git(bigrepo, "config", "--add", "zmem.workspace", sub)
    write(bigrepo, "notes/gone/zmem.toml", "this is [not toml\n")
    write(bigrepo, "notes/agent/memory/2025-02-01.md", "# x\n\n- the tapir swims\n")
    proc = zmem_proc("hook", "post-commit", cwd=bigrepo)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert "memory/2025-02-01.md" in indexed_paths(bigrepo / "notes/agent")
    assert "skipped:" in (bigrepo / "notes/gone/.zmem/hook.log").read_text()


def test_run_hook_never_raises_even_when_finding_workspaces_fails(tmp_path, monkeypatch, capsys):
    from zmem import hookrun

    def boom(_directory):
        raise RuntimeError("simulated failure")
    monkeypatch.setattr(hookrun, "_workspaces", boom)
    (tmp_path / ".zmem").mkdir()
    hookrun.run_hook(str(tmp_path), "post-commit", [])  # does not raise
    assert "simulated failure" in (tmp_path / ".zmem" / "hook.log").read_text()
    assert "hook post-commit failed" in capsys.readouterr().err


def test_a_failing_hook_says_why_in_words_not_a_class_name(ws, tmp_path):
    state = ws / ".zmem"
    state.rename(tmp_path / "state")
    state.write_text("not a directory")
    res = run(["-C", str(ws), "hook", "post-commit"])
    assert res.exit_code == 0  # a hook never fails git
    err = res.stderr.strip().splitlines()
    assert "IndexUnusable" not in res.stderr and "Error" not in res.stderr, res.stderr
    assert err[0] == f"zmem: hook post-commit failed: {state} is not a directory; zmem keeps its index there", err
    assert err[1].startswith("hint: move it aside"), err
