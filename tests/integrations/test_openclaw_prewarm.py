"""The plugin's prewarm in a real OpenClaw gateway (openclaw@2026.9.6): the default agent's zmem is started
with the gateway whatever the agent is called (here "work", no agent "main"), and an agent whose own
`prewarm` is true is started too, with its per-agent startTimeoutMs accepted by the config schema."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from helpers.openclaw_gateway import GIT, ZMEM, Gateway, git, missing, zmem

pytestmark = pytest.mark.slow

MISSING = missing()


def workspace(base: Path, name: str) -> Path:
    ws = base / name
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-11-24.md").write_text(f"# 2026-11-24\n\n- a note of {name}\n")
    git(ws, "init", "-q")  # a repository that was there: init commits nothing, the test does
    assert zmem("init", str(ws)).returncode == 0
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "memory")
    return ws


def test_prewarm_starts_the_default_agent_whatever_its_id_and_agents_that_ask(tmp_path):
    if MISSING:
        pytest.skip(MISSING)
    work, side, idle = workspace(tmp_path, "work"), workspace(tmp_path, "side"), workspace(tmp_path, "idle")
    config = {"agents": {"defaults": {"workspace": str(work), "skipBootstrap": True},
                         "entries": {"work": {"default": True, "workspace": str(work)},
                                     "side": {"workspace": str(side)}, "idle": {"workspace": str(idle)}}}}
    plugin = {"command": ZMEM, "agents": {"work": {"startTimeoutMs": 60000},
                                          "side": {"prewarm": True, "startTimeoutMs": 60000}}}
    with Gateway(config, plugin, env={"ZMEM_WATCH_AUTO": "0", "OLLAMA_HOST": "127.0.0.1:9", **GIT}) as gw:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            started = {ws for ws in (work, side, idle) if any(str(ws) in argv for argv in gw.zmem_servers())}
            if {work, side} <= started:
                break
            time.sleep(0.3)
        assert started == {work, side}, (started, gw.log_text()[-2000:])
