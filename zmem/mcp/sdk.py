"""The one place zmem reaches into the MCP SDK's private parts (`MCPServer._tool_manager`, a tool's
`fn_metadata`): the SDK offers no public way to ask which arguments a tool accepts before it calls
it. If a new SDK moves them, these functions fail with a message saying so, and
tests/mcp/test_mcp_sdk.py fails first."""
from __future__ import annotations


class SdkChanged(RuntimeError):
    """The SDK no longer has the internals this module reads."""


def _tool(server, name: str):
    try:
        return server._tool_manager.get_tool(name)
    except AttributeError as e:
        raise SdkChanged(f"the mcp SDK changed: MCPServer._tool_manager.get_tool is gone ({e}); "
                         "zmem/mcp/sdk.py must follow it") from e


def input_schema(server, name: str) -> dict | None:
    """The JSON schema of a tool's arguments, None for an unknown tool."""
    tool = _tool(server, name)
    return None if tool is None else tool.parameters


def argument_names(server, name: str) -> set[str]:
    """Every name a tool's arguments are accepted under (field names and their aliases); empty for
    an unknown tool (the SDK says so)."""
    tool = _tool(server, name)
    if tool is None:
        return set()
    try:
        fields = tool.fn_metadata.arg_model.model_fields
    except AttributeError as e:
        raise SdkChanged(f"the mcp SDK changed: a tool's fn_metadata.arg_model is gone ({e}); "
                         "zmem/mcp/sdk.py must follow it") from e
    names = set()
    for field_name, field in fields.items():
        names.add(field.alias or field_name)
        alias = field.validation_alias
        names.update(getattr(alias, "choices", None) or ([alias] if isinstance(alias, str) else []))
    return names


def run_stdio(server) -> None:
    """server.run("stdio") with every request line answered (zmem.mcp.wire): the SDK's stdio
    transport, given stdin through wire.LenientLines, and the server reading through
    wire.AnsweringReader. As the SDK does for the stdin it reads itself, fd 0 points at the null
    device while serving (a child process must not read the wire) and is restored after. Reaches
    MCPServer._lowlevel_server, which MCPServer.run_stdio_async uses the same way."""
    import os

    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    from zmem.mcp.wire import AnsweringReader, LenientLines

    try:
        lowlevel = server._lowlevel_server
    except AttributeError as e:
        raise SdkChanged(f"the mcp SDK changed: MCPServer._lowlevel_server is gone ({e}); "
                         "zmem/mcp/sdk.py must follow it") from e

    def answer(rid, code: int, message: str):
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message)))

    async def serve(lines: LenientLines) -> None:
        async with stdio_server(stdin=anyio.wrap_file(lines)) as (read_stream, write_stream):
            reader = AnsweringReader(read_stream, write_stream, lines, answer)
            await lowlevel.run(reader, reader.answering(write_stream), lowlevel.create_initialization_options())

    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        with os.fdopen(wire, "rb", closefd=False) as raw:
            anyio.run(serve, LenientLines(raw))
    finally:
        os.dup2(wire, 0)
        os.close(wire)
