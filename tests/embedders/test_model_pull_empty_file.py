"""An empty file in a model's repository (a size of 0 is a size) is downloaded as an empty file:
the download took 0 >= 0 bytes for done before the file existed, and the check that followed said
`cannot write …/.downloads/…: No such file or directory`, a disk error the disk did not have."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.fake_hub import FakeHub  # noqa: E402
from helpers.tiny_cross_encoder import make_tiny_cross_encoder  # noqa: E402
from zmem.embedders import modelpull  # noqa: E402
from zmem.embedders.modelimport import import_onnx  # noqa: E402

L6 = "ms-marco-MiniLM-L6-v2"  # an ONNX export in its repository: the files are copied as they are


def test_an_empty_file_of_the_repository_is_pulled_as_an_empty_file(tmp_path, monkeypatch):
    built = Path(import_onnx(make_tiny_cross_encoder(tmp_path / "ce", seed=3), tmp_path / "ce.onnx")["out"])
    files = {"onnx/model.onnx": (built / "model.onnx").read_bytes(),
             "tokenizer.json": (built / "tokenizer.json").read_bytes(), "config.json": b""}
    with FakeHub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        hub.serve_catalog(monkeypatch, L6, files)
        pulled = modelpull.pull(L6)
    assert pulled["already"] is False
    assert (Path(pulled["path"]) / "config.json").read_bytes() == b""
    assert (Path(pulled["path"]) / "model.onnx").read_bytes() == files["onnx/model.onnx"]
