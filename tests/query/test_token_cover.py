"""`[recall] rerank = "embedding"`: the embedding model reads hybrid recall's first hits token by token
(zmem.query.tokencover, Embedder.cover). The coverage is checked against a numpy forward pass of the tiny
generated BERT; recall through the CLI on a real workspace and index, current and as-of; a watcher holding the
model reads for a process that has not loaded it (real `zmem watch`, real ONNX Runtime)."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from zmem.query import tokencover


def hit(score: float, name: str):
    return SimpleNamespace(score=score, snippet=name, explain={})


def test_the_first_hits_are_ordered_by_score_and_coverage_the_rest_keep_their_places():
    hits = [hit(0.9, "a"), hit(0.8, "b"), hit(0.7, "c"), hit(0.6, "d")]
    got = tokencover.reorder(hits, [0.1, 0.5, 0.2], explain=True)
    # 0.9 + 3 x 0.1 = 1.2, 0.8 + 1.5 = 2.3, 0.7 + 0.6 = 1.3: b, c, a; d was not read
    assert [h.snippet for h in got] == ["b", "c", "a", "d"]
    assert got[0].explain == {"token_coverage": 0.5} and got[3].explain == {}
    tied = [hit(0.5, "x"), hit(0.5, "y")]
    assert [h.snippet for h in tokencover.reorder(tied, [0.4, 0.4])] == ["x", "y"]  # a tie: the earlier first


def test_apply_leaves_the_order_when_the_model_cannot_tell():
    out = SimpleNamespace(results=[hit(0.9, "a"), hit(0.8, "b")], rerank=None)
    tokencover.apply(out, "q", lambda query, passages: None)
    assert [h.snippet for h in out.results] == ["a", "b"] and out.rerank is None
    tokencover.apply(out, "q", lambda query, passages: [0.0, 0.9])
    assert [h.snippet for h in out.results] == ["b", "a"] and out.rerank == "embedding"
    one = SimpleNamespace(results=[hit(0.9, "a")], rerank=None)
    tokencover.apply(one, "q", lambda query, passages: pytest.fail("one hit: nothing to order"))


np = pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.tiny_bert import (bert_hidden, load_reference, make_tiny_bert, onnx_workspace,  # noqa: E402
                               with_sentencepiece, wordpiece)
from helpers.workspace import commit_all, recall_json, run, wait_for, write  # noqa: E402
from zmem.embedders.modelimport import import_onnx  # noqa: E402
from zmem.embedders.onnx import OnnxEmbedder  # noqa: E402
from zmem.store.fts import STOPWORDS  # noqa: E402

QUERY = "where does the gateway host run"
PASSAGES = ["the gateway host is the mac studio in the office", "peter prefers concise replies", "coffee"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("tiny") / "tiny-bert")


@pytest.fixture(scope="module")
def model(tiny, tmp_path_factory):
    return import_onnx(tiny, tmp_path_factory.mktemp("onnx") / "tiny.onnx")["out"]


def reference_cover(directory, query: str, passages: list[str]) -> list[float]:
    """The coverage in float64 numpy: the query's content tokens' closest passage tokens, averaged."""
    t, cfg, vocab = load_reference(directory)
    token = {i: w for w, i in vocab.items()}

    def states(text):
        ids = wordpiece(vocab, text)
        x = bert_hidden(t, cfg, ids, [0] * len(ids))
        return x / np.linalg.norm(x, axis=1, keepdims=True), [token[i] for i in ids]
    q, q_tokens = states(query)
    asked = [i for i, w in enumerate(q_tokens) if w not in ("[CLS]", "[SEP]") and w.lstrip("#") not in STOPWORDS]
    out = []
    for p in passages:
        s, _ = states(p)
        out.append(float((q[asked] @ s[1:-1].T).max(1).mean()))
    return out


def test_the_coverage_is_the_models_token_states_compared(tiny, model):
    embedder = OnnxEmbedder(str(model), threads=1)
    assert embedder.cover(QUERY, PASSAGES) == pytest.approx(reference_cover(tiny, QUERY, PASSAGES), abs=1e-4)
    # a prefix the model is given (e5's "query: ") is not a word of the question
    prefixed = OnnxEmbedder(str(model), threads=1, query_prefix="note: ", document_prefix="memory: ")
    got = prefixed.cover(QUERY, PASSAGES)
    assert len(got) == 3 and all(-1.0001 <= c <= 1.0001 for c in got)
    assert got != pytest.approx(embedder.cover(QUERY, PASSAGES), abs=1e-6)  # the prefix is context, not counted


def test_a_question_the_vocabulary_splits_into_pieces_is_not_read(model):
    embedder = OnnxEmbedder(str(model), threads=1)
    assert embedder.reads(QUERY) == 1.0
    assert embedder.reads("onde fica o servidor principal") < 0.5  # the tiny English vocabulary: letters
    assert embedder.cover("onde fica o servidor principal", PASSAGES) is None
    assert embedder.cover(QUERY, []) is None


@pytest.fixture(scope="module")
def sentencepiece(model, tmp_path_factory):
    """The tiny model with a SentencePiece (Unigram) tokenizer, as multilingual-e5-small's."""
    return with_sentencepiece(Path(model), tmp_path_factory.mktemp("sp") / "sp.onnx")


def test_with_sentencepiece_the_first_word_after_the_prefix_is_read(sentencepiece):
    # "query: gateway": the piece ▁gateway starts at the prefix's closing space; it is the question's word
    embedder = OnnxEmbedder(str(sentencepiece), threads=1, query_prefix="query: ", document_prefix="passage: ")
    got = embedder.cover("gateway", ["gateway", "relay host"])
    assert got is not None and len(got) == 2
    assert got[0] == pytest.approx(1.0, abs=1e-3)  # the passage's one word is read too: its state in another context...
    assert got[1] < 0.9999  # ...and another passage's are not it
    assert embedder.cover("the", ["gateway"]) is None  # a stopword alone: nothing of the question to read


def test_a_vocabulary_that_holds_chinese_words_reads_chinese(sentencepiece, model):
    sp = OnnxEmbedder(str(sentencepiece), threads=1)
    # 数据库 and 连接 are pieces of their own, 在, 哪 and 里 single characters: 5 of 8 characters held in words
    assert sp.reads("数据库连接在哪里") == pytest.approx(5 / 8)
    assert sp.reads("gateway host") == 1.0
    assert sp.reads("onde fica o servidor") == pytest.approx(2 / 3)  # `o` is a stopword; servidor splits
    # a BERT WordPiece splits every CJK character: it does not read Chinese
    assert OnnxEmbedder(str(model), threads=1).reads("数据库连接在哪里") == 0.0


@pytest.fixture
def reading(tmp_path, tiny_onnx):
    ws, _ = onnx_workspace(tmp_path, tiny_onnx, toml='[recall]\nrerank = "embedding"\n')
    for day, note in (("2025-01-02", "the backup server had a socket crash"),
                      ("2025-01-03", "peter prefers concise replies on whatsapp"),
                      ("2025-01-04", "the gateway runs on the old laptop in the office")):
        write(tmp_path, f"memory/{day}.md", f"# {day}\n\n- {note}\n")
    commit_all(tmp_path)
    return tmp_path


def test_recall_reads_the_first_hits_when_the_config_asks(reading):
    got = recall_json(reading, "which machine runs the gateway", "--mode", "hybrid", "--explain", "--k", "4")
    assert got["rerank"] == "embedding"
    read = [h["explain"]["token_coverage"] for h in got["results"][:3]]
    assert all(isinstance(c, float) for c in read)
    assert "token_coverage" not in got["results"][3]["explain"]
    # their order is score + WEIGHT x coverage, best first
    keys = [h["score"] + tokencover.WEIGHT * c for h, c in zip(got["results"], read)]
    assert keys == sorted(keys, reverse=True)
    plain = recall_json(reading, "which machine runs the gateway", "--mode", "hybrid", "--no-rerank", "--k", "4")
    assert "rerank" not in plain
    assert sorted(h["citation"] for h in plain["results"][:3]) == sorted(h["citation"] for h in got["results"][:3])
    shown = run(["-C", str(reading), "recall", "which machine runs the gateway", "--mode", "hybrid", "--explain"])
    assert shown.exit_code == 0 and shown.stdout.count("token coverage") == 3, shown.stdout
    keyword = recall_json(reading, "which machine runs the gateway", "--mode", "bm25")
    assert "rerank" not in keyword and not keyword["warnings"]  # nothing to read with: the fused order


def test_as_of_recall_reads_them_as_a_current_one_does(reading):
    now = recall_json(reading, "which machine runs the gateway", "--mode", "hybrid", "--k", "4")
    then = recall_json(reading, "which machine runs the gateway", "--mode", "hybrid", "--k", "4", "--as-of", "HEAD")
    assert [h["citation"] for h in now["results"]] == [h["citation"].replace(f"@{h['rev'][:10]}", "")
                                                       for h in then["results"]]
    assert then["rerank"] == "embedding" and not any("not reranked" in w for w in then["warnings"])


@pytest.mark.slow
def test_a_watcher_holding_the_model_reads_for_a_process_that_has_not_loaded_it(reading):
    from helpers.watch import WatchProc
    from zmem.index import queryvector
    from zmem.index.catchup import open_index
    from zmem.index.embedding import providers
    from zmem.store.vectors import VectorStore
    from zmem.workspace.core import find_workspace
    ws = find_workspace(reading)
    conn = open_index(ws)
    try:
        here = providers(ws)
        here.primary.load()
        expected = queryvector.token_cover(ws, VectorStore(conn), lambda: here, 30.0)(QUERY, PASSAGES)
        watch = WatchProc(ws.root)
        try:
            watch.ready()
            other = providers(ws)
            served = queryvector.token_cover(ws, VectorStore(conn), lambda: other, 30.0)
            # the watcher loads the model at its first question ("no loading"), then reads
            assert wait_for(lambda: served(QUERY, PASSAGES) is not None)
            assert served(QUERY, PASSAGES) == pytest.approx(expected, abs=1e-5)
            assert not other.primary.loaded  # the watcher's model read them
        finally:
            watch.stop()
    finally:
        conn.close()


@pytest.mark.slow
def test_a_fresh_recall_served_by_a_watcher_is_read_without_loading_the_runtime(reading):
    from helpers.fresh import fresh
    from helpers.watch import WatchProc
    watch = WatchProc(reading)
    try:
        watch.ready()
        args = ("-C", str(reading), "recall", "which machine runs the gateway", "--mode", "hybrid", "--json")
        assert wait_for(lambda: json.loads(fresh(*args)[1].stdout).get("rerank") == "embedding")
        loaded, proc = fresh(*args)
        assert json.loads(proc.stdout)["rerank"] == "embedding"
        assert not [m for m in loaded["modules"] if m.split(".")[0] in ("onnxruntime", "numpy", "tokenizers")]
    finally:
        watch.stop()


def test_without_the_model_loaded_or_a_watcher_nothing_is_read(reading):
    from zmem.index import queryvector
    from zmem.index.catchup import open_index
    from zmem.index.embedding import providers
    from zmem.store.vectors import VectorStore
    from zmem.workspace.core import find_workspace
    ws = find_workspace(reading)
    conn = open_index(ws)
    try:
        provs = providers(ws)
        assert queryvector.token_cover(ws, VectorStore(conn), lambda: provs, 30.0)(QUERY, PASSAGES) is None
        assert not provs.primary.loaded  # never loaded for this alone
    finally:
        conn.close()


def test_a_model_behind_an_endpoint_cannot_read_and_the_answer_says_so(ws, server):
    from helpers.workspace import index_notes, use_server
    index_notes(ws, server, {"memory/2025-01-02.md": "# 2025-01-02\n\n- the gateway runs on the old laptop\n",
                                   "zmem.toml": '[recall]\nrerank = "embedding"\n'})
    use_server(server)
    got = recall_json(ws, "which machine runs the gateway", "--mode", "hybrid")
    assert got["mode"] == "hybrid" and "rerank" not in got and got["results"]
    assert any('not reranked: rerank = "embedding"' in w and "openai provider" in w for w in got["warnings"])
    then = recall_json(ws, "which machine runs the gateway", "--mode", "hybrid", "--as-of", "HEAD")
    assert any('not reranked: rerank = "embedding"' in w for w in then["warnings"]) and "rerank" not in then

