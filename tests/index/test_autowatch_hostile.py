"""The automatic watcher against what users and other zmem versions do to a workspace while it serves
(real recalls, the real `zmem watch --auto` they spawn; every watcher a test started is killed in teardown
by test_autowatch's root fixture)."""
from __future__ import annotations

import os
import sqlite3

import pytest

from helpers.workspace import wait_for, write
from helpers.autowatch import WAIT, alive, log, recall, root, served, settings  # noqa: F401 - root: the fixture
from zmem.store.migrations import SCHEMA_VERSION

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")


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
