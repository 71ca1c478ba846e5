"""A running `zmem watch` vouches that no memory file changed since the index snapshot, so a fresh
process skips the stat sweep (issue 14, git's fsmonitor idea); whenever it cannot vouch, the sweep
runs as before. Real watch processes, real files, the real index connection's SQL trace."""
from __future__ import annotations

import os
import signal

import pytest

from helpers.workspace import commit_all, run, wait_for, write
from helpers.watch import WatchProc
from zmem.store import db
from zmem.index import fsmonitor
from zmem.index.catchup import catch_up, open_index
from zmem.workspace.core import find_workspace

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")
SWEEP = "SELECT path, mtime_ns, size, ino, ctime_ns FROM files"  # changed_since_snapshot's first statement


@pytest.fixture
def ws(tmp_path):
    assert run(["init", "--no-hooks", str(tmp_path)]).exit_code == 0
    for i in range(1, 6):
        write(tmp_path, f"memory/2025/2025-01-0{i}.md", f"# 2025-01-0{i}\n\n- Note {i} about the relay.\n")
    commit_all(tmp_path)
    assert run(["-C", str(tmp_path), "index", "-q"]).exit_code == 0
    return find_workspace(tmp_path)


@pytest.fixture
def watch(ws):
    proc = WatchProc(ws.root)
    proc.ready()
    yield proc
    proc.stop()


def caught_up(ws):
    """catch_up in this process: (its result, whether it ran the stat sweep)."""
    conn = open_index(ws)
    ran: list[str] = []
    conn.set_trace_callback(ran.append)
    try:
        return catch_up(ws, conn=conn), SWEEP in ran
    finally:
        conn.close()


def vouched(ws) -> bool:
    conn = open_index(ws)
    try:
        return fsmonitor.vouched(ws.state_dir, db.get_meta(conn, "snapshot_ns"), timeout=5.0)
    finally:
        conn.close()


def test_a_watching_process_spares_a_fresh_one_the_stat_sweep(ws, watch):
    assert wait_for(lambda: vouched(ws))
    result, swept = caught_up(ws)
    assert not swept and not result.stale and not result.updated
    assert run(["-C", str(ws.root), "recall", "relay"]).exit_code == 0


def test_a_change_made_just_before_asking_is_never_vouched_against(ws, watch):
    assert wait_for(lambda: vouched(ws))
    for n in range(5):  # no pause between the write and the question: the cookie orders them
        write(ws.root, "memory/2025/2025-01-02.md", f"# 2025-01-02\n\n- Edit {n}: the quokka{n} moved.\n")
        result, swept = caught_up(ws)
        assert swept and "memory/2025/2025-01-02.md" in result.updated
        write(ws.root, f"memory/2026/new-{n}/2026-02-0{n + 1}.md", f"- A new note {n}.\n")  # a new directory
        result, swept = caught_up(ws)
        assert swept and f"memory/2026/new-{n}/2026-02-0{n + 1}.md" in result.updated


@pytest.mark.slow
def test_a_snapshot_another_process_moved_is_vouched_for_again_after_the_watcher_checks_it(ws, watch):
    assert wait_for(lambda: vouched(ws))
    conn = open_index(ws)
    try:
        with db.write_transaction(conn):
            db.set_meta(conn, "snapshot_ns", str(int(db.get_meta(conn, "snapshot_ns")) + 1))
    finally:
        conn.close()
    result, swept = caught_up(ws)
    assert swept and not result.updated
    assert wait_for(lambda: vouched(ws))  # the question made the watcher catch up; the new snapshot is vouched for


def test_a_watcher_killed_or_stopped_is_not_believed(ws, watch):
    assert wait_for(lambda: vouched(ws))
    watch.proc.send_signal(signal.SIGSTOP)
    try:
        assert not fsmonitor.vouched(ws.state_dir, "1", timeout=0.2)  # no answer in time
        write(ws.root, "memory/2025/2025-01-03.md", "# 2025-01-03\n\n- Changed while it slept.\n")
        result, swept = caught_up(ws)
        assert swept and "memory/2025/2025-01-03.md" in result.updated
    finally:
        watch.proc.send_signal(signal.SIGCONT)
    watch.proc.kill()
    watch.proc.wait()
    assert (ws.state_dir / fsmonitor.SOCKET).exists()  # left behind by kill -9: refused, not believed
    write(ws.root, "memory/2025/2025-01-04.md", "# 2025-01-04\n\n- Changed after it died.\n")
    result, swept = caught_up(ws)
    assert swept and "memory/2025/2025-01-04.md" in result.updated


def test_lost_events_are_never_vouched_against(ws, watch):
    """More events than inotify queues (the watcher stopped meanwhile): the overflow clears the vouch."""
    assert wait_for(lambda: vouched(ws))
    limit = int(open("/proc/sys/fs/inotify/max_queued_events").read())
    if limit > 40_000:
        pytest.skip("the inotify queue is too long to overflow quickly here")
    path = ws.root / "memory/2025/2025-01-05.md"
    watch.proc.send_signal(signal.SIGSTOP)
    try:
        for n in range(limit + 10):
            os.utime(path, ns=(n, n))
        path.write_text("# 2025-01-05\n\n- Rewritten in the flood.\n")
    finally:
        watch.proc.send_signal(signal.SIGCONT)
    result, swept = caught_up(ws)
    assert swept and "memory/2025/2025-01-05.md" in result.updated


def test_no_vouching_when_polling(ws):
    poller = WatchProc(ws.root, "--poll")
    try:
        poller.ready()
        assert not (ws.state_dir / fsmonitor.SOCKET).exists()
        assert caught_up(ws)[1]
    finally:
        poller.stop()


@pytest.mark.slow
def test_a_running_mcp_server_vouches_too(ws):
    pytest.importorskip("mcp")
    import asyncio

    from helpers.mcp_client import call, session

    async def go():
        async with session(ws.root) as s:
            await call(s, "memory_search", query="relay")  # the first call starts watching
            assert await asyncio.to_thread(lambda: wait_for(lambda: vouched(ws)))
            assert not await asyncio.to_thread(lambda: caught_up(ws)[1])
            write(ws.root, "memory/2025/2025-01-03.md", "# 2025-01-03\n\n- The wombat arrived.\n")
            result, swept = await asyncio.to_thread(lambda: caught_up(ws))
            assert swept and "memory/2025/2025-01-03.md" in result.updated
            found = await call(s, "memory_search", query="wombat")
            assert [r["path"] for r in found["results"]] == ["memory/2025/2025-01-03.md"]
            assert await asyncio.to_thread(lambda: wait_for(lambda: vouched(ws)))  # the search caught up again
    asyncio.run(go())
    assert not (ws.state_dir / fsmonitor.SOCKET).exists()  # removed when the server stops
