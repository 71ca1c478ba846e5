"""A watching Memory (`zmem mcp`) that could not serve fresh processes when it started, because a `zmem
watch` started by hand served them, serves them itself once that one is gone: a later call tries again
(zmem.index.freshness.SERVE_RETRY after the last attempt), so fresh processes are not left to their stat
sweep for as long as it runs."""
from __future__ import annotations

import os

import pytest

from helpers.watch import WatchProc
from helpers.workspace import commit_all, run, wait_for, write
from zmem.index import fsmonitor
from zmem.memory import Memory

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")


def test_a_watching_memory_serves_once_the_watch_that_served_is_gone(tmp_path):
    root = tmp_path / "ws"
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    write(root, "memory/2025-01-01.md", "# 2025-01-01\n\n- The relay runs on the gateway.\n")
    commit_all(root)
    watch = WatchProc(root)
    try:
        watch.ready()
        with Memory.open(root, watch=True) as mem:
            assert mem.recall("relay").results
            assert fsmonitor.serving(root / ".zmem")["pid"] == watch.proc.pid  # it serves, not this process
            watch.stop()
            assert wait_for(lambda: fsmonitor.serving(root / ".zmem") is None)
            assert mem.recall("relay").results  # within SERVE_RETRY of its attempt: not yet
            assert fsmonitor.serving(root / ".zmem") is None
            mem._serve_again = 0.0  # as if SERVE_RETRY had passed
            assert mem.recall("relay").results
            who = fsmonitor.serving(root / ".zmem")
            assert who is not None and who["pid"] == os.getpid()
        assert fsmonitor.serving(root / ".zmem") is None  # closed with it
    finally:
        watch.stop()
