"""`zmem model pull --outtype int8`: the real download code against the loopback Hub, then the
weights quantized as `model import --outtype int8` does; the manifest and `model list` say int8, and
the reranker runs it (issue 16: only a 2-layer int8 cross-encoder reranks 40 candidates in 150 ms)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.fake_hub import FakeHub  # noqa: E402
from helpers.tiny_cross_encoder import make_tiny_cross_encoder  # noqa: E402
from helpers.workspace import commit_all, recall_json, run, user_config, user_error, install_hint, write, zmem_proc  # noqa: E402
from zmem.embedders import modelpull  # noqa: E402
from zmem.embedders.modelimport import import_onnx  # noqa: E402
from zmem.query import rerank  # noqa: E402

L2, L6 = "ms-marco-MiniLM-L2-v2", "ms-marco-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def tiny_ce(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny cross-encoder: its safetensors directory and its ONNX export."""
    src = make_tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "ce", seed=3)
    return src, Path(import_onnx(src, tmp_path_factory.mktemp("onnx") / "ce.onnx")["out"])


def repo_files(tiny_ce, name: str) -> dict[str, bytes]:
    """The files as the catalog entry's repository holds them: L2 safetensors (converted on pull), L6 an ONNX export."""
    src, built = tiny_ce
    files = {"config.json": (src / "config.json").read_bytes(), "tokenizer.json": (built / "tokenizer.json").read_bytes()}
    if name == L2:
        files["model.safetensors"] = (src / "model.safetensors").read_bytes()
    else:
        files["onnx/model.onnx"] = (built / "model.onnx").read_bytes()
    return files


@pytest.fixture
def hub(monkeypatch):
    rerank._loaded.clear()
    with FakeHub() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server
    rerank._loaded.clear()


def serve(hub, monkeypatch, tiny_ce, name: str) -> None:
    """The real catalog entry (repository, revision, files) with the stand-in's checksums."""
    hub.serve_catalog(monkeypatch, name, repo_files(tiny_ce, name))


def target(name: str) -> Path:
    return Path(os.environ["HOME"]) / ".cache" / "zmem" / "models" / f"{name}.onnx"


@pytest.mark.parametrize("name", [L2, L6])
def test_pull_int8_quantizes_records_it_and_the_reranker_runs_it(ws, hub, monkeypatch, tiny_ce, name):
    serve(hub, monkeypatch, tiny_ce, name)
    res = run(["model", "pull", name, "--outtype", "int8", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    info = json.loads(res.stdout)
    assert info["outtype"] == "int8" and not info["already"]
    path = target(name)
    assert (path / "model_quantized.onnx").is_file() and not (path / "model.onnx").exists()
    assert json.loads((path / modelpull.MANIFEST).read_text())["outtype"] == "int8"
    assert {"config.json", "tokenizer.json"} <= set(info["checked"])  # the downloaded files were checked first
    listed = {m["name"]: m for m in json.loads(run(["model", "list", "--json"]).stdout)["models"]}
    assert listed[name]["installed"] and listed[name]["outtype"] == "int8"
    table = run(["model", "list"]).stdout
    assert any(line.startswith(name) and " int8 " in line for line in table.splitlines()), table

    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Notes\n\nPeter runs the gateway on the old laptop.\n\n"
                                      "The backup server crashed; the gateway kept running.\n")
    commit_all(ws)
    user_config(f'[recall]\nrerank = "{name}"\n')
    out = recall_json(ws, "where does peter run the gateway", "--k", "5")
    assert out["rerank"] == f"{name}.onnx" and not out["warnings"], out
    (encoder,) = rerank._loaded.values()
    assert encoder.model_file.name == "model_quantized.onnx"
    # one finite score per pair (how far int8 drifts from f32 on real weights is measured by no one yet;
    # on this random tiny model logits move by up to ~0.3, which says little about trained ones)
    scores = encoder.score("where does peter run the gateway", ["Peter runs the gateway.", "coffee at home"])
    assert len(scores) == 2 and all(abs(x) < 1e6 for x in scores)


def test_the_installed_precision_is_kept_until_asked_to_replace_it(hub, monkeypatch, tiny_ce):
    serve(hub, monkeypatch, tiny_ce, L2)
    assert run(["model", "pull", L2, "--outtype", "int8"]).exit_code == 0
    again = run(["model", "pull", L2, "--outtype", "int8"])
    assert again.exit_code == 0 and "already installed" in again.stdout and "int8" in again.stdout
    message = user_error(run(["model", "pull", L2]))  # f32 asked, int8 there
    assert "int8, not f32" in message and "--force" in message
    res = run(["model", "pull", L2, "--force", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["outtype"] == "f32"
    assert (target(L2) / "model.onnx").is_file() and not (target(L2) / "model_quantized.onnx").exists()


def test_int8_without_onnxruntime_is_refused_before_any_download(hub, monkeypatch, tiny_ce, tmp_path):
    serve(hub, monkeypatch, tiny_ce, L6)
    shadow = tmp_path / "shadow" / "onnxruntime"  # a Python without onnxruntime
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'onnxruntime'\", "
                                        "name='onnxruntime')\n")
    proc = zmem_proc("model", "pull", L6, "--outtype", "int8", env={"PYTHONPATH": str(shadow.parent)})
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("zmem: --outtype int8 needs onnxruntime") and lines[1] == f"hint: {install_hint('semantic')}"
    assert hub.requests == [] and not target(L6).exists()
