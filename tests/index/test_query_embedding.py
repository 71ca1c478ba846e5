"""A running `zmem watch` embeds fresh processes' queries with the model it keeps loaded, so a fresh
hybrid recall imports no onnxruntime, numpy or tokenizers and gives the same hits; whenever the
watcher cannot (not loaded yet, another model, stopped, dead, busy, failing), the recall embeds the
query itself, as before. The words recall compares with an entity's relations (queryvector.word_similarity)
are embedded the same way. Real watch processes, the tiny generated model through real ONNX Runtime."""
from __future__ import annotations

import json
import os
import signal
import socket
import threading

import pytest

pytest.importorskip("numpy")  # first: onnxruntime without numpy raises a plain ImportError, not skipped
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.tiny_bert import make_tiny_bert, onnx_workspace  # noqa: E402
from helpers.watch import WatchProc  # noqa: E402
from helpers.fresh import fresh  # noqa: E402
from helpers.workspace import commit_all, run, user_config, wait_for, write  # noqa: E402
from zmem.index import fsmonitor, queryvector  # noqa: E402
from zmem.index.catchup import open_index  # noqa: E402
from zmem.index.embedding import providers  # noqa: E402
from zmem.store import db  # noqa: E402
from zmem.store.vectors import VectorStore  # noqa: E402
from zmem.workspace.core import find_workspace  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")
QUERY = "which machine runs the gateway"
RUNTIME = ("onnxruntime", "numpy", "tokenizers")


@pytest.fixture
def ws(tmp_path, tiny_onnx):
    user_config(f'[embeddings]\nprovider = "onnx"\nmodel_path = "{tiny_onnx}"\nthreads = 2\n')
    assert run(["init", "--no-hooks", str(tmp_path)]).exit_code == 0
    write(tmp_path, "bank/world.md", "# World\n\n- the gateway host is the mac studio in the office\n")
    write(tmp_path, "memory/2025-01-02.md", "# 2025-01-02\n\n- Peter prefers concise replies on WhatsApp.\n"
                                            "- fixed the socket crash on the backup server\n")
    commit_all(tmp_path)
    assert run(["-C", str(tmp_path), "index", "-q"]).exit_code == 0
    return find_workspace(tmp_path)


@pytest.fixture
def watch(ws):
    proc = WatchProc(ws.root)
    proc.ready()
    yield proc
    proc.stop()


def fresh_recall(ws, query: str = QUERY, env: dict | None = None) -> tuple[dict, list[str]]:
    """(recall's JSON, the heavy runtime modules it imported) of a fresh `zmem recall --mode hybrid`."""
    loaded, proc = fresh("-C", str(ws.root), "recall", query, "--mode", "hybrid", "--json", env=env)
    assert loaded["code"] in (0, None), proc.stderr
    result = json.loads(proc.stdout)
    assert result["mode"] == "hybrid" and result["results"], proc.stderr
    return result, [m for m in loaded["modules"] if m.split(".")[0] in RUNTIME]


def fingerprint(ws) -> str:
    conn = open_index(ws)
    try:
        return db.get_meta(conn, "vec_fingerprint")
    finally:
        conn.close()


def served(ws) -> bool:
    return fsmonitor.embedded(ws.state_dir, fingerprint(ws), "x", timeout=5.0) is not None


@pytest.mark.slow
def test_a_watcher_embeds_a_fresh_recalls_query_with_the_same_hits_and_no_runtime_import(ws):
    alone, imported = fresh_recall(ws)  # no watcher
    assert "onnxruntime" in imported
    watch = WatchProc(ws.root)
    try:
        watch.ready()
        assert wait_for(lambda: served(ws))  # it loads the model as it starts (test_query_model_preload.py)
        with_watcher, imported = fresh_recall(ws)
        assert imported == []
        assert with_watcher == alone
        other, imported = fresh_recall(ws, "Peter replies whatsapp")
        assert imported == [] and other["results"][0]["path"] == "memory/2025-01-02.md"
    finally:
        watch.stop()


@pytest.mark.slow
def test_the_served_vector_is_the_one_the_process_would_make(ws, watch, tiny_onnx):
    from zmem.embedders import make_embedder
    assert wait_for(lambda: served(ws))
    own = make_embedder({"provider": "onnx", "model_path": str(tiny_onnx), "threads": 2}).embed([QUERY], "query")[0]
    theirs = fsmonitor.embedded(ws.state_dir, fingerprint(ws), QUERY, timeout=5.0)
    assert len(theirs) == len(own) and max(abs(a - b) for a, b in zip(own, theirs)) < 1e-6


def test_another_fingerprint_or_a_malformed_question_gets_no_vector(ws, watch):
    assert wait_for(lambda: served(ws))
    assert fsmonitor.embedded(ws.state_dir, fingerprint(ws).replace("onnx", "other"), QUERY, timeout=5.0) is None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(str(ws.state_dir / fsmonitor.SOCKET))
        s.sendall(b"embed [1, 2\n")
        assert s.recv(64) == b"no request\n"
    for bad in (b'cover ["fp", "q", "not a list"]\n', b'cover ["fp", "q", [1, 2]]\n', b'cover ["fp", "q", [], 4]\n'):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(str(ws.state_dir / fsmonitor.SOCKET))
            s.sendall(bad)
            assert s.recv(64) == b"no request\n", bad
    # token coverage of another model's fingerprint: nothing (the asker leaves its order)
    assert fsmonitor.covered(ws.state_dir, fingerprint(ws).replace("onnx", "other"), QUERY, ["a"], timeout=5.0) is None
    here = providers(ws)
    here.primary.load()  # the reference: this process's own copy of the model
    conn = open_index(ws)
    try:
        expected = queryvector.token_cover(ws, VectorStore(conn), lambda: here, 30.0)(QUERY, ["the gateway host", "tea"])
    finally:
        conn.close()
    got = fsmonitor.covered(ws.state_dir, fingerprint(ws), QUERY, ["the gateway host", "tea"], timeout=5.0)
    assert got == pytest.approx(expected, abs=1e-5)
    assert served(ws)  # the watcher goes on serving


@pytest.mark.slow
def test_a_replaced_model_is_loaded_again_and_each_fingerprint_gets_its_own_models_vector(ws, watch, tiny_onnx,
                                                                                           tmp_path):
    assert wait_for(lambda: served(ws))
    old = fingerprint(ws)
    old_vector = fsmonitor.embedded(ws.state_dir, old, QUERY, timeout=5.0)
    src = make_tiny_bert(tmp_path / "other-bert", seed=1)
    assert run(["model", "import", str(src), "--format", "onnx", "--out", str(tiny_onnx), "--force"]).exit_code == 0
    assert run(["-C", str(ws.root), "embed"]).exit_code == 0  # the stored vectors are the new model's
    assert fingerprint(ws) != old
    alone, imported = fresh_recall(ws)  # the watcher builds the new model's provider: "no loading"
    assert "onnxruntime" in imported
    assert wait_for(lambda: served(ws))
    with_watcher, imported = fresh_recall(ws)
    assert imported == [] and with_watcher == alone
    assert fsmonitor.embedded(ws.state_dir, fingerprint(ws), QUERY, timeout=5.0) != old_vector
    assert fsmonitor.embedded(ws.state_dir, old, QUERY, timeout=5.0) in (None, old_vector)


@pytest.mark.slow
def test_a_stopped_watcher_costs_at_most_the_wait_then_the_process_embeds_itself(ws, watch):
    assert wait_for(lambda: served(ws))
    expected, _ = fresh_recall(ws)
    os.kill(watch.proc.pid, signal.SIGSTOP)
    try:
        result, imported = fresh_recall(ws)
    finally:
        os.kill(watch.proc.pid, signal.SIGCONT)
    assert "onnxruntime" in imported and result == expected


@pytest.mark.slow
def test_a_dead_watcher_leaves_the_process_to_embed_itself(ws, watch):
    assert wait_for(lambda: served(ws))
    expected, _ = fresh_recall(ws)
    watch.proc.kill()
    watch.proc.wait()
    assert (ws.state_dir / fsmonitor.SOCKET).exists()  # left behind: connecting is refused
    result, imported = fresh_recall(ws)
    assert "onnxruntime" in imported and result == expected


@pytest.mark.slow
def test_a_watcher_that_cannot_load_the_model_leaves_the_process_to_embed_itself(ws, tmp_path, monkeypatch):
    expected, _ = fresh_recall(ws)
    shadow = tmp_path / "shadow" / "onnxruntime"  # a watcher whose Python has no onnxruntime
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'onnxruntime'\", "
                                        "name='onnxruntime')\n")
    before = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(shadow.parent), before])))
    watch = WatchProc(ws.root)
    try:
        watch.ready()
        if before is None:  # the recalls below run with the Python the test has
            monkeypatch.delenv("PYTHONPATH")
        else:
            monkeypatch.setenv("PYTHONPATH", before)
        for _ in range(3):  # its load as it starts failed: each hears "no error" at once
            result, imported = fresh_recall(ws)
            assert "onnxruntime" in imported and result == expected
        assert not served(ws)
    finally:
        watch.stop()


@pytest.mark.slow
def test_a_running_mcp_server_embeds_with_the_model_its_own_searches_loaded(ws):
    pytest.importorskip("mcp")
    import asyncio

    from helpers.mcp_client import call, session
    expected, _ = fresh_recall(ws)

    async def go():
        async with session(ws.root) as s:
            found = await call(s, "memory_search", query=QUERY)  # starts watching; loads the model for itself
            assert found["mode"] == "hybrid"
            assert await asyncio.to_thread(lambda: wait_for(lambda: served(ws)))
            result, imported = await asyncio.to_thread(fresh_recall, ws)
            assert imported == [] and result == expected
    asyncio.run(go())


def test_a_busy_embedding_thread_says_so_at_once():
    """More questions than EMBED_QUEUE waiting while the thread is held: the next hears "no busy"."""
    held, release = threading.Event(), threading.Event()

    def embedder_for(_fingerprint):
        held.set()
        release.wait(10)
        return None
    service = fsmonitor.QueryEmbedding(embedder_for)
    pairs = [socket.socketpair() for _ in range(fsmonitor.EMBED_QUEUE + 2)]
    try:
        service.submit(pairs[0][0], json.dumps(["fp", "q"]).encode())
        assert held.wait(10)  # the thread holds the first question
        for ours, _ in pairs[1:-1]:
            service.submit(ours, json.dumps(["fp", "q"]).encode())
        service.submit(pairs[-1][0], json.dumps(["fp", "q"]).encode())
        pairs[-1][1].settimeout(5)
        assert pairs[-1][1].recv(64) == b"no busy\n"
        release.set()
        for _, theirs in pairs[:-1]:
            theirs.settimeout(5)
            assert theirs.recv(64) == b"no model\n"
    finally:
        release.set()
        service.close()
        for a, b in pairs:
            b.close()


def test_the_model_a_watcher_keeps_lets_its_threads_sleep_between_queries(tiny_onnx):
    """Spinning pool threads cost the watcher ~40 ms of CPU after every query it served (bench/README.md)."""
    from zmem.embedders import make_embedder
    embedder = make_embedder({"provider": "onnx", "model_path": str(tiny_onnx), "threads": 2})
    assert not embedder.loaded
    embedder.load()
    assert embedder.loaded
    options = embedder._session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


# which of an entity's relations a question's word names (search._likeliest): cosines by the index's model
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
            # the watcher loads the model at its first question, which can outlast EMBED_TIMEOUT on a loaded
            # machine (then this process would embed the words itself, as it should): ask once, patiently
            assert wait_for(lambda: served(ws))
            fresh_provs = providers(ws)
            watched = queryvector.word_similarity(ws, VectorStore(conn), lambda: fresh_provs, 30.0)
            assert watched("sibling", PHRASES) == pytest.approx(expected, abs=1e-5)
            assert not fresh_provs.primary.loaded  # the watcher's model answered
        finally:
            watch.stop()
    finally:
        conn.close()
