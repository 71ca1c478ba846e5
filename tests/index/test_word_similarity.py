"""Which of an entity's relations a question's word names is measured by the model that made the index's
vectors (zmem/index/queryvector.py `word_similarity`): in a process that has not loaded that in-process
model, a running watcher embeds the words (no model is loaded for it here); without one, the process
embeds them itself. Real watch process, the tiny generated onnx model, real ONNX Runtime."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("numpy")  # first: onnxruntime without numpy raises a plain ImportError, not skipped
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.tiny_bert import onnx_workspace  # noqa: E402
from helpers.watch import WatchProc  # noqa: E402
from zmem.index import queryvector  # noqa: E402
from zmem.index.catchup import open_index  # noqa: E402
from zmem.index.embedding import providers  # noqa: E402
from zmem.store.vectors import VectorStore  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")
PHRASES = ["sister of", "boss of", "sister of"]


def _similar(ws):
    conn = open_index(ws)
    provs = providers(ws)
    return conn, provs, queryvector.word_similarity(ws, VectorStore(conn), lambda: provs, 30.0)


def test_without_a_watcher_the_process_embeds_the_words_itself(tmp_path, tiny_onnx):
    ws, _ = onnx_workspace(tmp_path, tiny_onnx)
    queryvector._word_vectors.clear()
    conn, provs, similar = _similar(ws)
    try:
        sims = similar("sibling", PHRASES)
        assert len(sims) == 3 and sims[0] == sims[2] and all(-1.0001 <= s <= 1.0001 for s in sims)
        assert provs.primary.loaded
        assert similar("sister of", ["sister of"])[0] == pytest.approx(1.0, abs=1e-5)  # unit vectors
    finally:
        conn.close()


@pytest.mark.slow
def test_a_watcher_holding_the_model_embeds_the_words_and_nothing_is_loaded_here(tmp_path, tiny_onnx):
    ws, _ = onnx_workspace(tmp_path, tiny_onnx)
    queryvector._word_vectors.clear()
    conn, provs, similar = _similar(ws)
    try:
        expected = similar("sibling", PHRASES)  # embedded here (no watcher yet): the reference
        queryvector._word_vectors.clear()
        watch = WatchProc(ws.root)
        try:
            watch.ready()
            fresh_provs = providers(ws)
            watched = queryvector.word_similarity(ws, VectorStore(conn), lambda: fresh_provs, 30.0)
            assert watched("sibling", PHRASES) == pytest.approx(expected, abs=1e-5)
            assert not fresh_provs.primary.loaded  # the watcher's model answered
        finally:
            watch.stop()
    finally:
        conn.close()
