"""A Python that cannot embed with the index's model says so: an index embedded with an onnx model,
read by a `zmem mcp` (and a `zmem recall`) whose Python has no onnxruntime and whose provider `auto`
therefore finds nothing, answers by keywords with a warning naming the model, the interpreter and the
fix, instead of `provider: none, mode: bm25, warnings: []`."""
from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from helpers.workspace import run, user_config, zmem_proc

pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("onnx")
pytest.importorskip("mcp")

from helpers.mcp_client import call, session  # noqa: E402


@pytest.fixture
def onnx_index(ws, tiny_onnx):
    """ws embedded with the tiny onnx model, then the user config back to the default (auto)."""
    user_config(f'[embeddings]\nprovider = "onnx"\nmodel_path = "{tiny_onnx}"\n')
    res = run(["-C", str(ws), "index", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["embeddings"]["embedded"] > 0, res.stdout + res.stderr
    user_config("")
    return ws


@pytest.fixture
def without_onnxruntime(tmp_path, monkeypatch):
    """PYTHONPATH with a sitecustomize that makes onnxruntime missing, as in a venv without it
    (importlib.util.find_spec answers None, an import fails)."""
    site = tmp_path / "no-onnxruntime"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['onnxruntime'] = None\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))


@pytest.mark.slow
def test_an_mcp_server_without_the_engine_warns_instead_of_quietly_answering_by_keywords(onnx_index,
                                                                                         without_onnxruntime):
    async def go():
        async with session(onnx_index) as s:
            return await call(s, "memory_search", query="gateway Mac Studio")
    out = asyncio.run(go())
    assert out["results"] and out["mode"] == "bm25" and out["provider"] == "none"
    (warning,) = [w for w in out["warnings"] if "cannot embed the query" in w]
    assert "onnx" in warning and "onnxruntime is not installed" in warning and sys.executable in warning
    assert "[semantic]" in warning


def test_a_recall_without_the_engine_says_so_on_stderr_and_in_the_json(onnx_index, without_onnxruntime):
    proc = zmem_proc("-C", str(onnx_index), "recall", "gateway", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["mode"] == "bm25" and any("onnxruntime is not installed" in w for w in out["warnings"])
    assert "onnxruntime is not installed" in proc.stderr


def test_with_the_engine_but_no_model_for_this_user_the_warning_says_that(onnx_index):
    proc = zmem_proc("-C", str(onnx_index), "recall", "gateway", "--json")
    out = json.loads(proc.stdout)
    (warning,) = [w for w in out["warnings"] if "cannot embed the query" in w]
    assert "the model is not installed for this user" in warning
    # the engine is installed: the fix is the model, not the semantic extra it already has
    assert "zmem model pull" in warning and "model_path" in warning and "[semantic]" not in warning


def test_provider_none_chose_keywords_and_is_not_warned(onnx_index):
    user_config('[embeddings]\nprovider = "none"\n')
    out = json.loads(zmem_proc("-C", str(onnx_index), "recall", "gateway", "--json").stdout)
    assert out["mode"] == "bm25" and out["warnings"] == []
