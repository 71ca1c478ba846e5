"""A burst of commits does not start a catch-up process per commit: a detached hook that finds another
one already waiting for the index leaves the work to it (that one's catch-up starts after this commit),
and one that waits lets the next one queue behind it once it runs. Real workspace, real
`python -m zmem.hookrun`, real flocks."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time

from helpers.workspace import commit_all, indexed_paths, write


def _hook(ws) -> subprocess.CompletedProcess:
    """What the installed shim runs after a commit (detached there; waited for here)."""
    return subprocess.run([sys.executable, "-P", "-m", "zmem.hookrun", "post-commit"], cwd=ws,
                          capture_output=True, text=True, timeout=120)


def _held(path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_a_hook_leaves_the_catch_up_to_the_one_already_waiting(ws):
    write(ws, "memory/2026-01-01.md", "# 2026-01-01\n\n- the quince tree flowered\n")
    commit_all(ws)
    waiting = _held(ws / ".zmem" / "hook-wait")  # another hook waits for the index
    try:
        t0 = time.monotonic()
        res = _hook(ws)
        assert res.returncode == 0 and res.stderr == "", res.stderr
        assert "memory/2026-01-01.md" not in indexed_paths(ws)  # it left at once, nothing done
    finally:
        os.close(waiting)
    assert time.monotonic() - t0 < 30
    res = _hook(ws)  # nobody waits: this one catches up
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert "memory/2026-01-01.md" in indexed_paths(ws)


def test_the_waiting_hook_lets_the_next_one_queue_once_the_writer_is_done(ws):
    write(ws, "memory/2026-01-02.md", "# 2026-01-02\n\n- the medlar fruit is ripe\n")
    commit_all(ws)
    writer = _held(ws / ".zmem" / "lock")  # a writer is busy
    proc = subprocess.Popen([sys.executable, "-P", "-m", "zmem.hookrun", "post-commit"], cwd=ws,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:  # the hook holds the waiting place while the writer works
            probe = os.open(ws / ".zmem" / "hook-wait", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(probe, fcntl.LOCK_UN)
                free = True
            except BlockingIOError:
                free = False
            finally:
                os.close(probe)
            if not free or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert not free and proc.poll() is None
    finally:
        os.close(writer)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == "", err
    assert "memory/2026-01-02.md" in indexed_paths(ws)
