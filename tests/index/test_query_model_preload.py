"""A `zmem watch` that starts with vectors of an in-process model stored (onnx here) loads that model
at once, so the first fresh hybrid recall after it starts is embedded by it, not by the recall itself
(zmem/index/watch.py `_preload_query_model`, fsmonitor's QueryEmbedding.preload). With recall.mode
bm25 it loads nothing until asked. Real watch processes, the tiny generated model, real ONNX Runtime."""
from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("numpy")  # first: onnxruntime without numpy raises a plain ImportError, not skipped
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.fresh import fresh  # noqa: E402
from helpers.tiny_bert import onnx_workspace  # noqa: E402
from helpers.watch import WatchProc  # noqa: E402
from zmem.index import fsmonitor  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")
QUERY = "which machine runs the gateway"
RUNTIME = ("onnxruntime", "numpy", "tokenizers")


@pytest.mark.slow
def test_the_first_question_after_the_watcher_starts_is_answered_with_a_vector(tmp_path, tiny_onnx):
    ws, fingerprint = onnx_workspace(tmp_path, tiny_onnx)
    watch = WatchProc(ws.root)
    try:
        watch.ready()
        # not "no loading": the model is loaded (or loading, and the question waits for it)
        assert fsmonitor.embedded(ws.state_dir, fingerprint, QUERY, timeout=30.0) is not None
        loaded, proc = fresh("-C", str(ws.root), "recall", QUERY, "--json")
        assert loaded["code"] in (0, None), proc.stderr
        assert json.loads(proc.stdout)["mode"] == "hybrid"
        assert not [m for m in loaded["modules"] if m.split(".")[0] in RUNTIME]
    finally:
        watch.stop()


def test_with_recall_mode_bm25_the_watcher_loads_nothing_until_asked(tmp_path, tiny_onnx):
    ws, fingerprint = onnx_workspace(tmp_path, tiny_onnx, '[recall]\nmode = "bm25"\n')
    watch = WatchProc(ws.root)
    try:
        watch.ready()
        assert fsmonitor.embedded(ws.state_dir, fingerprint, QUERY, timeout=30.0) is None  # "no loading"
    finally:
        watch.stop()
