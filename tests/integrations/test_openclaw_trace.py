"""ZMEM_TRACE through the OpenClaw plugin (integrations/openclaw/ run by Node with a stand-in for
OpenClaw's plugin API, against a real `zmem mcp`): each tool call leaves a plugin line whose request
to zmem mcp is the mcp line with the same process and id, and their times are in order on the one
clock both read — what bench/bench_openclaw.py splits a call's time with."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.openclaw_gateway import NODE, PLUGIN_DIR, missing

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
ZMEM = str(Path(sys.executable).with_name("zmem"))


@pytest.mark.slow  # a real zmem mcp process (~2 s)
@pytest.mark.skipif(not NODE.exists(), reason=str(missing()))
def test_a_tool_call_is_traced_in_the_plugin_and_in_zmem_mcp_on_one_clock(ws, tmp_path):
    trace = tmp_path / "trace.jsonl"
    res = subprocess.run([str(NODE), str(HELPERS / "openclaw_trace.mjs"), str(PLUGIN_DIR), str(ws), ZMEM],
                         env={**os.environ, "ZMEM_TRACE": str(trace), "ZMEM_WATCH_AUTO": "0"},
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["get"]["status"] == "ok" and out["hit"]["path"]
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    served = {(r["pid"], r["id"]): r for r in lines if r["src"] == "mcp"}
    calls = [r for r in lines if r["src"] == "plugin"]
    assert [r["tool"] for r in calls] == ["memory_search", "memory_get"]
    # the first call also waited for zmem mcp to start (initialize, tools/list)
    assert [c["method"] for c in calls[0]["calls"]] == ["initialize", "tools/list", "tools/call"]
    for rec in calls:
        call = rec["calls"][-1]
        mcp = served[call["pid"], call["id"]]
        assert mcp["tool"] == rec["tool"]
        times = [rec["enter"], call["sent"], mcp["read"], mcp["start"], mcp["end"], mcp["reply"], call["answered"],
                 rec["exit"]]
        assert times == sorted(times), rec
