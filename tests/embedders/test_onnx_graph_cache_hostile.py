"""Hostile cases for the onnx provider's cache of optimised graphs (zmem/embedders/onnx.py `_session`):
a model replaced in place keeping its size and mtime (`cp` then `touch -r`), a half-written weights
file. Never vectors of another model, never a crash. Real ONNX Runtime on the tiny BERT."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.tiny_bert import make_tiny_bert  # noqa: E402
from zmem.embedders.modelimport import import_onnx  # noqa: E402
from zmem.embedders.onnx import GRAPHS, OnnxEmbedder  # noqa: E402
from zmem.workspace.config import user_cache_dir  # noqa: E402

QUERIES = ["the machine that runs the gateway", "王伟下周去北京出差 mac studio", "Café naïve: l'hôtel à Lisbon"]


def _model(tmp_path: Path, name: str, seed: int = 0) -> Path:
    return Path(import_onnx(make_tiny_bert(tmp_path / f"{name}-bert", seed=seed), tmp_path / f"{name}.onnx")["out"])


def _vectors(model: Path) -> np.ndarray:
    return np.array(OnnxEmbedder(str(model)).embed(QUERIES, "query"))


def _entries() -> list[Path]:
    root = user_cache_dir() / GRAPHS
    return sorted(p for p in root.iterdir() if not p.name.endswith(".tmp")) if root.is_dir() else []


def test_a_model_replaced_with_the_same_size_and_mtime_is_not_answered_from_the_old_copy(tmp_path):
    model, other = _model(tmp_path, "tiny"), _model(tmp_path, "other", seed=7)
    file, new = model / "model.onnx", other / "model.onnx"
    assert file.stat().st_size == new.stat().st_size and file.read_bytes() != new.read_bytes()
    want = _vectors(other)
    old = _vectors(model)  # saves the copy of the first model
    assert np.abs(old - want).max() > 1e-3
    st = file.stat()
    file.write_bytes(new.read_bytes())  # `cp other.onnx model.onnx; touch -r saved model.onnx`
    os.utime(file, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (file.stat().st_size, file.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert np.abs(_vectors(model) - want).max() < 1e-6


def test_a_half_written_weights_file_is_not_used(tmp_path):
    model = _model(tmp_path, "tiny")
    want = _vectors(model)
    [entry] = _entries()
    data = entry / "model.data"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])  # a full disk while it was saved
    assert np.abs(_vectors(model) - want).max() < 1e-6
