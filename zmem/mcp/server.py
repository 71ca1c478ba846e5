"""`zmem mcp`: a Model Context Protocol server over stdio, so any MCP-capable agent (Claude Code,
Cursor, Codex, OpenClaw …) uses zmem's memory as tools. The only module that imports the `mcp`
SDK (the optional extra `zmem[mcp]`); the CLI imports this module only for `zmem mcp`.

The server keeps one zmem.Memory for its session (watch=True), and with it what a CLI process
rebuilds every time: the workspace (reloaded when zmem.toml or the user config changes), one index
connection (reopened when `zmem index --full` swaps the file) and the embedding providers (a local
model is loaded once). Every call answers from
a fresh index, as every zmem command does: where inotify exists, the server watches the memory
directories (one descriptor, a watch per directory, as `zmem watch`) and runs the catch-up only when
a memory file or an ignore rule changed or HEAD moved since the last one; elsewhere it catches up before every call
(the stat sweep costs ~4 µs a file). From its start it also serves fresh zmem processes as `zmem watch`
does (Memory.watch_in_background): it vouches that nothing changed, embeds their queries with the model
it preloads, answers their keyword searches, and catches up in the background once changes settle.
Calls run one at a time, on the thread that reads the wire (zmem.mcp.wire: the SDK defines the tools,
zmem speaks JSON-RPC itself). User errors (a bad path, an unknown entity or revision, no workspace)
come back as tool errors with the hint; nothing a tool does stops the server."""
from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AliasChoices, BeforeValidator, Field, ValidationError

from zmem import __version__
from zmem.mcp import sdk as mcp_sdk
from zmem.mcp.wire import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError
from zmem.errors import Surface, ZmemError, describe, is_sqlite_error
from zmem.text.kinds import KINDS
from zmem.memory import Memory, warm_reranker
from zmem.query.context import DEFAULT_BUDGET as CONTEXT_BUDGET

log = logging.getLogger("zmem.mcp")

QUERY_TIMEOUT = 5.0  # seconds for embedding a query; past it, recall answers by keywords with a warning

INSTRUCTIONS = """\
zmem is this user's long-term memory: Markdown notes in a git repository (MEMORY.md, daily logs
memory/YYYY-MM-DD.md, bank/ pages with entities and opinions). As a session starts, memory_context
gives what to read first. Search it (memory_search) before
answering anything about prior work, decisions, dates, people, preferences or todos, and cite what
you use as path#Lx-Ly. memory_get reads exactly the cited lines back. memory_append writes a note or
a typed fact to today's log and commits it. graph_search shows how entities relate; memory_blame
says who wrote a memory and when (and what it was derived from); memory_recall_as_of searches
memory as it stood at a past date or commit."""

# Each description says when to use the tool and what a citation is, and no more: every agent session
# carries tools/list in its context (tests/mcp/test_mcp_budget.py holds it under TOOLS_LIST_BUDGET
# characters). Result shapes and details are in docs/agent-hooks.md.
SEARCH_DOC = """\
Search the user's long-term memory before answering about prior work, decisions, dates, people, \
preferences or todos. Each result cites path#Lx-Ly (1-based lines): cite it when you use its \
snippet; memory_get reads exactly those lines. No results: nothing matched, say so."""

GET_DOC = """\
Read exactly the lines a citation path#Lx-Ly (or path@commit#Lx-Ly) names; from and lines \
read around a hit. Memory files only."""

APPEND_DOC = """\
Remember what matters beyond this conversation: one self-contained statement, added to today's \
log and committed. Returns its citation path#Lx-Ly."""

GRAPH_DOC = """\
How an entity (a person, place, project) relates to others, each link with the citations \
path#Lx-Ly of its evidence."""

BLAME_DOC = """\
When age or origin matters: who wrote each line of a citation path#Lx-Ly, when, in which commit, \
and the log lines a reflected page came from."""

AS_OF_DOC = """\
Search memory as it stood at a past date or commit (what it said then); citations read \
path@commit#Lx-Ly."""

CONTEXT_DOC = """\
Call once as a session starts: recent logs, MEMORY.md and Retain facts within a budget, each \
part under its citation path#Lx-Ly."""

SESSIONS_NOTE = ('results with source "sessions" cite a line of an agent session transcript (.jsonl), which '
                 "memory_get cannot read back: their snippet is the whole message")

# (the MCP spec: destructive and idempotent hints mean something only for a tool that is not read-only)
READ_ONLY = ToolAnnotations(read_only_hint=True)

# Tools a program calls (the OpenClaw plugin: its status(), committing what an agent's file tools wrote to
# memory), which a model has no use for: callable, but not in tools/list, so no session carries them.
UNLISTED = {"memory_status", "memory_commit"}


def search(memory: Memory, query: str, *, max_results: int, min_score: float, since: str | None = None,
           kind: str | None = None, entity: str | None = None, as_of: str | None = None, path: str | None = None,
           max_chars: int | None = None, rerank: bool | None = None, mode: str | None = None) -> dict:
    """memory_search and memory_recall_as_of: a recall, with the provider that embedded the query."""
    res = memory.recall(query, k=max_results, since=since, kind=kind, entity=entity, as_of=as_of, path=path,
                        max_chars=max_chars, rerank=rerank, mode=mode)
    provs = memory.providers
    active = provs.primary or provs.fallback
    results = [h for h in (search_result(x) for x in res.results) if h["score"] >= min_score]
    warnings = list(res.warnings)
    if any(h["source"] == "sessions" for h in results):  # said where it matters, not in every tools/list
        warnings.append(SESSIONS_NOTE)
    out = {"results": results, "provider": active.provider if active else "none",
           "model": active.model if active else None, "mode": res.mode, "warnings": warnings}
    if res.stale:  # as the CLI's JSON says it; only then, for the tokens
        out["stale"] = True
    if res.rerank:
        out["rerank"] = res.rerank
    if res.as_of:
        out["as_of"] = res.as_of
    return out


def search_result(hit) -> dict:
    """One recall hit in the shape of OpenClaw's memory_search results (camelCase line numbers,
    source memory|sessions, citation path#Lx-Ly), plus day/heading, or the fact for fact hits."""
    d = hit.to_json()
    out = {"path": d["path"], "startLine": d["start_line"], "endLine": d["end_line"], "score": round(hit.score, 4),
           "snippet": d["snippet"], "source": getattr(hit, "source", "memory"), "citation": d["citation"]}
    if d.get("type") == "fact":
        out["fact"] = {k: d[k] for k in ("id", "kind", "entities", "confidence", "day", "event") if k in d}
    else:
        if d.get("day"):
            out["day"] = d["day"]
        if d.get("heading"):
            out["heading"] = d["heading"]
        if "chunk_start_line" in d and out["source"] == "memory":  # the passage around the cited lines
            out["chunkStartLine"], out["chunkEndLine"] = d["chunk_start_line"], d["chunk_end_line"]
    return out


def _result(out: dict) -> CallToolResult:
    """Compact JSON text for the model, the same object as structured content for programs."""
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(out, ensure_ascii=False))],
                          structured_content=out)


class ToolParameters(Surface):
    """Parameters in an error as the tools name them; the server's own (scope) as the command that
    starts it."""

    again = "call the tool again"

    def __init__(self):
        super().__init__({"k": "max_results", "path_glob": "path", "start": "from", "count": "lines"})

    def name(self, param: str, *value) -> str:
        if param == "scope":
            return f"a server started with `zmem mcp {' '.join(['--scope', *map(str, value)])}`"
        return super().name(param, *value)


TOOL_PARAMETERS = ToolParameters()


def _invalid_arguments(tool: str, exc: ValidationError, schema: dict | None) -> str:
    """A pydantic validation error as one line and a hint, without pydantic's URLs."""
    problems, fields = [], []
    for err in exc.errors(include_url=False):
        field = ".".join(str(p) for p in err["loc"]) or "arguments"
        fields.append(field)
        if err["type"] == "missing":
            problems.append(f"{field} is required")
            continue
        msg = err["msg"].replace("Input should be", "should be").replace("Field required", "is required")
        got = repr(err.get("input"))
        problems.append(f"{field} {msg} (got {got if len(got) <= 40 else got[:37] + '...'})")
    props = (schema or {}).get("properties", {})
    # a list item's field is "entities.0": its parameter is "entities"
    described = [f"{f}: {props[f]['description']}" for f in dict.fromkeys(f.split(".", 1)[0] for f in fields)
                 if props.get(f, {}).get("description")]
    hint = " ".join(described) or f"{tool} takes {', '.join(props) or 'no parameters'}"
    return f"invalid arguments for {tool}: " + "; ".join(problems) + f"\nhint: {hint}"


def compact_schema(schema: dict) -> dict:
    """A tool's argument schema as pydantic writes it, without what tells a model nothing: the
    generated titles ("Max Results"), and an optional argument's `anyOf [T, null]` with `default:
    null` (being left out of `required` already says it is optional) is just T."""
    def field(prop: dict) -> dict:
        prop = {k: v for k, v in prop.items() if k != "title"}
        options = prop.get("anyOf")
        if options and {"type": "null"} in options and len(options) == 2:
            (kept,) = [o for o in options if o != {"type": "null"}]
            prop = {**kept, **{k: v for k, v in prop.items() if k != "anyOf"}}
            if prop.get("default", 0) is None:
                del prop["default"]
        return prop
    out = {k: v for k, v in schema.items() if k != "title"}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {name: field(prop) for name, prop in out["properties"].items()}
    return out


class _Server(MCPServer):
    """The SDK's server as the definition of zmem's tools, answering the wire itself (handle, for
    zmem.mcp.wire): a tool call runs on the thread that read it. Argument validation errors are
    rewritten for a model to act on, and arguments a tool does not have are refused: pydantic would
    drop them, and a filter the model believes it set (`path`, `k`) would silently not apply."""

    _listed: dict | None = None

    async def list_tools(self):
        """The SDK's tools with their argument schemas in fewer characters (compact_schema), without
        the UNLISTED ones: every agent session carries this list in its context."""
        tools = [t for t in await super().list_tools() if t.name not in UNLISTED]
        for t in tools:
            t.input_schema = compact_schema(t.input_schema)
        return tools

    async def call_tool(self, name, arguments, context=None):
        return self.call(name, arguments or {})

    def call(self, name: str, arguments: dict, record: dict | None = None) -> CallToolResult:
        """Run a tool: its result, or a tool error saying what is wrong with the call."""
        fn = mcp_sdk.tool_function(self, name)
        if fn is None:
            listed = ", ".join(t["name"] for t in self.listing()["tools"])
            return _error(f"unknown tool: {name}\nhint: zmem's tools are {listed}")
        schema = mcp_sdk.input_schema(self, name) or {}
        unknown = [k for k in arguments if k not in mcp_sdk.argument_names(self, name)]
        if unknown:
            return _error(f"invalid arguments for {name}: unknown parameter{'s' if len(unknown) > 1 else ''} "
                          + ", ".join(repr(k) for k in unknown)
                          + f" (nothing was done)\nhint: {name} takes {', '.join(schema.get('properties', {}))}")
        try:
            kwargs = mcp_sdk.validated_arguments(self, name, arguments)
        except ValidationError as e:
            return _error(_invalid_arguments(name, e, schema))
        if record is not None:
            record.update(tool=name, start=time.monotonic() * 1000)
        result = fn(**kwargs)  # _tool_errors: a failure is a tool error, never an exception
        if record is not None:
            record["end"] = time.monotonic() * 1000
        return result

    def listing(self) -> dict:
        """The answer to tools/list (list_tools, made once)."""
        if self._listed is None:
            import asyncio
            tools = asyncio.run(self.list_tools())
            self._listed = {"tools": [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]}
        return self._listed

    def handle(self, method: str, params, record: dict | None = None) -> dict:
        """The result of one JSON-RPC request (zmem.mcp.wire.serve), or RpcError."""
        if params is not None and not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: params must be an object")
        params = params or {}
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments")
            if not isinstance(name, str) or not isinstance(arguments, (dict, type(None))):
                raise RpcError(INVALID_PARAMS, "Invalid params: tools/call takes a tool name and an object of arguments")
            result = self.call(name, arguments or {}, record)  # (resultType: the 2026 protocol's, not the handshake's)
            return result.model_dump(by_alias=True, exclude_none=True, exclude={"result_type"}, mode="json")
        if method == "tools/list":
            return self.listing()
        if method == "ping":
            return {}
        if method == "initialize":
            return mcp_sdk.initialize_result(self, params.get("protocolVersion"))
        if method in ("resources/list", "resources/templates/list", "prompts/list"):  # capabilities the SDK states
            return {{"resources/list": "resources", "resources/templates/list": "resourceTemplates",
                     "prompts/list": "prompts"}[method]: []}
        raise RpcError(METHOD_NOT_FOUND, "Method not found", method)


def _tool_errors(memory: Memory):
    """Runs a tool under the workspace lock and turns every failure into a tool error the model
    can read: zmem's message and hint for user errors, one line for anything else. Errors are
    returned, not raised: the SDK would prefix them with "Error executing tool …"."""
    def decorate(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with memory.lock:
                try:
                    return _result(fn(*args, **kwargs))
                except Exception as e:  # noqa: BLE001 - the server must survive anything a tool does
                    problem = describe(e, TOOL_PARAMETERS)
                    if is_sqlite_error(e):
                        memory.close()  # reopen next time
                    if problem.bug:
                        log.exception("zmem mcp: %s failed", fn.__name__)
                    hint = "this is a bug in zmem; the server's stderr has the traceback" if problem.bug else problem.hint
                    return _error(problem.message + (f"\nhint: {hint}" if hint else ""))
        return run
    return decorate


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


Kind = Literal[(*KINDS.values(), *KINDS, *map(str.lower, KINDS))]  # a name, or a code in either case
RetainKind = Literal[(*KINDS, *map(str.lower, KINDS))]  # either case, as `zmem append --retain`


def _blank_is_none(value):
    """An empty (or blank) string for an optional filter means "none": what a model that fills in
    every parameter sends for one it does not need."""
    return None if isinstance(value, str) and not value.strip() else value


NoneIfBlank = BeforeValidator(_blank_is_none)


def _kind_name(value):
    """A kind's name in any case, singular or plural ("Opinion", "OPINIONS"), as its name; the
    one-letter codes stay as they are (either case is accepted)."""
    if isinstance(value, str) and len(value.strip()) > 1:
        name = value.strip().lower()
        return name[:-1] if name.endswith("s") and name[:-1] in KINDS.values() else name
    return value


KindName = BeforeValidator(_kind_name)


def build_server(directory: str | None = None, *, scope: str = "private",
                 query_timeout: float = QUERY_TIMEOUT) -> MCPServer:
    """The MCP server for the workspace at directory (-C, else $ZMEM_WORKSPACE, else the nearest
    enclosing workspace), resolved on first use so that a problem is a tool error with a hint."""
    if scope not in ("private", "group"):
        raise ValueError(f"unknown scope {scope!r}")
    memory = Memory(directory, scope=scope, query_timeout=query_timeout, watch=True)
    server = _Server("zmem", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    tool = _tool_errors(memory)

    @server.tool(description=SEARCH_DOC, annotations=READ_ONLY, structured_output=False)
    @tool
    def memory_search(
        query: str,
        max_results: Annotated[int, Field(ge=1, le=100, validation_alias=AliasChoices("max_results", "maxResults"),
                                          )] = 6,
        min_score: Annotated[float, Field(ge=0, validation_alias=AliasChoices("min_score", "minScore"),
                                          )] = 0.0,
        since: Annotated[str | None, NoneIfBlank, Field(description="From: 7d, 2w, YYYY-MM-DD.")] = None,
        kind: Annotated[Kind | None, NoneIfBlank, KindName,
                        Field(description="Retain facts of this kind.", json_schema_extra={"enum": list(KINDS.values())})
                        ] = None,
        entity: Annotated[str | None, NoneIfBlank, Field(description="Retain facts about this entity.")] = None,
        path: Annotated[str | None, NoneIfBlank, Field(description="A glob, directory or file.")] = None,
        max_chars: Annotated[int | None, Field(ge=1, validation_alias=AliasChoices("max_chars", "maxChars"),
                                               description="Snippet characters in all.")] = None,
        rerank: bool | None = None,  # (a name that says it: its description did not fit the budget)
        mode: Annotated[Literal["hybrid", "bm25", "vector"] | None, NoneIfBlank] = None,
    ) -> dict:
        return search(memory, query, max_results=max_results, min_score=min_score, since=since, kind=kind,
                      entity=entity, path=path, max_chars=max_chars, rerank=rerank, mode=mode)

    @server.tool(description=GET_DOC, annotations=READ_ONLY, structured_output=False)
    @tool
    def memory_get(
        path: Annotated[str, Field(description="A citation or file.")],
        from_line: Annotated[int | None, Field(ge=1, validation_alias=AliasChoices("from", "from_line"),
                                               description="First line (1-based).")] = None,
        lines: Annotated[int | None, Field(ge=1)] = None,
    ) -> dict:
        return memory.get(path, start=from_line, count=lines).to_json()

    @server.tool(description=APPEND_DOC, structured_output=False,
                 annotations=ToolAnnotations(destructive_hint=False))
    @tool
    def memory_append(
        text: str,
        retain: Annotated[RetainKind | None, NoneIfBlank,
                          Field(description="W world, B experience, O opinion, S observation, R relation.",
                                json_schema_extra={"enum": list(KINDS)})
                          ] = None,
        entities: Annotated[list[str] | None, Field(description="Names it is about.")] = None,
        confidence: Annotated[float | None, Field(description="0..1, for O.")] = None,
        commit: bool = True,
    ) -> dict:
        return memory.append(text, retain=retain, entities=entities, confidence=confidence, commit=commit).to_json()

    @server.tool(description=GRAPH_DOC, annotations=READ_ONLY, structured_output=False)
    @tool
    def graph_search(
        name: Annotated[str, Field(description="e.g. Peter")],
        depth: Annotated[int, Field(ge=1, le=5)] = 1,
    ) -> dict:
        hood = memory.graph(name, depth)
        return {**hood.to_json(), "warnings": hood.warnings}

    @server.tool(description=BLAME_DOC, annotations=READ_ONLY, structured_output=False)
    @tool
    def memory_blame(
        target: Annotated[str, Field(description="A citation, fact id or query.")],
    ) -> dict:
        return memory.blame(target).to_json()

    @server.tool(description=AS_OF_DOC, annotations=READ_ONLY, structured_output=False)
    @tool
    def memory_recall_as_of(
        query: str,
        as_of: Annotated[str, Field(description="A date or git revision.")],
        max_results: Annotated[int, Field(ge=1, le=100, validation_alias=AliasChoices("max_results", "maxResults"),
                                          )] = 6,
    ) -> dict:
        return search(memory, query, max_results=max_results, min_score=0.0, as_of=as_of)

    @server.tool(description=CONTEXT_DOC, annotations=READ_ONLY, structured_output=False)
    @tool
    def memory_context(
        scope: Annotated[Literal["private", "group"] | None, NoneIfBlank,
                         Field(description="group: no MEMORY.md.")] = None,
        budget: Annotated[int, Field(ge=1)] = CONTEXT_BUDGET,
    ) -> dict:
        if scope == "private" and memory.scope == "group":
            from zmem.errors import ZmemError, arg
            raise ZmemError("this server serves the group scope, which never returns private files",
                            hint=f"leave scope out, or read with {arg('scope', 'private')}")
        return memory.context(scope=scope, budget=budget).to_json()

    @server.tool(description="zmem status --json: the index's files, chunks, vectors, dirty files, freshness.",
                 annotations=READ_ONLY, structured_output=False)
    @tool
    def memory_status() -> dict:
        return memory.status().to_json()

    @server.tool(description="Commit memory files an agent wrote with its own file tools.", structured_output=False,
                 annotations=ToolAnnotations(destructive_hint=False))
    @tool
    def memory_commit(
        paths: list[str],
        by: Annotated[str, Field(description="What wrote them, for the commit message.")] = "an agent",
    ) -> dict:
        return memory.commit_files(paths, by=by)

    server.memory = memory  # for tests and the benchmark
    return server


def serve(directory: str | None = None, *, scope: str = "private", query_timeout: float = QUERY_TIMEOUT) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    server = build_server(directory, scope=scope, query_timeout=query_timeout)
    try:
        ws = server.memory.workspace  # say so early on stderr; tools report it again
    except ZmemError as e:
        log.warning("zmem mcp: %s (%s)", e.message, e.hint)
    else:  # while the client starts up, not in its first search (nor before its handshake):
        # the watch and fresh processes' services with the index caught up, the query model, the reranker
        server.memory.watch_in_background()
        threading.Thread(target=warm_reranker, args=(ws,), name="zmem-warm-reranker", daemon=True).start()
    try:
        mcp_sdk.run_stdio(server.handle, os.environ.get("ZMEM_TRACE") or None)
    finally:  # after the watch start, if still running (its socket is removed too), not during it
        locked = server.memory.lock.acquire(timeout=10)
        try:
            server.memory.close()
        finally:
            if locked:
                server.memory.lock.release()
