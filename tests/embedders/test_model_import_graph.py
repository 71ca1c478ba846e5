"""The graph `zmem model import --format onnx` writes names each initializer once (each layer's GELU
constants used to be added again per layer: ONNX Runtime warned of duplicate initializers)."""
from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("numpy")
onnx = pytest.importorskip("onnx")

from helpers.tiny_bert import make_tiny_bert  # noqa: E402
from zmem.embedders.modelimport import import_onnx  # noqa: E402


def test_each_initializer_is_named_once(tmp_path):
    out = import_onnx(make_tiny_bert(tmp_path / "tiny-bert", layers=3), tmp_path / "tiny.onnx")["out"]
    graph = onnx.load(f"{out}/model.onnx").graph
    names = Counter(i.name for i in graph.initializer)
    assert names and max(names.values()) == 1
    assert {"half", "sqrt2"} <= set(names)
