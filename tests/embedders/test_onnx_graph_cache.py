"""The onnx provider's cache of optimised graphs (zmem/embedders/onnx.py `_session`): the first load
saves the model's optimised graph with its weights in a file of their own, later loads map that file.
Checked with real ONNX Runtime on the tiny BERT: the same vectors as the model file loaded as it is,
a changed model or a damaged copy never used, and no cache at all still embeds."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.tiny_bert import make_tiny_bert  # noqa: E402
from zmem.embedders.base import normalize  # noqa: E402
from zmem.embedders.modelimport import import_onnx  # noqa: E402
from zmem.embedders.onnx import GRAPHS, OnnxEmbedder  # noqa: E402
from zmem.workspace.config import user_cache_dir  # noqa: E402

QUERIES = ["the machine that runs the gateway", "王伟下周去北京出差 mac studio", "Café naïve: l'hôtel à Lisbon"]
DOCS = ["Peter prefers concise replies on WhatsApp.", "fixed the socket crash (backup server, 12:30)", "coffee",
        "memory notes " * 100]


@pytest.fixture
def model(tmp_path) -> Path:
    return Path(import_onnx(make_tiny_bert(tmp_path / "tiny-bert"), tmp_path / "tiny.onnx")["out"])


def plain_vectors(model: Path, texts: list[str]) -> np.ndarray:
    """What ONNX Runtime makes from the model file itself, loaded the way zmem did before the cache."""
    import onnxruntime as ort
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    tok.enable_truncation(max_length=128)
    session = ort.InferenceSession(str(model / "model.onnx"), providers=["CPUExecutionProvider"])
    out = []
    for text in texts:
        e = tok.encode(text)
        ids = np.array([e.ids], dtype=np.int64)
        mask = np.array([e.attention_mask], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        out.append(normalize(((hidden * mask[:, :, None]).sum(1) / mask.sum())[0].astype(np.float64).tolist()))
    return np.array(out)


def entries() -> list[Path]:
    root = user_cache_dir() / GRAPHS
    return sorted(p for p in root.iterdir() if not p.name.endswith(".tmp")) if root.is_dir() else []


def mapped(path: Path) -> bool:
    """Whether this process maps the file (ONNX Runtime reads the cached weights that way)."""
    return str(path) in Path("/proc/self/maps").read_text()


def test_the_first_load_saves_the_graph_and_later_loads_map_it_with_the_same_vectors(model):
    want_queries, want_docs = plain_vectors(model, QUERIES), plain_vectors(model, DOCS)
    first = OnnxEmbedder(str(model))
    got = np.array([first.embed([q], "query")[0] for q in QUERIES])
    assert np.abs(got - want_queries).max() < 1e-6
    [entry] = entries()
    assert {p.name for p in entry.iterdir()} == {"model.onnx", "model.data", "source.json"}
    assert json.loads((entry / "source.json").read_text())["model"] == str((model / "model.onnx").resolve())
    for kind, texts, want in (("query", QUERIES, want_queries), ("document", DOCS, want_docs)):
        again = OnnxEmbedder(str(model))  # a new process's provider: the cached copy, nothing written
        if kind == "query":  # one query at a time, as a fresh recall embeds it (no prepacking)
            got = np.array([again.embed([q], "query")[0] for q in texts])
        else:  # a batch, as `zmem embed` and the watcher load it
            again.load()
            got = np.array(again.embed(texts, "document"))
        assert np.abs(got - want).max() < 1e-6
        assert mapped((entry / "model.data").resolve())
    assert entries() == [entry]


def test_a_changed_model_file_gets_a_new_copy_and_the_old_one_is_removed(model, tmp_path):
    OnnxEmbedder(str(model)).embed(["x"], "query")
    [old] = entries()
    other = Path(import_onnx(make_tiny_bert(tmp_path / "other-bert", seed=7), tmp_path / "other.onnx")["out"])
    (model / "model.onnx").write_bytes((other / "model.onnx").read_bytes())  # same path, new weights
    os.utime(model / "model.onnx", ns=(1, 1))  # mtime alone would also do: the key holds it
    got = np.array(OnnxEmbedder(str(model)).embed(QUERIES, "query"))
    assert np.abs(got - plain_vectors(model, QUERIES)).max() < 1e-6
    [new] = entries()
    assert new != old and not old.exists()


@pytest.mark.parametrize("damage", ["graph", "weights", "source"])
def test_a_damaged_copy_is_not_used_and_is_written_again(model, damage):
    OnnxEmbedder(str(model)).embed(["x"], "query")
    [entry] = entries()
    if damage == "graph":
        (entry / "model.onnx").write_bytes(b"not a model")
    elif damage == "weights":
        (entry / "model.data").write_bytes(b"")
    else:
        (entry / "source.json").unlink()
    got = np.array(OnnxEmbedder(str(model)).embed(QUERIES, "query"))
    assert np.abs(got - plain_vectors(model, QUERIES)).max() < 1e-6
    if damage != "source":  # a copy without its source.json still loads; it is only never pruned
        assert (entry / "model.onnx").read_bytes() != b"not a model" and (entry / "model.data").stat().st_size > 0


def test_no_cache_directory_still_embeds(model, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # zmem/onnx-graphs cannot be made under a file
    got = np.array(OnnxEmbedder(str(model)).embed(QUERIES, "query"))
    assert np.abs(got - plain_vectors(model, QUERIES)).max() < 1e-6


@pytest.mark.slow
def test_processes_writing_the_copy_at_the_same_time_all_embed(model):
    """Each writes its own temporary copy and renames it into place; the later ones keep their session."""
    import subprocess
    import sys
    code = ("import json, sys; from zmem.embedders.onnx import OnnxEmbedder; "
            "print(json.dumps(OnnxEmbedder(sys.argv[1]).embed(sys.argv[2:], 'query')))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(model), *QUERIES], stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    want = plain_vectors(model, QUERIES)
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0 and np.abs(np.array(json.loads(out)) - want).max() < 1e-6
    [entry] = entries()
    assert not [p for p in entry.parent.iterdir() if p.name.endswith(".tmp")]
