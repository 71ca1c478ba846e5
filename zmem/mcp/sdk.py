"""The one place zmem reaches into the MCP SDK's private parts (`MCPServer._tool_manager`, a tool's
`fn_metadata`, `MCPServer._lowlevel_server`): the SDK offers no public way to ask which arguments a
tool accepts before it calls it, nor to call a sync tool without a worker thread. zmem uses the SDK
to define its tools (schemas from the type hints, argument validation, tools/list) and speaks the
wire itself (zmem.mcp.wire). If a new SDK moves these parts, these functions fail with a message
saying so, and tests/mcp/test_mcp_sdk.py fails first."""
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


def validated_arguments(server, name: str, arguments: dict) -> dict:
    """A tool's arguments validated (and converted) by its argument model, as the keyword arguments
    to call its function with; raises pydantic's ValidationError."""
    tool = _tool(server, name)
    try:
        validate = tool.fn_metadata.validate_arguments
    except AttributeError as e:
        raise SdkChanged(f"the mcp SDK changed: a tool's fn_metadata.validate_arguments is gone ({e}); "
                         "zmem/mcp/sdk.py must follow it") from e
    return validate(arguments)


def tool_function(server, name: str):
    """The function a tool runs (None for an unknown tool)."""
    tool = _tool(server, name)
    return None if tool is None else tool.fn


def initialize_result(server, requested: object) -> dict:
    """The answer to `initialize`: the client's protocol version when the SDK speaks it (else the
    latest one it negotiates in a handshake), and the server's capabilities, name, version and
    instructions as the SDK would state them."""
    from mcp_types import Implementation, InitializeResult
    from mcp_types.methods import serialize_server_result
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    try:
        opts = server._lowlevel_server.create_initialization_options()
    except AttributeError as e:
        raise SdkChanged(f"the mcp SDK changed: MCPServer._lowlevel_server is gone ({e}); "
                         "zmem/mcp/sdk.py must follow it") from e
    version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
    result = InitializeResult(protocol_version=version, capabilities=opts.capabilities,
                              server_info=Implementation(name=opts.server_name, version=opts.server_version),
                              instructions=opts.instructions)
    # in the shape of that version (no fields of later ones)
    return serialize_server_result("initialize", version, result.model_dump(by_alias=True, exclude_none=True, mode="json"))


def run_stdio(handle, trace: str | None = None) -> None:
    """zmem.mcp.wire.serve on the process's stdin and stdout. As the SDK's transport does, while
    serving fd 0 points at the null device (a child process must not read the wire) and fd 1 at
    stderr (a stray print must not break it); both are restored after."""
    import os

    from zmem.mcp.wire import serve

    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        with os.fdopen(wire_in, "rb", closefd=False) as inp, os.fdopen(wire_out, "wb", closefd=False) as out:
            serve(inp, out, handle, trace)
    except BrokenPipeError:
        pass  # the client closed its end with an answer unread (closing flushes it again)
    finally:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)
