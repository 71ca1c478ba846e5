"""`zmem model import` of a hostile model directory fails at once, with one line and a hint, before it
sizes anything by what the config claims: a config.json claiming 1,000,000 layers grew the process past
5 GB before failing. Real processes under an address-space limit, the tiny generated BERT."""
from __future__ import annotations

import json
import resource
import subprocess
import time

import pytest

pytest.importorskip("numpy")
pytest.importorskip("safetensors")

from helpers.tiny_bert import make_tiny_bert  # noqa: E402
from helpers.workspace import zmem_exe  # noqa: E402

LIMIT = 3 * 1024 ** 3  # address space: far above what importing the tiny model takes, far below 5 GB


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _claim(src, **config) -> None:
    path = src / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **config}))


@pytest.mark.parametrize("fmt", ["gguf", "onnx"])
def test_a_config_claiming_a_million_layers_is_refused_at_once(tmp_path, fmt):
    pytest.importorskip("gguf" if fmt == "gguf" else "onnx")
    src = make_tiny_bert(tmp_path / "tiny-bert")  # two layers of weights
    _claim(src, num_hidden_layers=1_000_000)
    t = time.monotonic()
    proc = subprocess.run([zmem_exe(), "model", "import", str(src), "--format", fmt, "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, preexec_fn=_limited)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        f"zmem: {src / 'config.json'} says num_hidden_layers = 1000000, but the weights hold 2 encoder layers",
        "hint: is model.safetensors complete and the config's num_hidden_layers right?"]
    assert time.monotonic() - t < 60 and not (tmp_path / "out").exists()


def test_a_config_claiming_no_layers_is_refused(tmp_path):
    pytest.importorskip("gguf")
    from zmem.embedders.modelimport import import_model
    src = make_tiny_bert(tmp_path / "tiny-bert")
    _claim(src, num_hidden_layers=0)
    from zmem.errors import ZmemError
    with pytest.raises(ZmemError, match="num_hidden_layers = 0"):
        import_model(src, tmp_path / "zero.gguf")
