"""`zmem mcp`'s unlisted tools, for programs such as the OpenClaw plugin: memory_status (`zmem status
--json` from the server's own index) and memory_commit (commit memory files an agent's own file tool
wrote). They answer tools/call but stay out of tools/list, which every agent session carries."""
from __future__ import annotations

import asyncio
import json

import pytest

from helpers.workspace import git, run, write

pytest.importorskip("mcp")

from helpers.mcp_client import call, error, session  # noqa: E402


@pytest.mark.slow
def test_status_and_commit_answer_but_are_not_listed(ws):
    log = write(ws, "memory/2025-11-30.md", "# 2025-11-30\n\n## Retain\n- W @Ana: Switched to decaf.\n")

    async def go():
        async with session(ws) as s:
            listed = {t.name for t in (await s.list_tools()).tools}
            before = await call(s, "memory_status")
            committed = await call(s, "memory_commit", paths=[str(log)], by="a test's file tool")
            again = await call(s, "memory_commit", paths=["memory/2025-11-30.md"])
            after = await call(s, "memory_status")
            refused = await error(s, "memory_commit", paths=["zmem.toml"])
            escaped = await error(s, "memory_commit", paths=["../outside.md"])
            found = await call(s, "memory_search", query="decaf", entity="Ana")
            return listed, before, committed, again, after, refused, escaped, found

    listed, before, committed, again, after, refused, escaped, found = asyncio.run(go())
    assert not {"memory_status", "memory_commit"} & listed
    printed = json.loads(run(["-C", str(ws), "status", "--json"]).stdout)
    assert (after["files"], after["chunks"]) == (printed["files"], printed["chunks"])
    assert "memory/2025-11-30.md" in before["dirty"] and after["dirty"] == [] and after["head"] == committed["commit"]
    assert committed == {"paths": ["memory/2025-11-30.md"], "commit": git(ws, "rev-parse", "HEAD"), "committed": True}
    assert again["committed"] is False and again["commit"] == committed["commit"]
    assert git(ws, "log", "-1", "--format=%B").startswith("zmem: memory/2025-11-30.md\n\nwritten by a test's file tool")
    assert "not a Markdown memory file: zmem.toml" in refused and "hint:" in refused
    assert "escapes the workspace" in escaped and "hint:" in escaped
    assert found["results"][0]["path"] == "memory/2025-11-30.md"  # indexed once committed
