"""The automatic watcher's tests (tests/index/test_autowatch*.py): a workspace whose recalls start one,
and what finds, asks and kills the watchers a test started."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from helpers.workspace import commit_all, run, user_config, write, zmem_proc
from zmem.index import autowatch, fsmonitor
from zmem.index.catchup import catch_up, open_index
from zmem.workspace.core import find_workspace

ON = {"ZMEM_WATCH_AUTO": "1"}
SWEEP = "SELECT path, mtime_ns, size, ino, ctime_ns FROM files"  # changed_since_snapshot's first statement
WAIT = 60.0  # generous: a noisy machine; the tests poll, they never assert timings


def settings(**watch) -> None:
    """[watch] settings in the user's config (auto_min_files = 1 unless given)."""
    watch = {"auto_min_files": 1, **watch}
    user_config("[watch]\n" + "".join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}\n"
                                      for k, v in watch.items()))


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "ws"
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    for i in range(1, 4):
        write(root, f"memory/2025-01-0{i}.md", f"# 2025-01-0{i}\n\n- Note {i} about the relay.\n")
    commit_all(root)
    assert run(["-C", str(root), "index", "-q"]).exit_code == 0
    yield root
    for pid in watchers(root):  # whatever a test started, gone with it
        _kill(pid)


def watchers(root: Path) -> list[int]:
    """Live `zmem … -C ROOT watch --auto` processes (from /proc: also those that never served)."""
    return [pid for pid in autowatch.automatic_watchers(root) if alive(pid)]


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for whoever adopted it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def recall(root: Path, *words: str, env=ON) -> subprocess.CompletedProcess:
    proc = zmem_proc("-C", str(root), "recall", *(words or ("relay",)), env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def served(root: Path) -> dict | None:
    return fsmonitor.serving(root / ".zmem")


def swept(root: Path) -> bool:
    """Whether a freshness check in this process runs the stat sweep (no watcher vouched)."""
    ws = find_workspace(root)
    conn = open_index(ws)
    ran: list[str] = []
    conn.set_trace_callback(ran.append)
    try:
        assert not catch_up(ws, conn=conn).stale
    finally:
        conn.close()
    return SWEEP in ran


def log(root: Path) -> str:
    path = root / ".zmem" / autowatch.LOG
    return path.read_text() if path.exists() else ""
