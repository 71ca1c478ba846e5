"""The MCP server reads two private parts of the SDK (which arguments a tool accepts, and its input
schema) through zmem/mcp/sdk.py alone. If a new SDK moves them, this fails here, saying so."""
from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from zmem.mcp import sdk as mcp_sdk  # noqa: E402
from zmem.mcp.server import build_server  # noqa: E402


def test_the_sdk_still_has_what_zmem_reads_of_its_tools(tmp_path):
    server = build_server(str(tmp_path))
    assert mcp_sdk.argument_names(server, "memory_get") == {"path", "from", "from_line", "lines"}
    assert mcp_sdk.argument_names(server, "memory_search") >= {"query", "max_results", "maxResults", "path"}
    schema = mcp_sdk.input_schema(server, "memory_get")
    assert schema["type"] == "object" and {"path", "lines"} <= set(schema["properties"])
    assert mcp_sdk.argument_names(server, "no_such_tool") == set()
    assert mcp_sdk.input_schema(server, "no_such_tool") is None
    # what zmem.mcp.wire's loop runs a tool call and the handshake with
    assert mcp_sdk.validated_arguments(server, "memory_get", {"path": "x", "from": 2}) == \
        {"path": "x", "from_line": 2, "lines": None}
    assert mcp_sdk.tool_function(server, "memory_get") is not None and mcp_sdk.tool_function(server, "nope") is None
    init = mcp_sdk.initialize_result(server, "2025-06-18")
    assert init["protocolVersion"] == "2025-06-18" and init["serverInfo"]["name"] == "zmem"
    assert "tools" in init["capabilities"] and init["instructions"].startswith("zmem is this user's long-term memory")
    assert mcp_sdk.initialize_result(server, "1999-01-01")["protocolVersion"] != "1999-01-01"


def test_an_sdk_without_those_internals_is_named_as_the_cause():
    class NewServer:  # what a server looks like to mcp_sdk once the SDK renames its tool manager
        pass
    with pytest.raises(mcp_sdk.SdkChanged, match="the mcp SDK changed: MCPServer._tool_manager"):
        mcp_sdk.argument_names(NewServer(), "memory_get")
