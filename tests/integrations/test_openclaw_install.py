"""docs/openclaw.md's "three commands", as a user runs them against a real OpenClaw (openclaw@2026.9.6 on
Node 24, from .ci/install_openclaw.sh's cache): zmem on ~/.local/bin only (the first command's symlink),
`openclaw plugins install` of the checkout's folder, or of the package `npm pack` makes (what an npm
install unpacks), with nothing else configured for the plugin, then a gateway start. The agent's
default workspace, a plain folder with notes, becomes a zmem workspace on first use and memory_search
answers from it with zmem's citations."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.openclaw_gateway import GIT, PLUGIN_DIR, ZMEM, Gateway, missing

pytestmark = pytest.mark.slow

MISSING = missing()


def packed(tmp_path: Path) -> Path:
    """The tarball `npm pack` makes of integrations/openclaw (its package.json `files` decide what is in it)."""
    npm = shutil.which("npm")
    if not npm:
        pytest.skip("npm is not installed on this machine")
    res = subprocess.run([npm, "pack", "--silent", str(PLUGIN_DIR)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "npm_config_cache": str(tmp_path / "npm-cache")})
    assert res.returncode == 0, res.stderr[-1500:]
    return tmp_path / res.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(bool(MISSING), reason=MISSING or "")
def test_the_three_commands_make_zmem_the_agents_memory(tmp_path):
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "memory" / "2026-11-26.md").write_text(
        "# 2026-11-26\n\n- Moved the OpenClaw gateway to the Raspberry Pi in the hallway closet.\n")
    (workspace / "todo.txt").write_text("not memory, but kept\n")
    # only the gateway and the agent's workspace are configured: nothing names the plugin or zmem
    config = {"agents": {"defaults": {"workspace": str(workspace), "skipBootstrap": True}}}
    # the gateway's PATH does not hold zmem: the plugin must find the first command's ~/.local/bin/zmem
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and not (Path(p) / "zmem").exists())
    gw = Gateway(config, None, env={"ZMEM_WATCH_AUTO": "0", "OLLAMA_HOST": "127.0.0.1:9", "PATH": path, **GIT})
    try:
        local_bin = gw.dir / "home" / ".local" / "bin"
        local_bin.mkdir(parents=True)
        (local_bin / "zmem").symlink_to(ZMEM)
        res = gw.cli("plugins", "install", str(PLUGIN_DIR), "--force", "--accept-capabilities")
        assert res.returncode == 0, res.stdout[-1500:] + res.stderr[-1500:]
        assert "Installed plugin: zmem" in res.stdout + res.stderr
        res = gw.cli("plugins", "disable", "memory-core")
        assert res.returncode == 0, res.stdout[-1500:] + res.stderr[-1500:]
        cfg = json.loads((gw.dir / "state" / "openclaw.json").read_text())
        assert cfg["plugins"]["slots"]["memory"] == "zmem"
        assert cfg["plugins"]["entries"]["zmem"]["enabled"] is True
        assert "config" not in cfg["plugins"]["entries"]["zmem"]  # no setting was needed
        assert cfg["plugins"]["entries"]["memory-core"]["enabled"] is False

        gw.start()
        assert "memory-core is still enabled" not in gw.log_text()
        assert "tool name conflict" not in gw.log_text()
        res = gw.invoke("memory_search", {"query": "where does the gateway run now"})
        assert res.get("ok") is True, json.dumps(res)[:1500] + gw.log_text()[-2000:]
        out = Gateway.payload(res)
        assert "backend" not in out.get("debug", {}), out  # zmem's answer, not the builtin index's
        assert out["results"], out
        assert out["results"][0]["citation"].startswith("memory/2026-11-26.md#L"), out
        assert "zmem init" in out.get("notice", ""), out  # said once, in the first result
        again = Gateway.payload(gw.invoke("memory_search", {"query": "Raspberry Pi"}))
        assert "notice" not in again
        assert again["results"][0]["citation"].startswith("memory/2026-11-26.md#L")
    finally:
        gw.close()
    # the plain folder is a zmem workspace now: a git repository with zmem's hooks, every file kept
    assert (workspace / ".git" / "hooks" / "post-commit").exists()
    assert (workspace / "todo.txt").read_text() == "not memory, but kept\n"
    assert "Raspberry Pi" in (workspace / "memory" / "2026-11-26.md").read_text()


@pytest.mark.skipif(bool(MISSING), reason=MISSING or "")
def test_the_package_npm_packs_installs_and_loads_as_the_memory_slot(tmp_path):
    """What `openclaw plugins install openclaw-zmem` will unpack once it is published: the files
    package.json lists must be all the plugin needs (OpenClaw loads it with its runtime). Without the
    second command (memory-core left enabled) the gateway's log says what to do."""
    gw = Gateway({"agents": {"defaults": {"workspace": str(tmp_path), "skipBootstrap": True}}}, None,
                 env={"ZMEM_WATCH_AUTO": "0", **GIT})
    try:
        res = gw.cli("plugins", "install", str(packed(tmp_path)), "--force", "--accept-capabilities")
        assert res.returncode == 0, res.stdout[-1500:] + res.stderr[-1500:]
        installed = gw.dir / "state" / "extensions" / "zmem"
        assert sorted(p.name for p in installed.iterdir() if p.name != "node_modules") == \
            ["README.md", "index.mjs", "lib", "openclaw.plugin.json", "package.json"]
        inspect = gw.cli("plugins", "inspect", "zmem", "--runtime", "--json")
        assert inspect.returncode == 0, inspect.stdout[-1500:] + inspect.stderr[-1500:]
        plugin = json.loads(inspect.stdout)["plugin"]
        assert plugin["status"] == "loaded" and plugin["kind"] == "memory" and plugin["memorySlotSelected"] is True
        assert {"memory_search", "memory_get", "memory_append"} <= set(plugin["toolNames"])
        # memory-core left enabled: its dreaming sidecar registers memory_search first; the plugin says so
        gw.start()
        warning = "memory-core is still enabled beside the zmem memory slot"
        assert warning in gw.log_text(), gw.log_text()[-3000:]
        assert "hint: openclaw plugins disable memory-core" in gw.log_text()
    finally:
        gw.close()
