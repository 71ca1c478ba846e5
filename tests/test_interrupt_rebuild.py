"""Ctrl-C during `zmem index --full` while the worker pool chunks notes: `zmem: interrupted`,
exit 130, promptly, no traceback, the old index intact and no temporary files left."""
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

from conftest import commit_all, run, wait_for, zmem_exe
from zmem import indexer

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2,
                                reason="needs /proc and at least two cores (the pool is used from two workers)")

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


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_during_a_pooled_full_rebuild_exits_130_promptly_and_keeps_the_old_index(ws):
    _big_workspace(ws)
    commit_all(ws, "many notes")
    assert run(["-C", str(ws), "index", "--full", "--no-embed", "-q"]).exit_code == 0
    before = json.loads(run(["-C", str(ws), "recall", "okapi", "--json"]).stdout)["results"]
    assert before

    pool_seen = interrupted = 0
    for delay in (0.0, 0.05, 0.2, 0.5, 1.0, 0.1):
        proc = subprocess.Popen([zmem_exe(), "-C", str(ws), "index", "--full", "--no-embed"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            workers: list[int] = []
            while proc.poll() is None and not workers and time.monotonic() < deadline:
                time.sleep(0.005)
                workers = _children(proc.pid)  # the workers are forked: the pool is in use
            if proc.poll() is not None:
                continue  # finished before the pool started (a fast machine): nothing to interrupt
            pool_seen += 1
            time.sleep(delay)
            sent = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
                pytest.fail(f"zmem index --full hung after Ctrl-C (delay {delay}): {err[-2000:]}")
            elapsed = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc.returncode == 0 or "index rebuilt" in out:
            # it had finished the rebuild when the signal came (a Ctrl-C after the command returned,
            # before the process exits, is click's: "Aborted!", exit 1; see the report in the commit)
            continue
        assert proc.returncode == 130, (delay, proc.returncode, err, out)
        assert err.strip() == "zmem: interrupted", (delay, err)
        assert elapsed < 10, (delay, elapsed)
        interrupted += 1
        # no worker left behind
        assert wait_for(lambda: not any(_alive(w) for w in workers), 10), workers
        assert not list((ws / ".zmem").glob("index.sqlite.rebuild-*")), list((ws / ".zmem").iterdir())
        after = json.loads(run(["-C", str(ws), "recall", "okapi", "--json"]).stdout)
        assert after["results"] == before and not after["stale"]
    assert pool_seen >= 3 and interrupted >= 2, (pool_seen, interrupted)
