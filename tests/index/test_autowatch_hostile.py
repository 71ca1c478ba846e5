"""The automatic watcher against what users and other zmem versions do to a workspace while it serves
(real recalls, the real `zmem watch --auto` they spawn; every watcher a test started is killed in teardown
by the root fixture of helpers.autowatch)."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

import zmem
from helpers.autowatch import ON, WAIT, alive, log, recall, root, served, settings  # noqa: F401 - root: the fixture
from helpers.workspace import commit_all, run, indexed_paths, user_config, wait_for, write, zmem_proc
from zmem.store.migrations import SCHEMA_VERSION

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")


@pytest.mark.slow
def test_an_automatic_watcher_exits_once_a_newer_zmem_converted_the_index(root):
    """An upgrade while an older automatic watcher serves: its catch-ups can no longer use the index,
    so it exits (it would answer "no" to every question, which keeps it alive, keeps the newer zmem
    from starting its own, and writes a line to watch.log at every retry)."""
    settings()
    recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT)
    pid = served(root)["pid"]
    conn = sqlite3.connect(root / ".zmem" / "index.sqlite")  # what a newer zmem's conversion leaves
    conn.execute("INSERT INTO _migrations(name, applied_at) VALUES('a_later_step', datetime('now'))")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    write(root, "memory/2025-01-02.md", "# 2025-01-02\n\n- The wombat moved to the relay shed.\n")
    assert wait_for(lambda: not alive(pid), WAIT)
    assert served(root) is None and not (root / ".zmem" / "fsmonitor.sock").exists()
    assert "exits: the index was written by a newer zmem" in log(root)


@pytest.mark.slow
def test_an_automatic_watcher_follows_a_change_of_the_users_own_settings(root):
    """extra_paths added to the user's config.toml while a watcher serves: the watcher's next catch-up
    (after an edit) uses the new settings; with the ones it started with it took the extra path's notes
    out of the index again (and the next reader put them back: every edit, a full re-scan twice)."""
    write(root, "notes/platypus.md", "# Platypus\n\n- The platypus lives in the notes folder.\n")
    commit_all(root)
    settings()
    recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT)
    user_config('extra_paths = ["notes"]\n[watch]\nauto_min_files = 1\n')
    assert "notes/platypus.md" in recall(root, "platypus").stdout
    write(root, "memory/2025-01-02.md", "# 2025-01-02\n\n- The wombat moved to the relay shed.\n")
    assert wait_for(lambda: "wombat" in indexed_text(root), WAIT)  # the watcher's own catch-up
    assert "notes/platypus.md" in indexed_paths(root)


def test_an_automatic_watcher_does_not_hold_on_to_the_directory_its_recall_ran_in(root, tmp_path):
    """Started from a recall run elsewhere (a mounted drive, a directory about to go), the watcher
    lives on for minutes: its working directory is the workspace, not the recall's (`umount` would say
    "target is busy" because of it)."""
    settings()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert zmem_proc("-C", str(root), "recall", "relay", cwd=elsewhere, env=ON).returncode == 0
    assert wait_for(lambda: served(root) is not None, WAIT)
    assert os.readlink(f"/proc/{served(root)['pid']}/cwd") == str(root)


@pytest.mark.slow
def test_an_automatic_watcher_exits_when_zmem_is_upgraded_under_it(root, tmp_path):
    """`pip install -U zmem` while a watcher serves: it exits (a question a minute kept it alive, giving
    the new version's recalls the old version's keyword searches and query vectors, and it would import
    the new version's modules into the old one's process)."""
    settings()
    site = tmp_path / "site"  # zmem as installed: the watcher runs from these files
    shutil.copytree(Path(zmem.__file__).parent, site / "zmem", ignore=shutil.ignore_patterns("__pycache__"))
    recall(root, env={**ON, "PYTHONPATH": str(site)})
    assert wait_for(lambda: served(root) is not None, WAIT)
    pid = served(root)["pid"]
    module = site / "zmem" / "index" / "watch.py"  # pip writes every file of the new version anew
    upgraded = module.with_name("watch.py.new")
    upgraded.write_bytes(module.read_bytes() + b"\n")
    os.replace(upgraded, module)
    assert wait_for(lambda: not alive(pid), WAIT)
    assert "exits: zmem was upgraded or reinstalled" in log(root)


@pytest.mark.slow
def test_an_automatic_watcher_says_a_lasting_warning_once(root):
    """A warning every catch-up gives (an unknown key in zmem.toml) goes to .zmem/watch.log once, not
    once per edit: the log of a watcher that serves for days does not grow with every note written."""
    write(root, "zmem.toml", "bogus_key = 1\n")
    commit_all(root)
    settings()
    recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT)
    for i in range(3):
        write(root, "memory/2025-01-02.md", f"# 2025-01-02\n\n- Edit number{i} of the relay.\n")
        assert wait_for(lambda: f"number{i}" in indexed_text(root), WAIT)  # the watcher's catch-up
    assert log(root).count("unknown key `bogus_key`") == 1


@pytest.mark.slow
def test_status_says_no_watcher_starts_where_none_could_serve(tmp_path):
    """A workspace whose socket path would be too long: no reading command starts a watcher there, and
    status says so (it said that one would start, and went on saying when the last start was)."""
    deep = tmp_path / ("w" * 80)
    assert run(["init", "--no-hooks", str(deep)]).exit_code == 0
    write(deep, "memory/2025-01-01.md", "# 2025-01-01\n\n- The relay.\n")
    commit_all(deep)
    settings()
    recall(deep)
    status = json.loads(zmem_proc("-C", str(deep), "status", "--json", env=ON).stdout)
    assert status["auto_watch"]["on"] is False and "over 100 bytes" in status["auto_watch"]["why"]
    assert "no automatic start" in zmem_proc("-C", str(deep), "status", env=ON).stdout
    assert not (deep / ".zmem" / "watch-auto").exists() and served(deep) is None


@pytest.mark.slow
def test_an_automatic_watcher_leaves_an_index_kept_with_other_settings_alone(root, tmp_path):
    """Recalls from another environment (another XDG_CONFIG_HOME, whose config.toml has extra_paths) keep
    the index with their settings: the watcher started with other settings exits instead of undoing that
    at every change (it took the extra path's notes out again, and their next recall put them back)."""
    write(root, "notes/platypus.md", "# Platypus\n\n- The platypus lives in the notes folder.\n")
    commit_all(root)
    settings()
    recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT)
    pid = served(root)["pid"]
    other = tmp_path / "other-config"
    (other / "zmem").mkdir(parents=True)
    (other / "zmem" / "config.toml").write_text('extra_paths = ["notes"]\n[watch]\nauto = false\n')
    assert "notes/platypus.md" in recall(root, "platypus", env={**ON, "XDG_CONFIG_HOME": str(other)}).stdout
    write(root, "memory/2025-01-02.md", "# 2025-01-02\n\n- The wombat moved to the relay shed.\n")
    assert wait_for(lambda: not alive(pid), WAIT)
    assert "notes/platypus.md" in indexed_paths(root) and "with other settings" in log(root)


def indexed_text(root) -> str:
    conn = sqlite3.connect(root / ".zmem" / "index.sqlite", timeout=10)
    try:
        return "\n".join(text for (text,) in conn.execute("SELECT text FROM chunks"))
    finally:
        conn.close()
