"""Background work is never silent (zmem.index.autowatch): the first automatic watcher of a workspace is
announced once on stderr (what, why, how to turn it off); no watcher starts to preload a model this
Python cannot load; every automatic watcher's exit leaves its reason as its last line in watch.log.
Real recalls as processes, the real `zmem watch --auto` they spawn; every watcher is killed in teardown."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from helpers.autowatch import ON, WAIT, alive, log, recall, root, served, settings, watchers  # noqa: F401 - root: the fixture
from helpers.workspace import wait_for, write, zmem_exe, zmem_proc
from zmem.index import autowatch

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")


def _notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("note: ")]


@pytest.mark.parametrize("first_command", [["recall", "relay", "--json"],  # the plain recall (cli/entry.py)
                                           ["recall", "relay", "--json", "--explain"]])  # the click command line
def test_the_first_automatic_watcher_is_announced_once_on_stderr(root, first_command):
    settings()
    first = zmem_proc("-C", str(root), *first_command, env=ON)
    assert first.returncode == 0, first.stderr
    json.loads(first.stdout)  # stdout stays the result alone
    assert wait_for(lambda: served(root) is not None, WAIT)
    pid = served(root)["pid"]
    notes = _notes(first.stderr)
    assert len(notes) == 1, first.stderr
    assert f"zmem watch --auto`, pid {pid})" in notes[0]
    assert "ZMEM_WATCH_AUTO=0" in notes[0] and "[watch] auto = false" in notes[0]
    assert "exits after 15 minutes without a question" in notes[0]
    # keyword recall only: no query model to keep loaded, and the note does not claim one
    assert "fresh (and, when recall embeds queries in-process, the query model loaded)" in notes[0]
    assert not _notes(recall(root).stderr)  # the next command: nothing more to say
    # a later automatic watcher of the same workspace is not announced again
    os.kill(pid, signal.SIGTERM)
    assert wait_for(lambda: served(root) is None and not alive(pid), WAIT)
    os.utime(root / ".zmem" / autowatch.STAMP, (0, 0))  # as if the last start were long ago
    again = recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT) and served(root)["pid"] != pid
    assert not _notes(again.stderr), again.stderr


def test_a_watcher_taken_over_by_a_hand_started_watch_logs_why_it_exited(root):
    settings()
    recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT)
    pid = served(root)["pid"]
    hand = subprocess.Popen([zmem_exe(), "-C", str(root), "watch", "--exit-after", "60"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: (served(root) or {}).get("pid") == hand.pid, WAIT)
        assert wait_for(lambda: not alive(pid), WAIT)  # (its exit line is written before it exits)
        lines = log(root).splitlines()
        assert any(f"zmem watch (pid {hand.pid}) takes over serving this workspace: stopping the watcher (pid {pid})"
                   in line for line in lines), lines
        mine = [line for line in lines if f"(pid {pid})" in line]
        assert mine[-1].endswith(f"automatic watcher (pid {pid}) exits: stopped by SIGTERM"), lines
    finally:
        hand.kill()
        hand.wait()


@pytest.mark.slow
def test_every_exit_of_an_automatic_watcher_says_why_in_the_log(root):
    """Stopped by a signal, by --exit-after, or by an error before it served: the last line names it."""
    def last_line(*args: str, stop: bool = False) -> str:
        proc = subprocess.Popen([zmem_exe(), "-C", str(root), "watch", "--auto", *args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if stop:
                assert wait_for(lambda: (served(root) or {}).get("pid") == proc.pid, WAIT)
                proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=WAIT) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return log(root).splitlines()[-1]
    assert last_line(stop=True).endswith(" exits: stopped by SIGTERM")
    assert last_line("--exit-after", "1").endswith(" exits: --exit-after reached")
    assert last_line("--idle-exit", "0.5").endswith(" exits: no question from another zmem process for 0.5 s")


def test_zmem_watch_stop_says_in_the_log_who_stopped_the_automatic_watcher(root):
    settings()
    recall(root)
    assert wait_for(lambda: served(root) is not None, WAIT)
    pid = served(root)["pid"]
    stop = zmem_proc("-C", str(root), "watch", "--stop")
    assert stop.returncode == 0, stop.stderr
    assert wait_for(lambda: log(root).rstrip().endswith("exits: stopped by SIGTERM"), WAIT)  # (after its socket went)
    lines = log(root).splitlines()
    assert "zmem watch --stop (pid " in lines[-2] and lines[-2].endswith(f"stopping the watcher (pid {pid})"), lines
    assert lines[-1].endswith(f"automatic watcher (pid {pid}) exits: stopped by SIGTERM"), lines


def _without_onnxruntime(tmp_path) -> dict:
    """An environment whose Python cannot import onnxruntime (nor find it): as a venv with the mcp extra only."""
    site = tmp_path / "no-onnxruntime"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['onnxruntime'] = None\n")
    env = {**ON, "PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)}
    probe = subprocess.run([sys.executable, "-c", "import importlib.util as u; print(u.find_spec('onnxruntime'))"],
                           env={**os.environ, **env}, capture_output=True, text=True)
    assert probe.stdout.strip() == "None", probe.stderr
    return env


def test_no_watcher_starts_to_preload_a_model_this_python_cannot_load(tmp_path, tiny_onnx):
    pytest.importorskip("onnxruntime")
    from helpers.tiny_bert import onnx_workspace
    ws, _ = onnx_workspace(tmp_path / "ws", tiny_onnx)  # a handful of files: only the model would qualify
    env = _without_onnxruntime(tmp_path)
    try:
        proc = zmem_proc("-C", str(ws.root), "recall", "which machine runs the gateway", env=env)
        assert proc.returncode == 0, proc.stderr
        assert not (ws.state_dir / autowatch.STAMP).exists() and watchers(ws.root) == []
        status = json.loads(zmem_proc("-C", str(ws.root), "status", "--json", env=env).stdout)
        assert status["auto_watch"]["on"] is False
        assert "onnxruntime is not installed" in status["auto_watch"]["why"], status["auto_watch"]
        assert not _notes(proc.stderr)
    finally:
        for pid in watchers(ws.root):
            os.kill(pid, signal.SIGKILL)


def test_with_the_engine_installed_the_same_workspace_does_get_one(tmp_path, tiny_onnx):
    """(The test above fails for the missing engine, not for the workspace.)"""
    pytest.importorskip("onnxruntime")
    from helpers.tiny_bert import onnx_workspace
    ws, _ = onnx_workspace(tmp_path / "ws", tiny_onnx)
    try:
        assert zmem_proc("-C", str(ws.root), "recall", "which machine runs the gateway", env=ON).returncode == 0
        assert wait_for(lambda: served(ws.root) is not None, WAIT)
    finally:
        for pid in watchers(ws.root):
            os.kill(pid, signal.SIGKILL)


def test_a_command_that_starts_no_watcher_says_nothing(root):
    """A command that starts none says nothing (no note without a watcher)."""
    settings(auto=False)
    write(root, "memory/2025-01-09.md", "# 2025-01-09\n\n- quiet\n")
    assert not _notes(recall(root).stderr) and watchers(root) == []
