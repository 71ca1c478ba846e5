"""The MCP SDK's own client (stdio_client + ClientSession) driving a real `python -m zmem -C <ws> mcp`
subprocess; a test that imports this is skipped where the SDK is not installed."""
from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

# a submodule: tests/ is on sys.path, and where the SDK is missing its tests/mcp/ directory alone would
# pass for an `mcp` package
pytest.importorskip("mcp.client.stdio")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402


@asynccontextmanager
async def session(root: Path, *args: str, errlog=None):
    params = StdioServerParameters(command=sys.executable, args=["-m", "zmem", "-C", str(root), "mcp", *args],
                                   env=dict(os.environ))
    async with stdio_client(params, errlog=errlog or sys.stderr) as (read, write_):
        async with ClientSession(read, write_) as s:
            await s.initialize()
            yield s


async def call(s, tool: str, /, **arguments) -> dict:
    res = await s.call_tool(tool, arguments)
    assert not res.is_error, res.content[0].text
    out = json.loads(res.content[0].text)
    assert out == res.structured_content
    return out


async def error(s, tool: str, /, **arguments) -> str:
    res = await s.call_tool(tool, arguments)
    assert res.is_error, res.content
    return res.content[0].text
