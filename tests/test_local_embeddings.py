"""The local provider through real llama.cpp, on a tiny BERT the test writes itself, checked
against a plain numpy reference; `zmem model import` end to end."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import commit_all, recall_json, run, write
from tiny_bert import make_tiny_bert, reference_embed
from zmem.errors import ZmemError
from zmem.modelimport import import_model, resolve_model_source

pytest.importorskip("gguf")
pytest.importorskip("safetensors")

TEXTS = ["the machine that runs the gateway", "Peter prefers concise replies on whatsapp",
         "fixed the socket crash", "what does peter do in lisbon?", "coffee"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny") / "tiny-bert")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_model_directory_and_gguf_are_deterministic(tiny, tmp_path):
    again = make_tiny_bert(tmp_path / "second" / "tiny-bert")  # same name: the GGUF records it
    for name in ("model.safetensors", "vocab.txt", "config.json"):
        assert _sha(tiny / name) == _sha(again / name)
    a = import_model(tiny, tmp_path / "a.gguf")
    b = import_model(again, tmp_path / "b.gguf")
    assert _sha(Path(a["out"])) == _sha(Path(b["out"]))
    assert a["dimensions"] == 32 and a["layers"] == 2 and a["pooling"] == "mean"


@pytest.mark.parametrize("outtype,minimum", [("f32", 0.999), ("f16", 0.99)])
def test_llama_cpp_matches_the_reference(tiny, tmp_path, outtype, minimum):
    pytest.importorskip("llama_cpp")
    from zmem.embedders.llama import LlamaEmbedder
    info = import_model(tiny, tmp_path / f"tiny.{outtype}.gguf", outtype=outtype)
    got = np.array(LlamaEmbedder(info["out"]).embed(TEXTS))
    want = reference_embed(tiny, TEXTS)
    cos = (got * want).sum(1)
    assert cos.min() >= minimum, cos


def test_a_long_text_does_not_crash_the_process(tiny, tmp_path):
    pytest.importorskip("llama_cpp")
    info = import_model(tiny, tmp_path / "tiny.gguf")
    code = ("from zmem.embedders.llama import LlamaEmbedder; import sys; "
            f"v = LlamaEmbedder({info['out']!r}).embed(['the gateway ' * 800]); print(len(v[0]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GGML_NO_BACKTRACE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "32"


def test_import_errors_are_clear(tmp_path, monkeypatch):
    with pytest.raises(ZmemError) as e:
        import_model(tmp_path, tmp_path / "x.gguf")
    assert "config.json" in e.value.message and e.value.hint
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ZmemError) as e:
        import_model(tmp_path, tmp_path / "x.gguf")
    assert "gpt2" in e.value.message
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(ZmemError) as e:
        resolve_model_source("hf:sentence-transformers/all-MiniLM-L6-v2")
    assert "does not download" in e.value.message and e.value.hint
    from zmem.embedders.base import EmbeddingError
    from zmem.embedders.llama import LlamaEmbedder
    with pytest.raises(EmbeddingError):
        LlamaEmbedder(str(tmp_path / "missing.gguf"))


def test_hf_uri_resolves_from_the_local_cache(tiny, tmp_path, monkeypatch):
    snap = tmp_path / "hf" / "hub" / "models--org--tiny" / "snapshots" / "abc123"
    snap.parent.mkdir(parents=True)
    os.symlink(tiny, snap)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert resolve_model_source("hf:org/tiny") == snap


def test_cli_import_and_semantic_recall_with_the_local_provider(ws, tiny, tmp_path):
    pytest.importorskip("llama_cpp")
    out = tmp_path / "models" / "tiny.gguf"
    res = run(["model", "import", str(tiny), "--out", str(out)])
    assert res.exit_code == 0, res.output
    cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[embeddings]\nprovider = "local"\nmodel_path = "{out}"\n')
    write(ws, "bank/world.md", "# World\n\n- the gateway host is the mac studio in the office\n")
    commit_all(ws)
    res = run(["-C", str(ws), "index", "--json"])
    report = json.loads(res.stdout)["embeddings"]
    assert report["provider"] == "local" and report["pending"] == 0 and report["embedded"] > 0
    out = recall_json(ws, "which machine runs the gateway", "--mode", "vector", "--explain")
    assert out["mode"] == "vector" and out["results"]
    assert all(r["explain"]["vector_similarity"] is not None for r in out["results"])
    st = json.loads(run(["-C", str(ws), "status", "--json"]).stdout)
    assert st["embeddings"]["provider"] == "local" and st["embeddings"]["vectors"] > 0
