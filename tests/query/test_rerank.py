"""The rerank stage through its real path: a tiny cross-encoder the test writes itself (seeded random
weights, BertForSequenceClassification as ms-marco-MiniLM-L-6-v2 is), converted by `zmem model import
--format onnx`, checked against a numpy forward pass, then `recall --rerank` on a real workspace:
the order and the cited lines are the cross-encoder's, and a missing model or extra is a warning."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.workspace import commit_all, recall_json, run, user_config, install_hint, write, zmem_proc  # noqa: E402
from helpers.tiny_bert import make_tiny_bert  # noqa: E402
from helpers.tiny_cross_encoder import make_tiny_cross_encoder, reference_scores  # noqa: E402
from zmem.query import rerank  # noqa: E402
from zmem.errors import ZmemError  # noqa: E402
from zmem.embedders.modelimport import import_onnx  # noqa: E402

QUERY = "where does peter run the gateway"
PASSAGES = ["the gateway runs on the mac studio", "peter prefers coffee", "backup server crash fixed",
            "Peter: the relay? It runs at home, on the old laptop.", "memory notes " * 20, "", "王伟 mac studio"]
# notes of two paragraphs, each matching the query's words: the reranker picks a paragraph and an order
NOTES = {
    "memory/2025-11-20.md": "# 2025-11-20\n\n## Notes\n\nPeter asked where the gateway should run.\n"
                            "We talked about the office.\n\nThe gateway runs on the mac studio now.\n"
                            "Peter set it up in the morning.\n",
    "memory/2025-11-21.md": "# 2025-11-21\n\n## Notes\n\nThe backup server had a crash; Peter fixed the socket.\n\n"
                            "Where does the relay run? Peter said the gateway host is the old laptop.\n",
    "memory/2025-11-22.md": "# 2025-11-22\n\n## Notes\n\nPeter prefers coffee in the morning.\n\n"
                            "The gateway runs every evening; Peter runs the deploy script.\n",
    "bank/world.md": "# World\n\nThe gateway is a small server.\nIt runs the whatsapp relay for peter.\n\n"
                     "Peter does not run the database; the office does.\n",
}


@pytest.fixture(scope="module")
def tiny_ce(tmp_path_factory) -> Path:
    return make_tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "tiny-cross-encoder")


@pytest.fixture(scope="module")
def tiny_ce_onnx(tiny_ce, tmp_path_factory) -> Path:
    return Path(import_onnx(tiny_ce, tmp_path_factory.mktemp("ce-onnx") / "tiny-ce.onnx")["out"])


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no model installed unless a test puts one
    rerank._loaded.clear()


def test_the_onnx_graph_scores_pairs_as_the_numpy_reference(tiny_ce, tiny_ce_onnx, tmp_path):
    encoder = rerank.CrossEncoder(tiny_ce_onnx)
    got, want = np.array(encoder.score(QUERY, PASSAGES)), np.array(reference_scores(tiny_ce, QUERY, PASSAGES))
    assert np.abs(got - want).max() < 1e-4, (got, want)
    assert want.std() > 0.1  # the scores differ: a real ordering to check
    # batches group pairs by length: one pair at a time gives the same scores
    alone = [encoder.score(QUERY, [p])[0] for p in PASSAGES]
    assert np.abs(np.array(alone) - got).max() < 1e-5
    # the model's limit truncates a long pair instead of failing
    assert len(encoder.score(QUERY, ["gateway " * 400])) == 1
    # int8 weights: close to f32
    int8 = rerank.CrossEncoder(Path(import_onnx(tiny_ce, tmp_path / "int8", outtype="int8")["out"]))
    assert np.corrcoef(int8.score(QUERY, PASSAGES), want)[0, 1] > 0.9


def test_import_writes_a_reranker_directory_and_says_how_to_use_it(tiny_ce, tmp_path):
    out = tmp_path / "models" / "ce.onnx"
    res = run(["model", "import", str(tiny_ce), "--format", "onnx", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "cross-encoder" in res.stdout and "[recall]\nrerank = " + json.dumps(str(out)) in res.stdout
    assert {p.name for p in out.iterdir()} >= {"model.onnx", "tokenizer.json", "config.json"}
    assert not (out / "1_Pooling").exists()
    assert json.loads((out / "config.json").read_text())["architectures"] == ["BertForSequenceClassification"]
    # llama.cpp does not run a cross-encoder: refused with the way that works
    res = run(["model", "import", str(tiny_ce), "--format", "gguf", "--out", str(tmp_path / "ce.gguf")])
    assert res.exit_code == 1 and "cross-encoder" in res.stderr and "--format onnx" in res.stderr


def test_an_embedding_model_or_a_bad_directory_is_not_a_reranker(tiny_ce, tmp_path):
    embedder = Path(import_onnx(make_tiny_bert(tmp_path / "bert"), tmp_path / "bert.onnx")["out"])
    with pytest.raises(rerank.RerankError, match="not a cross-encoder"):
        rerank.CrossEncoder(embedder)
    # and the other way round: the onnx embedding provider refuses a reranker
    from zmem.embedders.base import EmbeddingError
    from zmem.embedders.onnx import OnnxEmbedder
    reranker = Path(import_onnx(tiny_ce, tmp_path / "ce.onnx")["out"])
    with pytest.raises(EmbeddingError, match="is a cross-encoder"):
        OnnxEmbedder(str(reranker))
    with pytest.raises(rerank.RerankError, match="no reranker model directory"):
        rerank.load(str(tmp_path / "nowhere"))
    with pytest.raises(rerank.RerankError, match="not installed"):
        rerank.load("no-such-model")
    # two labels: not a relevance score
    two = make_tiny_cross_encoder(tmp_path / "two")
    from safetensors.numpy import load_file, save_file
    t = load_file(str(two / "model.safetensors"))
    t["classifier.weight"], t["classifier.bias"] = np.zeros((2, 32), np.float32), np.zeros(2, np.float32)
    save_file(t, str(two / "model.safetensors"))
    with pytest.raises(ZmemError, match="2 outputs"):
        import_onnx(two, tmp_path / "two.onnx")


def test_windows_are_lines_of_one_paragraph_and_headings_join_their_text():
    text = "# Day\n\n## Notes\nfirst line\nsecond line\n\n" + "x" * 400 + "\n- item one\n- item two\n"
    assert rerank.windows(text, 10) == [(12, 14), (16, 16), (17, 18)]
    assert rerank.windows("# Only a heading", 3) == [(3, 3)]


def _workspace(ws, tiny_ce_onnx, config=""):
    for rel, text in NOTES.items():
        write(ws, rel, text)
    commit_all(ws)
    user_config(f'[recall]\nrerank = "{tiny_ce_onnx}"\n{config}')


def _expected(tiny_ce, hits_without) -> list[tuple[str, int, int]]:
    """(path, first, last line of the best paragraph) per note, best first, by the numpy reference."""
    out = []
    for path in {h["path"] for h in hits_without}:
        lines = NOTES[path].split("\n")
        paragraphs = [w for w in rerank.windows(NOTES[path], 1)]
        texts = ["\n".join(lines[a - 1:b]) for a, b in paragraphs]
        scores = reference_scores(tiny_ce, QUERY, texts)
        best = int(np.argmax(scores))
        out.append((scores[best], path, *paragraphs[best]))
    return [x[1:] for x in sorted(out, reverse=True)]


def test_recall_rerank_orders_by_the_cross_encoder_and_cites_its_lines(ws, tiny_ce, tiny_ce_onnx):
    _workspace(ws, tiny_ce_onnx)
    plain = recall_json(ws, QUERY, "--no-rerank", "--k", "10")
    assert "rerank" not in plain
    reranked = recall_json(ws, QUERY, "--k", "10", "--explain")  # recall.rerank in the user's config
    assert reranked["rerank"] == "tiny-ce.onnx" and not reranked["warnings"]
    want = _expected(tiny_ce, [h for h in plain["results"] if h["path"] in NOTES])
    got = [(h["path"], h["start_line"], h["end_line"]) for h in reranked["results"] if h["path"] in NOTES]
    # each hit cites the paragraph the cross-encoder scores best (its lines, within the chunk)
    for path, first, last in want:
        hit = next(h for h in got if h[0] == path)
        assert hit[1:] == (first, last), (hit, first, last)
    assert [h[0] for h in got] == [w[0] for w in want]
    # and that differs from the fused order or lines: the reranker decided something
    assert got != [(h["path"], h["start_line"], h["end_line"]) for h in plain["results"] if h["path"] in NOTES]
    scores = [h["score"] for h in reranked["results"]]
    assert scores == sorted(scores, reverse=True) and all(0 < s < 1 for s in scores)
    assert all("rerank" in h["explain"] for h in reranked["results"])
    text = run(["-C", str(ws), "recall", QUERY, "--explain"])
    assert text.exit_code == 0 and "· rerank " in text.stdout


def test_a_missing_model_or_extra_is_a_warning_and_the_fused_order(ws, tiny_ce_onnx, tmp_path):
    for rel, text in NOTES.items():
        write(ws, rel, text)
    commit_all(ws)
    plain = recall_json(ws, QUERY)
    res = run(["-C", str(ws), "recall", QUERY, "--rerank", "--json"])  # no recall.rerank: the default name
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["results"] == plain["results"] and "rerank" not in out
    assert any(w.startswith(f"not reranked, results in fused order: the reranker {rerank.DEFAULT_MODEL} is "
                          "not installed")
               for w in out["warnings"]), out["warnings"]
    assert "warning: not reranked" in res.stderr
    # installed under its name in the model cache, it is found
    import shutil
    shutil.copytree(tiny_ce_onnx, tmp_path / "cache" / "zmem" / "models" / f"{rerank.DEFAULT_MODEL}.onnx")
    assert recall_json(ws, QUERY, "--rerank")["rerank"] == f"{rerank.DEFAULT_MODEL}.onnx"


@pytest.mark.slow
def test_without_onnxruntime_rerank_is_a_warning(ws, tiny_ce_onnx, tmp_path):
    """A Python without onnxruntime (a shadow package that fails to import, as a missing one does)."""
    _workspace(ws, tiny_ce_onnx)
    plain = recall_json(ws, QUERY, "--no-rerank")
    shadow = tmp_path / "shadow" / "onnxruntime"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'onnxruntime'\", "
                                        "name='onnxruntime')\n")
    path = os.pathsep.join([str(shadow.parent), os.environ.get("PYTHONPATH", "")])
    proc = zmem_proc("-C", str(ws), "recall", QUERY, "--rerank", "--json", env={"PYTHONPATH": path})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    out = json.loads(proc.stdout)
    assert out["results"] == plain["results"]
    assert any("needs onnxruntime" in w and install_hint("semantic") in w for w in out["warnings"]), out["warnings"]


def test_no_rerank_wins_over_the_config_and_facts_are_not_reranked(ws, tiny_ce_onnx):
    _workspace(ws, tiny_ce_onnx)
    write(ws, "memory/2025-11-23.md", "# 2025-11-23\n\n## Retain\n\n- W @Peter: runs the gateway.\n")
    commit_all(ws)
    assert "rerank" not in recall_json(ws, QUERY, "--no-rerank")
    facts = recall_json(ws, "gateway", "--entity", "Peter", "--rerank")
    assert "facts (--kind, --entity) are not reranked" in facts["warnings"]


def test_a_model_path_from_an_untrusted_zmem_toml_is_not_read(ws, tiny_ce_onnx):
    for rel, text in NOTES.items():
        write(ws, rel, text)
    write(ws, "zmem.toml", f'[recall]\nrerank = "{tiny_ce_onnx}"\n')
    commit_all(ws)
    out = recall_json(ws, QUERY)
    assert "rerank" not in out
    assert any(w.startswith("not reranked: zmem.toml sets recall.rerank to a path") for w in out["warnings"])
    assert run(["-C", str(ws), "trust"]).exit_code == 0
    assert recall_json(ws, QUERY)["rerank"] == "tiny-ce.onnx"


@pytest.mark.slow
def test_mcp_memory_search_reranks_when_asked(ws, tiny_ce_onnx, tmp_path):
    """A real `zmem mcp` session: rerank=true uses the model in the cache, false and left out do not."""
    pytest.importorskip("mcp")
    import asyncio
    import shutil
    from helpers.mcp_client import call, session
    for rel, text in NOTES.items():
        write(ws, rel, text)
    commit_all(ws)
    shutil.copytree(tiny_ce_onnx, tmp_path / "cache" / "zmem" / "models" / rerank.DEFAULT_MODEL)

    async def go():
        async with session(ws) as s:
            return [await call(s, "memory_search", query=QUERY, **extra)
                    for extra in ({"rerank": True}, {"rerank": False}, {})]
    asked, off, default = asyncio.run(go())
    assert asked["rerank"] == rerank.DEFAULT_MODEL and not asked["warnings"]
    assert "rerank" not in off and "rerank" not in default
    assert [r["citation"] for r in off["results"]] == [r["citation"] for r in default["results"]]


@pytest.mark.slow
def test_hybrid_recall_reranks_too(ws, tiny_ce, tiny_ce_onnx, tmp_path):
    """With vectors (the onnx provider on a tiny BERT), the fused hybrid candidates are reranked the same way."""
    bert = Path(import_onnx(make_tiny_bert(tmp_path / "bert"), tmp_path / "bert.onnx")["out"])
    for rel, text in NOTES.items():
        write(ws, rel, text)
    commit_all(ws)
    user_config(f'[recall]\nrerank = "{tiny_ce_onnx}"\n[embeddings]\nprovider = "onnx"\nmodel_path = "{bert}"\n')
    assert run(["-C", str(ws), "index"]).exit_code == 0
    plain = recall_json(ws, QUERY, "--mode", "hybrid", "--no-rerank", "--k", "10")
    res = recall_json(ws, QUERY, "--mode", "hybrid", "--k", "10", "--explain")
    assert res["mode"] == "hybrid" and res["rerank"] == "tiny-ce.onnx"
    want = _expected(tiny_ce, [h for h in plain["results"] if h["path"] in NOTES])
    got = [(h["path"], h["start_line"], h["end_line"]) for h in res["results"] if h["path"] in NOTES]
    assert got == want
    assert all(h["explain"]["vector_similarity"] is not None and "rerank" in h["explain"] for h in res["results"])
