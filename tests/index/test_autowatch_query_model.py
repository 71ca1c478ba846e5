"""Whatever its size, a workspace whose hybrid recall embeds queries with an in-process model gets an
automatic watcher (zmem.index.autowatch): it preloads the model, and the next fresh hybrid recalls have
their query embedded by it. Not with recall.mode bm25. Real processes, the tiny generated onnx model."""
from __future__ import annotations

import os
import signal

import pytest

pytest.importorskip("numpy")  # first: onnxruntime without numpy raises a plain ImportError, not skipped
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.tiny_bert import onnx_workspace  # noqa: E402
from helpers.workspace import wait_for, zmem_proc  # noqa: E402
from zmem.index import autowatch, fsmonitor  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")
ON = {"ZMEM_WATCH_AUTO": "1"}
QUERY = "which machine runs the gateway"


def _stop(ws) -> None:
    who = fsmonitor.serving(ws.state_dir)
    if who and who.get("pid"):
        os.kill(who["pid"], signal.SIGKILL)


@pytest.mark.slow
def test_an_in_process_query_model_starts_a_watcher_at_any_size(tmp_path, tiny_onnx):
    ws, fingerprint = onnx_workspace(tmp_path, tiny_onnx)  # a handful of files, auto_min_files 5000
    try:
        proc = zmem_proc("-C", str(ws.root), "recall", QUERY, "--json", env=ON)
        assert proc.returncode == 0, proc.stderr
        assert wait_for(lambda: fsmonitor.serving(ws.state_dir) is not None, 60.0)
        assert fsmonitor.embedded(ws.state_dir, fingerprint, QUERY, timeout=30.0) is not None
    finally:
        _stop(ws)


def test_not_with_recall_mode_bm25(tmp_path, tiny_onnx):
    ws, _ = onnx_workspace(tmp_path, tiny_onnx, '[recall]\nmode = "bm25"\n')
    try:
        assert zmem_proc("-C", str(ws.root), "recall", QUERY, env=ON).returncode == 0
        assert not (ws.state_dir / autowatch.STAMP).exists() and fsmonitor.serving(ws.state_dir) is None
    finally:
        _stop(ws)
