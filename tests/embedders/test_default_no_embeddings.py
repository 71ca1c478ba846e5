"""No embedding provider configured is the documented default, not a degradation (issue 17: every
recall printed `warning: no embedding provider configured`). status and doctor say it once; recall
warns only when vectors were asked for, or when a configured provider cannot answer."""
from __future__ import annotations

import asyncio
import json

import pytest

from helpers.workspace import user_config, zmem_proc

NO_PROVIDER = "no embedding provider configured"


@pytest.mark.slow
def test_recall_in_the_default_setup_prints_no_warning(ws):
    for fmt in ("text", "json", "table", "md"):
        res = zmem_proc("-C", str(ws), "recall", "gateway Mac Studio", "--format", fmt)
        assert res.returncode == 0 and res.stdout and res.stderr == "", (fmt, res.stderr)
    out = json.loads(zmem_proc("-C", str(ws), "recall", "Peter", "--json").stdout)
    assert out["mode"] == "bm25" and out["warnings"] == [] and out["results"]


@pytest.mark.slow
def test_asking_for_vectors_without_a_provider_still_warns(ws):
    for mode in ("hybrid", "vector"):
        res = zmem_proc("-C", str(ws), "recall", "gateway", "--mode", mode, "--json")
        assert res.returncode == 0 and NO_PROVIDER in res.stderr
        assert any(NO_PROVIDER in w for w in json.loads(res.stdout)["warnings"])
    (ws / "zmem.toml").write_text('[recall]\nmode = "vector"\n')  # asked for in the config
    assert NO_PROVIDER in zmem_proc("-C", str(ws), "recall", "gateway").stderr


@pytest.mark.slow
def test_a_configured_provider_that_cannot_run_still_warns(ws):
    user_config('[embeddings]\nprovider = "local"\nmodel_path = "/nonexistent/model.gguf"\n')
    res = zmem_proc("-C", str(ws), "recall", "gateway")
    assert res.returncode == 0 and "no model file" in res.stderr
    assert "none configured" not in zmem_proc("-C", str(ws), "status").stdout


def test_status_and_doctor_say_it_once(ws):
    status = zmem_proc("-C", str(ws), "status")
    assert status.returncode == 0 and status.stderr == ""
    line = next(x for x in status.stdout.splitlines() if x.startswith("embeddings:"))
    assert "none configured — keyword (BM25) recall" in line and "Semantic recall" in line
    doctor = zmem_proc("-C", str(ws), "doctor")
    emb = [x for x in doctor.stdout.splitlines() if "] embeddings:" in x]
    assert emb == ["[ok  ] embeddings: " + line.split(":", 1)[1].strip()], doctor.stdout


@pytest.mark.slow
def test_mcp_memory_search_has_no_warning_in_the_default_setup(ws):
    import pytest
    pytest.importorskip("mcp")
    from helpers.mcp_client import call, session

    async def go():
        async with session(ws) as s:
            return await call(s, "memory_search", query="gateway Mac Studio")
    out = asyncio.run(go())
    assert out["results"] and out["mode"] == "bm25" and out["provider"] == "none" and out["warnings"] == []
