"""What `zmem mcp` costs every agent session: the real tools/list, as a real server process sends
it, stays within TOOLS_LIST_BUDGET characters (it was ~11,600 with the details in the descriptions;
they are in docs/agent-hooks.md now), each description saying when to use the tool and what a
citation is; and what a short description leaves out is said in the results where it matters."""
from __future__ import annotations

import asyncio
import json

import pytest

from helpers.mcp_raw import RawServer
from helpers.workspace import run, sessions_config

pytest.importorskip("mcp")

from helpers.mcp_client import call, session  # noqa: E402

TOOLS_LIST_BUDGET = 4000  # characters (issue 26)


def tools_list_line(root) -> str:
    """The tools/list response line a real `zmem mcp` writes, after the handshake."""
    server = RawServer(root)
    try:
        server.initialize()
        server.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        return server.line().decode("utf-8")
    finally:
        server.kill()


@pytest.mark.slow
def test_tools_list_fits_the_budget_and_each_description_says_when_and_what_a_citation_is(ws):
    line = tools_list_line(ws)
    tools = json.loads(line)["result"]["tools"]
    # as sent, and as a client that re-serializes it with spaces would count it
    assert len(line) <= TOOLS_LIST_BUDGET, len(line)
    assert len(json.dumps(tools)) <= TOOLS_LIST_BUDGET, len(json.dumps(tools))
    assert len(tools) == 7
    for t in tools:
        assert "#Lx-Ly" in t["description"], t["name"]
        schema = t["inputSchema"]
        assert "title" not in schema and all("title" not in p and "anyOf" not in p for p in schema["properties"].values())
    by_name = {t["name"]: t for t in tools}
    assert by_name["memory_search"]["description"].startswith("Search the user's long-term memory before answering")
    assert by_name["memory_context"]["description"].startswith("Call once as a session starts")
    assert by_name["memory_search"]["inputSchema"]["properties"]["kind"]["enum"] == \
        ["world", "experience", "opinion", "observation", "relation"]


@pytest.mark.slow
def test_a_search_with_session_hits_says_memory_get_cannot_read_them(ws):
    sessions = sessions_config()
    (sessions / "s.jsonl").write_text(json.dumps({"role": "user", "content": "the heron nests by the river"}) + "\n")
    assert run(["-C", str(ws), "index", "--sessions"]).exit_code == 0

    async def go():
        async with session(ws) as s:
            return (await call(s, "memory_search", query="heron"),
                    await call(s, "memory_search", query="gateway"))
    heron, gateway = asyncio.run(go())
    assert heron["results"][0]["source"] == "sessions"
    assert any("memory_get cannot read back" in w for w in heron["warnings"])
    assert not any("memory_get cannot read back" in w for w in gateway["warnings"])


@pytest.mark.slow
def test_a_search_the_index_could_not_catch_up_for_says_stale(ws):
    """As the CLI's JSON does: a client reading the structure must be able to tell that a snippet may
    no longer be what its lines hold (another process holds the index's lock)."""
    import fcntl
    import os

    from helpers.workspace import write

    async def go():
        async with session(ws) as s:
            fresh = await call(s, "memory_search", query="gateway")
            fd = os.open(ws / ".zmem" / "lock", os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)  # another writer is busy
            try:
                write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- the gateway moved to the attic\n")
                return fresh, await call(s, "memory_search", query="gateway")
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
    fresh, held = asyncio.run(go())
    assert "stale" not in fresh
    assert held["stale"] is True and any("stale" in w for w in held["warnings"]), held
