"""The onnx provider through real ONNX Runtime and tokenizers, on a tiny BERT the test writes
itself and converts with `zmem model import --format onnx` (no torch), checked against the plain
numpy forward pass in tiny_bert.py; semantic recall through the CLI on a real workspace."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.workspace import commit_all, recall_json, run, write, zmem_proc  # noqa: E402
from helpers.tiny_bert import make_tiny_bert, reference_embed  # noqa: E402
from zmem.embedders import make_embedder  # noqa: E402
from zmem.embedders.base import EmbeddingError  # noqa: E402
from zmem.embedders.onnx import OnnxEmbedder  # noqa: E402
from zmem.errors import ZmemError  # noqa: E402
from zmem.embedders.modelimport import import_onnx  # noqa: E402

# short and long (past the tiny model's 128 positions) in one batch: padding and truncation. (No
# literal "[CLS]": tokenizer.json reads it as the special token, as sentence-transformers does.)
TEXTS = ["the machine that runs the gateway", "Peter prefers concise replies on WhatsApp.",
         "fixed the socket crash (backup server, 12:30)", "what does peter do in lisbon?", "coffee",
         "Café naïve: l'hôtel à Lisbon", "王伟下周去北京出差 mac studio", "foo_bar x©y ok $5", "",
         "tab\there\nnew line", "memory notes " * 100]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny") / "tiny-bert")


@pytest.fixture(scope="module")
def tiny_onnx(tiny, tmp_path_factory) -> Path:
    return Path(import_onnx(tiny, tmp_path_factory.mktemp("onnx") / "tiny.onnx")["out"])


@pytest.mark.parametrize("pooling", ["mean", "cls"])
@pytest.mark.parametrize("outtype, minimum", [("f32", 0.9999), ("int8", 0.999)])
def test_onnxruntime_matches_the_numpy_reference(tmp_path, pooling, outtype, minimum):
    src = make_tiny_bert(tmp_path / "tiny-bert", pooling=pooling)
    info = import_onnx(src, tmp_path / "out", outtype=outtype)
    assert info["pooling"] == pooling and info["dimensions"] == 32 and info["layers"] == 2
    assert (tmp_path / "out" / info["model_file"]).is_file() and (tmp_path / "out" / "tokenizer.json").is_file()
    embedder = OnnxEmbedder(info["out"])
    got, want = np.array(embedder.embed(TEXTS)), reference_embed(src, TEXTS)
    assert got.shape == want.shape
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0)
    assert (got * want).sum(1).min() >= minimum
    # batching changes nothing: one text at a time gives the same vectors (int8 quantises each
    # batch's activations with its own scale: near-same)
    embedder.batch_size = 1
    alone = np.array(embedder.embed(TEXTS))
    assert np.abs(alone - got).max() < 1e-5 if outtype == "f32" else (alone * got).sum(1).min() >= minimum


def test_an_exported_tokenizer_json_and_onnx_folder_are_used(tiny, tiny_onnx, tmp_path):
    """The layout Hugging Face's onnx/ exports use: the graph in onnx/, the rest beside it."""
    hf = tmp_path / "hf-export"
    (hf / "onnx").mkdir(parents=True)
    for f in tiny_onnx.rglob("*"):
        if f.is_file():
            dest = hf / ("onnx" if f.name == "model.onnx" else "") / f.relative_to(tiny_onnx)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(f.read_bytes())
    embedder = OnnxEmbedder(str(hf))
    assert embedder.model_file == hf / "onnx" / "model.onnx"
    assert (np.array(embedder.embed(TEXTS[:3])) * reference_embed(tiny, TEXTS[:3])).sum(1).min() >= 0.9999


def test_prompts_from_the_model_config_and_the_fingerprint(tiny, tiny_onnx, tmp_path):
    src = make_tiny_bert(tmp_path / "e5-like")
    (src / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: ",
                                                                                   "document": "passage: "}}))
    e5 = OnnxEmbedder(import_onnx(src, tmp_path / "e5.onnx")["out"])
    assert (e5.query_prefix, e5.document_prefix) == ("query: ", "passage: ")
    q = np.array(e5.embed(["where is the gateway"], "query"))
    assert (q * reference_embed(src, ["query: where is the gateway"])).sum() >= 0.9999
    # the config's prefixes win, even empty ones
    plain = make_embedder({"provider": "onnx", "model_path": str(tmp_path / "e5.onnx"), "query_prefix": ""})
    assert plain.query_prefix == "" and plain.document_prefix == "passage: "
    # a different model, precision or prefix is a different fingerprint (vectors re-embedded)
    other = OnnxEmbedder(import_onnx(make_tiny_bert(tmp_path / "s1", seed=1), tmp_path / "s1.onnx")["out"])
    int8 = OnnxEmbedder(import_onnx(tiny, tmp_path / "q.onnx", outtype="int8")["out"])
    prints = {e.fingerprint() for e in (OnnxEmbedder(str(tiny_onnx)), e5, plain, other, int8)}
    assert len(prints) == 5
    assert OnnxEmbedder(str(tiny_onnx)).fingerprint() == OnnxEmbedder(str(tiny_onnx)).fingerprint()


def test_threads_are_set_and_capped(tiny_onnx):
    cores = os.cpu_count() or 1
    default = make_embedder({"provider": "onnx", "model_path": str(tiny_onnx)})
    assert default.threads == min(cores, 4)
    one = make_embedder({"provider": "onnx", "model_path": str(tiny_onnx), "threads": 1})
    one.embed(["x"])
    assert one._session.get_session_options().intra_op_num_threads == 1
    assert make_embedder({"provider": "onnx", "model_path": str(tiny_onnx), "threads": 999}).threads == cores


@pytest.mark.slow
def test_cli_import_index_and_hybrid_recall_with_the_onnx_provider(ws, tiny, tmp_path):
    out = tmp_path / "models" / "tiny.onnx"
    res = run(["model", "import", str(tiny), "--format", "onnx", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert 'provider = "onnx"' in res.stdout and str(out) in res.stdout
    cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[embeddings]\nprovider = "onnx"\nmodel_path = "{out}"\nthreads = 2\n')
    write(ws, "bank/world.md", "# World\n\n- the gateway host is the mac studio in the office\n")
    commit_all(ws)
    proc = zmem_proc("-C", str(ws), "index", "--json")  # the real executable, as a user runs it
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["embeddings"]
    assert report["provider"] == "onnx" and report["pending"] == 0 and report["embedded"] > 0
    res = recall_json(ws, "which machine runs the gateway", "--mode", "hybrid", "--explain")
    assert res["mode"] == "hybrid" and res["results"]
    assert any(r["explain"]["vector_similarity"] is not None for r in res["results"])
    assert any(r["path"] == "bank/world.md" for r in res["results"])
    st = json.loads(run(["-C", str(ws), "status", "--json"]).stdout)
    assert st["embeddings"]["provider"] == "onnx" and st["embeddings"]["vectors"] > 0


def _one_line_and_hint(proc, *needles):
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr and len(lines) == 2, proc.stderr
    assert lines[1].startswith("hint:")
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def test_a_missing_model_directory_is_one_line_and_a_hint(ws, tmp_path):
    cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[embeddings]\nprovider = "onnx"\nmodel_path = "{tmp_path / "nowhere"}"\n')
    _one_line_and_hint(zmem_proc("-C", str(ws), "embed"), "nowhere",
                       "--format onnx")
    (tmp_path / "empty").mkdir()
    cfg.write_text(f'[embeddings]\nprovider = "onnx"\nmodel_path = "{tmp_path / "empty"}"\n')
    _one_line_and_hint(zmem_proc("-C", str(ws), "embed"), "model.onnx")
    cfg.write_text('[embeddings]\nprovider = "onnx"\n')
    _one_line_and_hint(zmem_proc("-C", str(ws), "embed"), "model_path")


def test_missing_onnxruntime_is_one_line_and_a_hint(ws, tiny_onnx, tmp_path):
    """A Python without onnxruntime (a shadow package that fails to import, as a missing one does)."""
    shadow = tmp_path / "shadow" / "onnxruntime"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'onnxruntime'\", "
                                        "name='onnxruntime')\n")
    cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[embeddings]\nprovider = "onnx"\nmodel_path = "{tiny_onnx}"\n')
    path = os.pathsep.join([str(shadow.parent), os.environ.get("PYTHONPATH", "")])
    _one_line_and_hint(zmem_proc("-C", str(ws), "embed", env={"PYTHONPATH": path}),
                       "needs onnxruntime")


def test_import_onnx_errors_are_clear(tiny, tiny_onnx, tmp_path):
    with pytest.raises(ZmemError, match="already exists"):
        import_onnx(tiny, tiny_onnx)
    with pytest.raises(ZmemError, match="not for ONNX"):
        import_onnx(tiny, tmp_path / "x", outtype="q8_0")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ZmemError, match="no config.json"):
        import_onnx(empty, tmp_path / "x")
    assert not (tmp_path / "x").exists()
    # --force replaces a whole directory, atomically
    again = import_onnx(make_tiny_bert(tmp_path / "seed3", seed=3), tiny_onnx, force=True)
    assert Path(again["out"]) == tiny_onnx and not list(tiny_onnx.parent.glob("*.tmp")) + \
        list(tiny_onnx.parent.glob("*.old"))
    # a file that is not an ONNX graph
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model.onnx").write_bytes(b"not a model")
    (bad / "tokenizer.json").write_text((tiny_onnx / "tokenizer.json").read_text())
    with pytest.raises(EmbeddingError, match="onnxruntime cannot load"):
        OnnxEmbedder(str(bad)).embed(["x"])


def test_bm25_recall_does_not_import_onnxruntime(ws, tiny_onnx):
    cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[embeddings]\nprovider = "onnx"\nmodel_path = "{tiny_onnx}"\n')
    code = ("import sys; from zmem.cli.app import main; sys.argv = ['zmem', '-C', sys.argv[1], 'recall', 'gateway', "
            "'--mode', 'bm25']\ntry: main()\nexcept SystemExit: pass\n"
            "print([m for m in ('onnxruntime', 'tokenizers', 'numpy', 'onnx') if m in sys.modules])")
    import subprocess
    proc = subprocess.run([sys.executable, "-c", code, str(ws)], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout + proc.stderr
