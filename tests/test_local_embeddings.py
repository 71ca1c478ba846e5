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

pytest.importorskip("gguf")
pytest.importorskip("safetensors")

from conftest import commit_all, recall_json, run, write  # noqa: E402
from tiny_bert import make_tiny_bert, reference_embed, wordpiece  # noqa: E402
from zmem.embedders.base import EmbeddingError  # noqa: E402
from zmem.errors import ZmemError  # noqa: E402
from zmem.modelimport import import_model, model_name, resolve_model_source  # noqa: E402

TEXTS = ["the machine that runs the gateway", "Peter prefers concise replies on WhatsApp.",
         "fixed the socket crash (backup server, 12:30)", "what does peter do in lisbon?", "coffee",
         "Café naïve: l'hôtel à Lisbon", "王伟下周去北京出差 mac studio", "foo_bar x©y ok😀 [CLS] $5", "", "tab\there\nnew line"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny") / "tiny-bert")


@pytest.fixture(scope="module")
def tiny_gguf(tiny, tmp_path_factory) -> Path:
    return Path(import_model(tiny, tmp_path_factory.mktemp("gguf") / "tiny.f32.gguf", outtype="f32")["out"])


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_model_directory_and_gguf_are_deterministic(tiny, tmp_path):
    again = make_tiny_bert(tmp_path / "second" / "tiny-bert")  # same name: the GGUF records it
    for name in ("model.safetensors", "vocab.txt", "config.json", "tokenizer_config.json", "1_Pooling/config.json"):
        assert _sha(tiny / name) == _sha(again / name)
    a = import_model(tiny, tmp_path / "a.gguf")
    b = import_model(again, tmp_path / "b.gguf")
    assert _sha(Path(a["out"])) == _sha(Path(b["out"]))
    assert {k: a[k] for k in ("arch", "dimensions", "layers", "vocab", "context", "pooling")} == \
        {"arch": "bert", "dimensions": 32, "layers": 2, "vocab": 224, "context": 128, "pooling": "mean"}
    assert a["warnings"] == []
    other = import_model(make_tiny_bert(tmp_path / "third" / "tiny-bert", seed=1), tmp_path / "c.gguf")
    assert _sha(Path(other["out"])) != _sha(Path(a["out"]))
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("prefix", ["bert.", "0.auto_model."])
def test_tensor_name_prefixes_are_stripped(tiny, tmp_path, prefix):
    prefixed = make_tiny_bert(tmp_path / "p" / "tiny-bert", prefix=prefix)
    a = import_model(prefixed, tmp_path / "a.gguf")
    b = import_model(tiny, tmp_path / "b.gguf")
    assert _sha(Path(a["out"])) == _sha(Path(b["out"]))


def test_gguf_layout_follows_llama_cpp_conventions(tiny_gguf):
    import gguf
    r = gguf.GGUFReader(str(tiny_gguf))
    types = {t.name: t.tensor_type.name for t in r.tensors}
    assert types["position_embd.weight"] == "F32" and types["token_types.weight"] == "F32"
    assert "blk.1.ffn_down.weight" in types and not any(n.startswith("pooler") for n in types)

    def field(name):
        f = r.fields[name]
        return f.contents() if hasattr(f, "contents") else f.parts[f.data[0]]
    assert field("general.architecture") == "bert" and field("tokenizer.ggml.model") == "bert"
    tokens = field("tokenizer.ggml.tokens")
    assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert "\u2581gateway" in tokens and "a" in tokens and "\u2581a" in tokens  # "##a" -> "a", "a" -> "▁a"
    assert field("tokenizer.ggml.bos_token_id") == 2 and field("tokenizer.ggml.seperator_token_id") == 3
    assert field("bert.attention.causal") is False


def test_llama_cpp_tokenizes_like_bert(tiny, tiny_gguf):
    pytest.importorskip("llama_cpp")
    from zmem.embedders.llama import LlamaEmbedder
    vocab = {t: i for i, t in enumerate((tiny / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1])}
    emb = LlamaEmbedder(str(tiny_gguf))
    for text in TEXTS:
        assert emb.tokens(text) == wordpiece(vocab, text), text


@pytest.mark.parametrize("outtype,minimum", [("f32", 0.999), ("f16", 0.99), ("q8_0", 0.98)])
def test_llama_cpp_matches_the_reference(tiny, tmp_path, outtype, minimum):
    pytest.importorskip("llama_cpp")
    from zmem.embedders.llama import LlamaEmbedder
    info = import_model(tiny, tmp_path / f"tiny.{outtype}.gguf", outtype=outtype)
    got = np.array(LlamaEmbedder(info["out"]).embed(TEXTS))
    want = reference_embed(tiny, TEXTS)
    cos = (got * want).sum(1)
    assert cos.min() >= minimum, cos
    # and the vectors tell texts apart (a model returning one constant vector would pass the above
    # only if the reference did too)
    assert (want @ want.T)[np.triu_indices(len(TEXTS), 1)].min() < 0.99


def test_cls_pooling_matches_the_reference(tmp_path):
    pytest.importorskip("llama_cpp")
    from zmem.embedders.llama import LlamaEmbedder
    src = make_tiny_bert(tmp_path / "cls-bert", seed=3, pooling="cls")
    info = import_model(src, tmp_path / "cls.gguf", outtype="f32")
    assert info["pooling"] == "cls"
    got = np.array(LlamaEmbedder(info["out"]).embed(TEXTS[:5]))
    cos = (got * reference_embed(src, TEXTS[:5])).sum(1)
    assert cos.min() >= 0.999, cos


def test_a_long_text_does_not_crash_the_process(tiny, tiny_gguf):
    """800+ tokens against a 128-position model: cut to [CLS] + 126 + [SEP], not SIGABRT."""
    pytest.importorskip("llama_cpp")
    text = "the gateway runs on the mac studio, " * 120
    code = ("import json, sys; from zmem.embedders.llama import LlamaEmbedder; "
            f"e = LlamaEmbedder({str(tiny_gguf)!r}); print(len(e.tokens(sys.argv[1]))); "
            "print(json.dumps(e.embed([sys.argv[1]])[0]))")
    proc = subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == ""  # llama.cpp's logging is silenced
    n_tokens, vector = proc.stdout.splitlines()
    assert int(n_tokens) == 128
    got = np.array(json.loads(vector))
    assert got.shape == (32,)
    assert float(got @ reference_embed(tiny, [text])[0]) >= 0.999


def test_the_fingerprint_follows_the_model_file(tiny_gguf, tmp_path):
    pytest.importorskip("llama_cpp")
    from zmem.embedders.llama import LlamaEmbedder
    other = import_model(make_tiny_bert(tmp_path / "tiny-bert", seed=7), tmp_path / tiny_gguf.name, outtype="f32")
    a, b = LlamaEmbedder(str(tiny_gguf)), LlamaEmbedder(other["out"])
    assert a.model.startswith(tiny_gguf.name + "@") and a.model != b.model
    assert a.fingerprint() != b.fingerprint()
    assert LlamaEmbedder(str(tiny_gguf), query_prefix="query: ").fingerprint() != a.fingerprint()


def test_import_errors_are_clear(tiny, tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ZmemError) as e:
        import_model(empty, tmp_path / "x.gguf")
    assert "config.json" in e.value.message and e.value.hint
    (empty / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ZmemError) as e:
        import_model(empty, tmp_path / "x.gguf")
    assert "gpt2" in e.value.message and e.value.hint
    (empty / "config.json").write_text("{not json")
    with pytest.raises(ZmemError) as e:
        import_model(empty, tmp_path / "x.gguf")
    assert "config.json" in e.value.message

    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "vocab.txt"):
        (broken / name).write_bytes((tiny / name).read_bytes())
    with pytest.raises(ZmemError) as e:  # no weights
        import_model(broken, tmp_path / "x.gguf")
    assert "safetensors" in e.value.message and e.value.hint
    (broken / "model.safetensors").write_bytes(b"version https://git-lfs.github.com/spec/v1\n")
    with pytest.raises(ZmemError) as e:  # a Git LFS pointer, not weights
        import_model(broken, tmp_path / "x.gguf")
    assert "model.safetensors" in e.value.message and e.value.hint
    (broken / "model.safetensors").write_bytes((tiny / "model.safetensors").read_bytes())
    (broken / "vocab.txt").unlink()
    with pytest.raises(ZmemError) as e:
        import_model(broken, tmp_path / "x.gguf")
    assert "vocab.txt" in e.value.message
    with pytest.raises(ZmemError):
        import_model(tiny, tmp_path / "x.gguf", outtype="q4_k")
    assert not (tmp_path / "x.gguf").exists()


def test_hf_uri_offline_and_without_network_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ZmemError) as e:
        resolve_model_source("hf:sentence-transformers/all-MiniLM-L6-v2")
    assert "cannot download hf:sentence-transformers/all-MiniLM-L6-v2" in e.value.message
    assert "offline" in e.value.message and "copy the model directory" in e.value.hint
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there: no network
    with pytest.raises(ZmemError) as e:
        resolve_model_source("hf:org/model")
    assert "cannot download hf:org/model" in e.value.message and "no network" in e.value.message
    assert not list((tmp_path / "cache").rglob("*.json"))  # nothing half-downloaded left behind
    for bad in ("hf:../etc", "hf:just-a-name", "hf:a/b/c"):
        with pytest.raises(ZmemError):
            resolve_model_source(bad)
    with pytest.raises(ZmemError):
        resolve_model_source(str(tmp_path / "no-such-dir"))


def test_hf_uri_resolves_from_the_local_cache(tiny, tmp_path, monkeypatch):
    snap = tmp_path / "hf" / "hub" / "models--org--tiny" / "snapshots" / "abc123"
    snap.parent.mkdir(parents=True)
    os.symlink(tiny, snap)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve_model_source("hf:org/tiny") == snap
    assert model_name(snap) == "org--tiny" and model_name(tiny) == "tiny-bert"
    newer = snap.parent / "def456"  # refs/main wins over the newest snapshot
    os.symlink(tiny, newer)
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("abc123")
    assert resolve_model_source("hf:org/tiny") == snap


def test_embedder_errors(tmp_path, tiny_gguf, monkeypatch):
    from zmem.embedders.llama import LlamaEmbedder
    with pytest.raises(EmbeddingError) as e:
        LlamaEmbedder(str(tmp_path / "missing.gguf"))
    assert "model import" in e.value.hint
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if the extra were not installed
    emb = LlamaEmbedder(str(tiny_gguf))
    with pytest.raises(EmbeddingError) as e:
        emb.embed(["x"])
    assert "llama-cpp-python" in e.value.message and "zmem[local]" in e.value.hint


def test_a_file_that_is_not_a_model_is_an_embedding_error(tmp_path):
    pytest.importorskip("llama_cpp")
    from zmem.embedders.llama import LlamaEmbedder
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf at all" * 100)
    with pytest.raises(EmbeddingError):
        LlamaEmbedder(str(junk)).embed(["x"])


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
