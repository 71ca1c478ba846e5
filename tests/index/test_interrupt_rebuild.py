"""Ctrl-C during `zmem index --full` while the worker pool chunks notes: `zmem: interrupted`,
exit 130, promptly, no traceback, the old index intact and no temporary files left. kill -9
during it: the workers die with it, and the next command removes the files it left."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.workspace import commit_all, run, wait_for, zmem_exe, zmem_proc
from zmem.index import catchup as indexer

pytestmark = [pytest.mark.slow,  # pooled full rebuilds of a big workspace, interrupted again and again
              pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2,
                                 reason="needs /proc and at least two cores (the pool is used from two workers)")]

WORDS = ("gateway relay backup replica webhook limiter certificate staging deploy runner vector cron "
         "Lisbon Porto Madrid Berlin Peter Ana Lucía Priya roadmap benchmark socket handler retries").split()


def _big_workspace(root: Path, files: int = 1600, bytes_per_file: int = 3000) -> None:
    """Enough notes and bytes that prepare_all hands them to the process pool, for a few seconds."""
    rnd = random.Random(7)
    assert files >= indexer.POOL_MIN_FILES and files * bytes_per_file >= 2 * indexer.POOL_MIN_BYTES
    for i in range(files):
        day = f"memory/{2020 + i // 365}/{2020 + i // 365}-{1 + i % 12:02d}-{1 + i % 28:02d}-{i}.md"
        lines = [f"# note {i}", ""]
        size = 0
        while size < bytes_per_file:
            if rnd.random() < 0.1:
                lines += ["", f"## Section {len(lines)}", ""]
            line = "- " + " ".join(rnd.choice(WORDS) for _ in range(12)) + "."
            lines.append(line)
            size += len(line) + 1
        path = root / day
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "memory" / "needle.md").write_text("# needle\n\n- the okapi lives in the forest\n", encoding="utf-8")


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def _alive(pid: int) -> bool:
    return _state(pid) not in (None, "Z")


def _stopped(pid: int) -> bool:
    return _state(pid) in ("T", "t", None, "Z")


def _default_sigint() -> None:
    """In the child before exec: SIGINT as a terminal's process gets it. A test run started in the
    background by a non-interactive shell (`pytest … &`, a CI script) inherits SIGINT ignored, and
    Python keeps an ignored SIGINT ignored: zmem would never see the Ctrl-C and exit 0."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_full_rebuild(ws: Path) -> subprocess.Popen:
    return subprocess.Popen([zmem_exe(), "-C", str(ws), "index", "--full", "--no-embed"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_default_sigint)


def _wait_for_the_pool(proc: subprocess.Popen, ws: Path) -> list[int]:
    """The workers of the running rebuild, once they and its temporary index exist ([] if it ended first)."""
    tmp = ws / ".zmem" / f"{indexer.REBUILD_PREFIX}{proc.pid}"
    workers: list[int] = []
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        workers = _children(proc.pid)  # the workers are forked: the pool is in use
        if len(workers) >= 2 and tmp.exists():
            return workers
        time.sleep(0.005)
    return []


def test_ctrl_c_during_a_pooled_full_rebuild_exits_130_promptly_and_keeps_the_old_index(ws):
    """Each Ctrl-C lands while the pool is in use, by construction: the process group is stopped
    (SIGSTOP), the workers are checked to be still alive (they exist only until the pool is shut down,
    before the rebuild commits), the SIGINT is queued and the group continued. The delays only vary
    how far the rebuild got. (Before, the test sent the signal after a fixed sleep and counted a
    rebuild that had finished as "too late"; and run in the background by a non-interactive shell,
    zmem inherited SIGINT ignored and finished every time: pool_seen 6, interrupted 0.)"""
    _big_workspace(ws)
    commit_all(ws, "many notes")
    assert run(["-C", str(ws), "index", "--full", "--no-embed", "-q"]).exit_code == 0
    before = json.loads(run(["-C", str(ws), "recall", "okapi", "--json"]).stdout)["results"]
    assert before

    interrupted = 0
    for delay in (0.0, 0.05, 0.2, 0.5, 1.0, 0.1):
        proc = _start_full_rebuild(ws)
        try:
            workers = _wait_for_the_pool(proc, ws)
            assert workers, (delay, proc.poll(), proc.stderr.read() if proc.poll() is not None else "")
            time.sleep(delay)  # not a wait for anything: how far into the pool the Ctrl-C comes
            os.killpg(proc.pid, signal.SIGSTOP)
            assert wait_for(lambda: _stopped(proc.pid) and all(_stopped(w) for w in workers), 30)
            if not any(_alive(w) for w in workers):  # the pool had finished: this delay was too long here
                os.killpg(proc.pid, signal.SIGCONT)
                assert proc.wait(timeout=120) == 0
                continue
            os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
            os.killpg(proc.pid, signal.SIGCONT)
            try:
                out, err = proc.communicate(timeout=60)  # a safety limit: a hang fails here
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
                pytest.fail(f"zmem index --full hung after Ctrl-C (delay {delay}): {err[-2000:]}")
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        assert proc.returncode == 130, (delay, proc.returncode, err, out)
        assert err.strip() == "zmem: interrupted", (delay, err)
        assert "index rebuilt" not in out
        interrupted += 1
        # no worker left behind
        assert wait_for(lambda: not any(_alive(w) for w in workers), 10), workers
        assert not list((ws / ".zmem").glob("index.sqlite.rebuild-*")), list((ws / ".zmem").iterdir())
        after = json.loads(run(["-C", str(ws), "recall", "okapi", "--json"]).stdout)
        assert after["results"] == before and not after["stale"]
    assert interrupted >= 1  # at least the delay-0 one: its workers had just been seen starting


def test_kill_9_during_a_pooled_full_rebuild_leaves_no_workers_and_the_next_command_cleans_up(ws):
    _big_workspace(ws)
    commit_all(ws, "many notes")
    assert run(["-C", str(ws), "index", "--full", "--no-embed", "-q"]).exit_code == 0
    state = ws / ".zmem"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # a rebuild in progress
    try:
        (state / f"{indexer.REBUILD_PREFIX}{live.pid}").write_bytes(b"")
        for _ in range(3):
            proc = _start_full_rebuild(ws)
            try:
                workers = _wait_for_the_pool(proc, ws)
                assert workers, proc.poll()
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            assert wait_for(lambda: not any(_alive(w) for w in workers), 30), \
                [(w, _state(w)) for w in workers]  # they died with their parent
            left = sorted(p.name for p in state.glob(f"{indexer.REBUILD_PREFIX}{proc.pid}*"))
            assert f"{indexer.REBUILD_PREFIX}{proc.pid}" in left, left
        killed = sorted(p.name for p in state.glob(f"{indexer.REBUILD_PREFIX}*") if str(live.pid) not in p.name)
        assert any(name.endswith("-wal") for name in killed), killed
        res = zmem_proc("-C", str(ws), "recall", "okapi", "--json")  # nothing changed: no catch-up to do
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["results"]
        assert sorted(p.name for p in state.glob(f"{indexer.REBUILD_PREFIX}*")) == \
            [f"{indexer.REBUILD_PREFIX}{live.pid}"]  # the killed rebuilds' files went; a running one's stays
    finally:
        live.kill()
        live.wait()
    (state / f"{indexer.REBUILD_PREFIX}{live.pid}-journal").write_bytes(b"")  # its process is gone now
    assert zmem_proc("-C", str(ws), "recall", "okapi").returncode == 0
    assert not list(state.glob(f"{indexer.REBUILD_PREFIX}*"))
