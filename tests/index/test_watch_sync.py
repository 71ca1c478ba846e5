"""`zmem watch --sync INTERVAL`: memory shared through a real bare hub on an interval; a failing
sync is reported (stderr, an error event, .zmem/watch.log) and retried with backoff, never fatal;
`zmem append` never waits for the network."""
from __future__ import annotations

import pytest

from helpers.workspace import git, run, wait_for
from helpers.hub import make_hub, zmem
from helpers.watch import WatchProc
from zmem import sync as sync_lib
from zmem.index.watch import Watcher
from zmem.workspace.core import find_workspace


@pytest.mark.slow
def test_a_failing_sync_is_retried_later_each_time_and_then_goes_through(tmp_path):
    (a,) = make_hub(tmp_path, 1)
    hub = tmp_path / "hub.git"
    git(a, "remote", "set-url", "origin", str(tmp_path / "offline.git"))
    zmem("-C", str(a), "append", "written while offline")
    ws = find_workspace(a)
    now, events, notices = [0.0], [], []
    w = Watcher(ws, emit=events.append, notice=notices.append, clock=lambda: now[0],
                sync_every=60.0, syncer=lambda: sync_lib.sync(ws))
    assert w.due(0.0) == 60.0
    for at, retry in ((60.0, 60.0), (120.0, 120.0), (240.0, 240.0)):
        now[0] = at
        w.tick(at)
        assert w.due(at) == retry  # backoff: the interval, then twice as late each time
        assert events[-1].event == "error" and events[-1].message.startswith(
            f"sync failed (attempt {len(events)}; retrying in {retry:g} s): cannot reach the remote origin")
    assert len(notices) == 3
    git(a, "remote", "set-url", "origin", str(hub))
    now[0] = 480.0
    w.tick(480.0)
    assert events[-1].event == "synced" and events[-1].commit == git(a, "rev-parse", "HEAD")
    assert w.due(480.0) == 60.0  # back to the interval
    assert "written while offline" in git(hub, "log", "-p", "-1", "main")
    log = (a / ".zmem/watch.log").read_text().splitlines()
    assert len(log) == 4 and all("sync failed (attempt" in line for line in log[:3])
    assert log[3].endswith("sync works again after 3 failed attempts")


def test_watch_sync_needs_an_upstream_and_a_real_interval(tmp_path, ws):
    res = run(["-C", str(ws), "watch", "--sync", "1m", "--exit-after", "1"])
    assert res.exit_code == 1 and "no git remote" in res.output
    res = run(["-C", str(ws), "watch", "--sync", "soon"])
    assert res.exit_code == 2 and "'soon' is not an interval of at least 1 s" in res.output


@pytest.mark.slow
def test_append_never_waits_for_a_sync_stuck_on_the_network_and_the_failure_is_not_fatal(tmp_path):
    (a,) = make_hub(tmp_path, 1)
    stuck = tmp_path / "stuck"
    # a remote that never answers until the test lets go (then the connection fails)
    git(a, "remote", "set-url", "origin", "ssh://example.invalid/hub.git")
    git(a, "config", "ssh.variant", "ssh")  # no `-G` probe run first
    git(a, "config", "core.sshCommand", f"sh -c 'touch {stuck}; while [ -e {stuck} ]; do sleep 0.1; done; exit 1' --")
    w = WatchProc(a, "--commit", "--commit-after", "0.2", "--sync", "1s")
    try:
        w.ready()
        assert wait_for(stuck.exists)  # the sync is inside its fetch now
        zmem("-C", str(a), "append", "written while the sync hangs")
        assert stuck.exists() and w.proc.poll() is None  # append finished; the sync still hangs
        assert "written while the sync hangs" in git(a, "log", "-p", "-1")
        stuck.unlink()
        event = w.wait_for(lambda e: e["event"] == "error")
        assert event["message"].startswith("sync failed (attempt 1; retrying in 1 s): cannot reach the remote origin")
        assert wait_for(stuck.exists)  # retried
        assert w.proc.poll() is None
        assert "sync failed (attempt 1" in (a / ".zmem/watch.log").read_text()
    finally:
        stuck.unlink(missing_ok=True)
        w.stop()
