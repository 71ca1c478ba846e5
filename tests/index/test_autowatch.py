"""Reading commands start a watcher by themselves where one pays (zmem.index.autowatch, `watch.auto`):
real recalls as processes, the real `zmem watch --auto` they spawn, real sockets; every watcher a test
started is killed in teardown. ZMEM_WATCH_AUTO=0 is the suite's default (conftest): these tests turn it on."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from helpers.autowatch import ON, WAIT, alive, log, recall, root, served, settings, swept, watchers  # noqa: F401 - root: the fixture
from helpers.watch import WatchProc
from helpers.workspace import commit_all, run, wait_for, write, zmem_exe, zmem_proc
from zmem.index import autowatch, fsmonitor
from zmem.index.catchup import open_index
from zmem.workspace.core import find_workspace

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")


@pytest.mark.slow
def test_a_recall_starts_a_watcher_that_serves_the_next_recalls(root):
    settings()
    recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT)
    who = served(root)
    assert who["command"] == "watch" and who["auto"] is True and alive(who["pid"])
    assert wait_for(lambda: not swept(root), WAIT)  # vouched for: no stat sweep
    status = json.loads(zmem_proc("-C", str(root), "status", "--json", env=ON).stdout)
    assert status["watcher"]["pid"] == who["pid"] and status["watcher"]["auto"] is True
    assert status["auto_watch"]["on"] is True and status["auto_watch"]["last_start"]
    doctor = zmem_proc("-C", str(root), "doctor", env=ON).stdout
    assert f"[ok  ] watcher: zmem watch (pid {who['pid']}; started automatically" in doctor
    # still correct after an edit, and the same watcher (no second start)
    write(root, "memory/2025-01-02.md", "# 2025-01-02\n\n- The wombat moved to the relay shed.\n")
    assert "2025-01-02.md" in recall(root, "wombat").stdout
    assert served(root)["pid"] == who["pid"] and watchers(root) == [who["pid"]]


@pytest.mark.parametrize("how", ["environment", "setting", "below the threshold"])
def test_no_watcher_is_started_when_turned_off_or_below_the_threshold(root, how):
    if how == "environment":
        settings(auto=True)
        env = {"ZMEM_WATCH_AUTO": "0"}
    elif how == "setting":
        settings(auto=False)
        env = ON
    else:
        settings(auto_min_files=100)  # the index holds fewer
        env = ON
    recall(root, env=env)
    assert zmem_proc("-C", str(root), "get", "memory/2025-01-01.md", env=env).returncode == 0
    assert not (root / ".zmem" / autowatch.STAMP).exists()  # written before any start
    assert served(root) is None and watchers(root) == []


@pytest.mark.slow
def test_a_git_hook_never_starts_a_watcher(root, monkeypatch):
    settings()
    monkeypatch.setenv("ZMEM_WATCH_AUTO", "1")
    assert run(["-C", str(root), "hooks", "install"]).exit_code == 0
    write(root, "memory/2025-01-04.md", "# 2025-01-04\n\n- The hook indexed this.\n")
    head = commit_all(root)  # post-commit: a catch-up, maybe detached, and an embedding job
    ws = find_workspace(root)

    def indexed() -> bool:
        from zmem.store import db
        conn = open_index(ws)
        try:
            return db.get_meta(conn, "indexed_commit") == head
        finally:
            conn.close()
    assert wait_for(indexed, WAIT)
    time.sleep(1.0)  # a detached job the hook started has had time to finish
    assert not (root / ".zmem" / autowatch.STAMP).exists() and watchers(root) == []


@pytest.mark.slow
def test_six_recalls_at_once_start_one_watcher(root):
    settings()
    procs = [subprocess.Popen([zmem_exe(), "-C", str(root), "recall", "relay"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, env={**os.environ, **ON}) for _ in range(6)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 6
    assert wait_for(lambda: served(root) is not None, WAIT)
    time.sleep(1.0)  # a second watcher, had one been started, would be up by now (or have said why it left)
    assert len(watchers(root)) == 1
    assert log(root).count(") started") == 1 and "another process serves" not in log(root)


@pytest.mark.slow
def test_a_watcher_that_fails_to_start_is_not_started_again_at_once(root):
    settings()
    (root / ".zmem" / fsmonitor.COOKIES).write_text("in the way")  # the socket's cookie directory cannot be made
    recall(root)
    assert wait_for(lambda: "cannot serve" in log(root) and watchers(root) == [], WAIT)
    stamp = root / ".zmem" / autowatch.STAMP
    attempt = stamp.stat().st_mtime
    for _ in range(3):
        recall(root)
    # one attempt: its exit line (and its error and hint, its stderr, after it)
    assert stamp.stat().st_mtime == attempt and log(root).count("exits: the automatic watcher cannot serve") == 1
    status = zmem_proc("-C", str(root), "status", env=ON).stdout
    assert "watcher:        none now: a reading command starts one" in status and "the last start was at" in status
    old = time.time() - autowatch.RETRY - 1  # a minute later, the next command tries again
    os.utime(stamp, (old, old))
    recall(root)
    assert wait_for(lambda: log(root).count("exits: the automatic watcher cannot serve") == 2, WAIT)


def test_unless_watched_leaves_a_running_watcher_alone(root):
    watch = WatchProc(root)
    try:
        watch.ready()
        proc = zmem_proc("-C", str(root), "watch", "--unless-watched", "--json")
        assert proc.returncode == 0 and proc.stdout == ""
        assert served(root)["pid"] == watch.proc.pid and watch.proc.poll() is None
        assert wait_for(lambda: not swept(root), WAIT)  # still serving
        auto = zmem_proc("-C", str(root), "watch", "--auto")  # what a reading command starts: the same
        assert auto.returncode == 0 and served(root)["pid"] == watch.proc.pid
    finally:
        watch.stop()


@pytest.mark.slow
def test_the_automatic_watcher_exits_when_idle(root):
    settings(idle_exit=2)
    recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT)
    pid = served(root)["pid"]
    assert wait_for(lambda: not alive(pid), WAIT)
    assert served(root) is None and not (root / ".zmem" / fsmonitor.SOCKET).exists()
    assert "no question from another zmem process for 2 s" in log(root)


def test_watch_stop_stops_the_watcher_and_says_when_there_is_none(root):
    settings()
    recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT)
    pid = served(root)["pid"]
    proc = zmem_proc("-C", str(root), "watch", "--stop")
    assert proc.returncode == 0 and f"stopped zmem watch (pid {pid}; started automatically" in proc.stdout
    assert served(root) is None and wait_for(lambda: not alive(pid), WAIT)
    proc = zmem_proc("-C", str(root), "watch", "--stop")
    assert proc.returncode == 0 and "no watcher serves" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("what", ["the workspace", "its state directory"])
def test_the_automatic_watcher_exits_when_its_workspace_or_socket_goes(root, what):
    settings()
    recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT)
    pid = served(root)["pid"]
    shutil.rmtree(root if what == "the workspace" else root / ".zmem")
    assert wait_for(lambda: not alive(pid), WAIT)


@pytest.mark.slow
def test_the_automatic_watcher_serves_on_after_a_full_rebuild(root):
    settings()
    recall(root)
    assert wait_for(lambda: served(root) is not None and not swept(root), WAIT)
    pid = served(root)["pid"]
    assert zmem_proc("-C", str(root), "index", "--full", "-q", env=ON).returncode == 0
    assert wait_for(lambda: not swept(root), WAIT)  # the new file's snapshot is vouched for
    write(root, "memory/2025-01-03.md", "# 2025-01-03\n\n- The narwhal crossed the relay.\n")
    assert "2025-01-03.md" in recall(root, "narwhal").stdout
    assert served(root)["pid"] == pid and alive(pid)


def test_a_manual_watch_is_reported_as_started_by_hand(root):
    watch = WatchProc(root, "--idle-exit", "600")
    try:
        watch.ready()
        who = served(root)
        assert who == {**who, "pid": watch.proc.pid, "command": "watch", "auto": False, "idle_exit": 600}
        out = zmem_proc("-C", str(root), "status").stdout
        assert f"watcher:        zmem watch (pid {watch.proc.pid}; started by hand" in out
    finally:
        watch.stop()


def test_a_watcher_killed_outright_is_replaced_by_a_later_command(root):
    settings()
    recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT)
    pid = served(root)["pid"]
    os.kill(pid, signal.SIGKILL)  # its socket file stays behind, nobody listening on it
    assert wait_for(lambda: not alive(pid), WAIT) and (root / ".zmem" / fsmonitor.SOCKET).exists()
    old = time.time() - autowatch.RETRY - 1
    os.utime(root / ".zmem" / autowatch.STAMP, (old, old))
    recall(root)
    assert wait_for(lambda: served(root) is not None and served(root)["pid"] != pid, WAIT)
    assert wait_for(lambda: not swept(root), WAIT)
