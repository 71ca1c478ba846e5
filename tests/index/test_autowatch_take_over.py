"""A long-lived zmem process that starts while an automatic watcher serves the workspace takes over:
the automatic one is stopped and `zmem mcp` (or a `zmem watch` started by hand) serves from then on,
so fresh processes stay served while it runs, not only until the automatic one's idle exit. An
automatic watcher never stops another, and a hand-started watch is never stopped by anyone."""
from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from helpers.watch import WatchProc
from helpers.workspace import commit_all, run, user_config, wait_for, write, zmem_proc
from zmem.index import fsmonitor

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")
ON = {"ZMEM_WATCH_AUTO": "1"}
WAIT = 60.0  # generous: a noisy machine; the tests poll, they never assert timings


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "ws"
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    write(root, "memory/2025-01-01.md", "# 2025-01-01\n\n- The relay runs on the gateway.\n")
    commit_all(root)
    user_config("[watch]\nauto_min_files = 1\n")
    started: list[int] = []
    yield root, started
    for pid in started:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def served(root: Path) -> dict | None:
    return fsmonitor.serving(root / ".zmem")


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


def automatic(root: Path, started: list[int]) -> int:
    """The pid of the automatic watcher a fresh recall starts."""
    assert zmem_proc("-C", str(root), "recall", "relay", env=ON).returncode == 0
    assert wait_for(lambda: (served(root) or {}).get("auto") is True, WAIT)
    started.append(served(root)["pid"])
    return started[-1]


@pytest.mark.slow
def test_zmem_mcp_takes_over_from_the_automatic_watcher(root):
    root, started = root
    from helpers.mcp_client import session
    pid = automatic(root, started)

    async def go():
        async with session(root):  # the handshake only: it serves from its start
            assert await asyncio.to_thread(wait_for, lambda: (served(root) or {}).get("command") == "mcp", WAIT)
            assert await asyncio.to_thread(wait_for, lambda: gone(pid), WAIT)
            # while it serves, a fresh process starts no other watcher
            assert zmem_proc("-C", str(root), "recall", "relay", env=ON).returncode == 0
            return served(root)
    who = asyncio.run(go())
    assert who["command"] == "mcp" and who["auto"] is False


def test_a_watch_started_by_hand_takes_over_and_an_automatic_one_never_does(root):
    root, started = root
    pid = automatic(root, started)
    watch = WatchProc(root)
    try:
        watch.ready()
        assert wait_for(lambda: gone(pid), WAIT)
        assert served(root)["pid"] == watch.proc.pid
        auto = zmem_proc("-C", str(root), "watch", "--auto")  # what a reading command starts
        assert auto.returncode == 0 and served(root)["pid"] == watch.proc.pid and watch.proc.poll() is None
    finally:
        watch.stop()
