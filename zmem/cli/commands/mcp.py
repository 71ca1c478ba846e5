"""`zmem mcp`: the Model Context Protocol server on stdin/stdout."""
from __future__ import annotations

import click

from zmem.errors import ZmemError
from zmem.install import pip_install
from zmem.cli.common import Seconds, scope_option


@click.command("mcp")
@scope_option("group: never return MEMORY.md or paths listed under [scopes] private (for shared agents).")
@click.option("--query-timeout", type=Seconds(0.1, None), default=5.0, show_default=True, metavar="SECONDS",
              help="Longest wait for the embedding provider to embed a query; past it, memory_search answers by "
                   "keywords (BM25) with a warning.")
@click.pass_context
def mcp_cmd(ctx, scope, query_timeout):
    """Run a Model Context Protocol server on stdin/stdout for agents (Claude Code, Cursor, Codex…).

    Tools: memory_search, memory_get, memory_append, graph_search, memory_blame,
    memory_recall_as_of and memory_context, over the workspace of -C DIR / $ZMEM_WORKSPACE / the current directory.
    Register it with an MCP client as the command `zmem -C /path/to/memory mcp`. Needs the optional
    `mcp` extra: pip install '.[mcp]' in a checkout of zmem, 'zmem[mcp]' from an index.
    """
    try:
        from zmem.mcp.server import serve
    except ImportError as e:
        if (getattr(e, "name", None) or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        raise ZmemError("`zmem mcp` needs the mcp package (version 2.3 or later), which is not installed",
                        hint=pip_install("mcp")) from None
    serve(ctx.obj.get("dir"), scope=scope, query_timeout=query_timeout)
