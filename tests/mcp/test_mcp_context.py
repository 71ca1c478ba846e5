"""memory_context over a real `zmem mcp`: the same object `zmem context --json` prints, the server's
scope by default, and a group server refusing to hand out the private scope."""
from __future__ import annotations

import asyncio

import pytest

from helpers.workspace import commit_all, run_json, today_log, write

pytest.importorskip("mcp")

from helpers.mcp_client import call, error, session  # noqa: E402


@pytest.mark.slow
def test_memory_context_returns_what_zmem_context_prints_in_the_servers_scope(ws):
    write(ws, "MEMORY.md", "# Memory\n\n- The alarm code is zebra-4411.\n")
    write(ws, today_log(), "## Retain\n\n- W @Peter: Is in Porto today.\n")
    commit_all(ws)

    async def go(*args):
        async with session(ws, *args) as s:
            out = {"default": await call(s, "memory_context"),
                   "small": await call(s, "memory_context", budget=300, scope="group")}
            if args:
                out["refused"] = await error(s, "memory_context", scope="private")
            return out
    private = asyncio.run(go())
    assert private["default"] == run_json(["-C", str(ws), "context", "--json"])[0]
    assert "zebra-4411" in private["default"]["text"]
    assert private["small"] == run_json(["-C", str(ws), "context", "--json", "--budget", "300", "--scope", "group"])[0]
    group = asyncio.run(go("--scope", "group"))
    assert group["default"]["scope"] == "group" and "zebra-4411" not in group["default"]["text"]
    assert "Porto" in group["default"]["text"]
    assert group["refused"] == ("this server serves the group scope, which never returns private files\n"
                                "hint: leave scope out, or read with a server started with `zmem mcp --scope private`")
