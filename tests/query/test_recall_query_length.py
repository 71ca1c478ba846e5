"""A recall query past MAX_QUERY_CHARS (a pasted document) is refused at once with a hint, on the command
line and over MCP alike (a 5 MB memory_search query took 12 s before an answer no one could use)."""
from __future__ import annotations

import asyncio

import pytest

from helpers.workspace import run
from zmem.memory import MAX_QUERY_CHARS

HINT = "hint: ask with the words that matter: a question, a name, an error code"


def test_a_query_longer_than_the_limit_is_an_error_with_a_hint(ws):
    long = "gateway " * (MAX_QUERY_CHARS // 8 + 1)
    res = run(["-C", str(ws), "recall", long])
    assert res.exit_code == 1
    assert res.stderr == f"zmem: the query is {len(long):,} characters long; at most 10,000\n{HINT}\n"
    res = run(["-C", str(ws), "recall", "gateway " * (MAX_QUERY_CHARS // 8 - 1)])
    assert res.exit_code == 0 and "memory/2025-11-24.md#L5" in res.stdout


def test_the_mcp_tool_refuses_it_as_a_tool_error(ws):
    pytest.importorskip("mcp")
    from zmem.mcp.server import build_server
    server = build_server(str(ws))
    try:
        res = asyncio.run(server.call_tool("memory_search", {"query": "x" * (MAX_QUERY_CHARS + 1)}))
        assert res.is_error
        assert res.content[0].text.splitlines()[1] == HINT
    finally:
        server.memory.close()
