"""What makes the rerank stage cheaper (issue 16's "40 candidates <= 150 ms"): the 2-layer catalog
reranker, pulled as safetensors from a loopback Hub and converted, reranks a recall; and the
reranker's ONNX Runtime session lets idle threads sleep instead of spinning (bench/README.md)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")

from helpers.fake_hub import FakeHub  # noqa: E402
from helpers.tiny_cross_encoder import make_tiny_cross_encoder  # noqa: E402
from helpers.workspace import commit_all, recall_json, run, user_config, write  # noqa: E402
from zmem.embedders import modelpull  # noqa: E402
from zmem.embedders.modelimport import import_onnx  # noqa: E402
from zmem.query import rerank  # noqa: E402

L2 = "ms-marco-MiniLM-L2-v2"


@pytest.fixture(scope="module")
def tiny_ce_repo(tmp_path_factory) -> dict[str, bytes]:
    """A tiny cross-encoder as the L2 repository holds it: safetensors weights, config.json, tokenizer.json."""
    src = make_tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "ce", seed=3)
    built = Path(import_onnx(src, tmp_path_factory.mktemp("onnx") / "ce.onnx")["out"])
    return {"model.safetensors": (src / "model.safetensors").read_bytes(),
            "config.json": (src / "config.json").read_bytes(),
            "tokenizer.json": (built / "tokenizer.json").read_bytes()}


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    rerank._loaded.clear()
    yield
    rerank._loaded.clear()


def test_the_two_layer_catalog_reranker_is_pulled_converted_and_reranks_a_recall(ws, tiny_ce_repo, monkeypatch):
    entry = modelpull.catalog_entry(L2)
    assert entry.kind == "reranker" and entry.convert and re.fullmatch("[0-9a-f]{40}", entry.revision)
    assert all(re.fullmatch("[0-9a-f]{64}", sha) for _, _, sha in entry.files)  # every file pinned
    assert {local for _, local, _ in entry.files} == set(tiny_ce_repo)
    with FakeHub() as hub:  # the real entry with the stand-in's checksums in place of the real model's
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        hub.serve_catalog(monkeypatch, L2, tiny_ce_repo)
        res = run(["model", "pull", L2])
    assert res.exit_code == 0, res.output + res.stderr
    target = Path(os.environ["HOME"]) / ".cache" / "zmem" / "models" / f"{L2}.onnx"
    assert (target / "model.onnx").is_file() and not (target / "model.safetensors").exists()
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Notes\n\nPeter runs the gateway on the old laptop.\n\n"
                                      "The backup server crashed; the gateway kept running.\n")
    commit_all(ws)
    user_config(f'[recall]\nrerank = "{L2}"\n')
    out = recall_json(ws, "where does peter run the gateway", "--k", "5")
    assert out["rerank"] == f"{L2}.onnx" and not out["warnings"], out
    assert out["results"] and all(0 < h["score"] < 1 for h in out["results"])


def test_the_reranker_session_lets_idle_threads_sleep(tmp_path):
    """Spinning pool threads burned about a third of the stage's CPU on 2 cores and gave nothing back."""
    model = Path(import_onnx(make_tiny_cross_encoder(tmp_path / "ce"), tmp_path / "ce.onnx")["out"])
    encoder = rerank.CrossEncoder(model, threads=2)
    assert len(encoder.score("where is the gateway", ["on the mac studio", "at home"])) == 2
    options = encoder._session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_warm_reranker_loads_the_configured_model_before_the_first_recall(ws, tmp_path):
    """What `zmem mcp` runs in the background at start: the first reranked search then finds it loaded."""
    from zmem.memory import warm_reranker
    from zmem.workspace.core import find_workspace
    warm_reranker(find_workspace(str(ws)))
    assert not rerank._loaded  # no recall.rerank: nothing loaded
    model = Path(import_onnx(make_tiny_cross_encoder(tmp_path / "ce"), tmp_path / "ce.onnx")["out"])
    user_config(f'[recall]\nrerank = "{model}"\n')
    warm_reranker(find_workspace(str(ws)))
    (encoder,) = rerank._loaded.values()
    assert encoder._session is not None
    out = recall_json(ws, "gateway", "--k", "3")
    assert out["rerank"] == "ce.onnx" and list(rerank._loaded.values()) == [encoder]
    user_config('[recall]\nrerank = "no-such-model"\n')
    warm_reranker(find_workspace(str(ws)))  # the recall will say so; warming stays silent
    import shutil
    broken = Path(shutil.copytree(model, tmp_path / "broken.onnx"))
    (broken / "model.onnx").write_bytes(b"not a graph")
    user_config(f'[recall]\nrerank = "{broken}"\n')
    warm_reranker(find_workspace(str(ws)))
    out = recall_json(ws, "gateway", "--k", "3")
    assert "rerank" not in out and any("not reranked" in w for w in out["warnings"])
