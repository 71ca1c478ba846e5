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
Calls run one at a time. User errors (a bad path, an unknown entity or revision, no workspace) come
back as tool errors with the hint; nothing a tool does stops the server."""
from __future__ import annotations

import functools
import json
import logging
import threading
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AliasChoices, BeforeValidator, Field, ValidationError

from zmem import __version__
from zmem.mcp import sdk as mcp_sdk
from zmem.errors import Surface, ZmemError, describe, is_sqlite_error
from zmem.text.kinds import KINDS
from zmem.memory import Memory, warm_reranker

log = logging.getLogger("zmem.mcp")

QUERY_TIMEOUT = 5.0  # seconds for embedding a query; past it, recall answers by keywords with a warning

INSTRUCTIONS = """\
zmem is this user's long-term memory: Markdown notes in a git repository (MEMORY.md, daily logs
memory/YYYY-MM-DD.md, bank/ pages with entities and opinions). Search it (memory_search) before
answering anything about prior work, decisions, dates, people, preferences or todos, and cite what
you use as path#Lx-Ly. memory_get reads exactly the cited lines back. memory_append writes a note or
a typed fact to today's log and commits it. graph_search shows how entities relate; memory_blame
says who wrote a memory and when (and what it was derived from); memory_recall_as_of searches
memory as it stood at a past date or commit."""

SEARCH_DOC = """\
Search the user's long-term memory before answering questions about prior work, decisions, dates,
people, preferences or todos. Searches the Markdown notes (MEMORY.md, daily logs
memory/YYYY-MM-DD.md, bank/ pages) by keywords and, when an embedding model is configured, by
meaning.

Returns {"results": [{"path", "startLine", "endLine", "score", "snippet", "source", "citation",
"day", "heading", "chunkStartLine", "chunkEndLine"}], "provider", "model", "mode", "warnings"}, best
first (day: a daily log's date; heading: the section the lines are in; each left out when there is
none). The snippet is exactly lines startLine..endLine of path (1-based): the line or few lines that
answer, never half a list item; citation is "path#L<startLine>-L<endLine>": cite it when you use the
snippet, and pass it to memory_get to read exactly those lines again. chunkStartLine..chunkEndLine is
the passage they were found in: read that range with memory_get when you need the context. score is
in (0, 1], higher is better: how well that passage matches (results are ordered by how well their own
lines answer, so a later result may show a higher score); it is not a probability. source is "memory" for notes, "sessions" for agent session transcripts (when enabled):
a session hit cites a .jsonl transcript line, which memory_get cannot read back (it reads memory
files only); its snippet is the message itself.
mode says how the search ran (hybrid, vector or bm25 keywords); warnings explain any degradation,
e.g. a slow or missing embedding provider (then results come from keywords only). "rerank" names the
reranker model when one ordered the results (rerank=true asks for it; then score is its relevance).

Filters: since keeps daily logs from that day on (7d, 2w, 3m, 1y or YYYY-MM-DD; undated files drop
out); path keeps files matching a glob or under a directory; max_chars caps the total snippet
characters. kind and/or entity search typed facts of `## Retain` sections instead of notes (kind: world,
experience, opinion, observation, relation; entity: a name such as Peter, @ optional); each such
result also has "fact" with its kind, entities and confidence, and its snippet is the fact's text
without the bullet's `- W @Peter:` prefix (a relation reads `Peter works_at Acme`; memory_get of its
citation shows the bullet as written). An empty results list means nothing
matched: say so rather than guess. For how memory stood in the past, use memory_recall_as_of."""

GET_DOC = """\
Read exactly the cited lines of a memory file. Pass a citation from memory_search as path
("memory/2025-11-24.md#L5-L6" returns lines 5 and 6, the same lines the snippet showed), or an as-of
citation "path@<commit>#Lx-Ly" from memory_recall_as_of (the file as it was at that commit), or a
plain path with from (first line, 1-based) and lines (how many; default: to the end). A path
without a range returns the whole file. Use it to quote a memory exactly or to read the lines around
a search hit. Only memory files can be read (MEMORY.md, memory/**.md, bank/**.md and configured
extra paths, .md only); anything else is refused with an error. Returns {"path", "from", "lines"
(how many lines were returned), "text", "end_line", "total_lines", "citation"}."""

APPEND_DOC = """\
Write to long-term memory: appends text to today's daily log (memory/YYYY-MM-DD.md) under
"## Notes" and commits it to git, so it can be recalled at once and its history is kept. Use it for
what is worth remembering beyond this conversation (decisions, preferences, facts about people,
commitments, todos); write one self-contained statement per call, with names and dates.

retain makes it a typed fact under "## Retain": W world fact, B experience (something the user or
you did), O opinion (give confidence 0..1), S observation, R relation (text is
"@Subject predicate @Object", e.g. "@Peter lives_in @Lisbon"). entities names whom or what it is
about (e.g. ["Peter"]). commit=false writes the file without committing it. Returns {"path",
"line", "end_line", "citation", "text", "committed", "commit", "warnings"}: line and end_line are the
first and last line written (a multi-line note spans several), and the citation ("path#L5", or
"path#L5-L7" for several lines) is what memory_get reads back."""

GRAPH_DOC = """\
Show the entities related to an entity (a person, place, project: a name used as @Name in Retain
facts, or with a bank/entities/<Name>.md page): explicit relations (e.g. lives_in, works_at) and
co-mentions in one fact, with counts, a recency weight and the evidence citations (path#Lx of the
facts behind each edge; read them with memory_get). depth follows that many hops (1-5). Returns
{"entity", "depth", "nodes", "edges"}. An unknown name is an error that suggests close spellings."""

BLAME_DOC = """\
Find out where a memory came from: who wrote each line, when, and in which commit. For lines that
`zmem reflect` generated (entity pages, opinions, MEMORY.md), it follows the citations they carry
and blames those daily-log lines too (the evidence chain, in "evidence"). target is a citation
"path#Lx-Ly", "path:LINE" or "path@REV#Lx-Ly", a fact id, or a query in plain words (its top hits
are blamed). Use it before relying on a memory whose age or origin matters. Returns {"target",
"ranges": [{"path", "start_line", "end_line", "citation", "lines": [{"line", "text", "commit",
"author", "date", "summary"}], "evidence": [...]}]}."""

AS_OF_DOC = """\
Search memory as it stood at a past point in time: as_of is a date (YYYY-MM-DD, or 7d, 2w, 3m: the
last commit on or before that day) or a git revision (commit, branch, tag). Use it for "what did we
know or believe back then" questions and to see how something changed (compare with memory_search).
Same result shape as memory_search plus "as_of": {"commit", "date", "summary"}; citations read
"path@<commit>#Lx-Ly", and memory_get reads exactly those lines from that commit. Searches by
keywords and, when an embedding model is configured, by meaning (through the vectors those versions
got when they were embedded; mode says which)."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def search(memory: Memory, query: str, *, max_results: int, min_score: float, since: str | None = None,
           kind: str | None = None, entity: str | None = None, as_of: str | None = None, path: str | None = None,
           max_chars: int | None = None, rerank: bool | None = None) -> dict:
    """memory_search and memory_recall_as_of: a recall, with the provider that embedded the query."""
    res = memory.recall(query, k=max_results, since=since, kind=kind, entity=entity, as_of=as_of, path=path,
                        max_chars=max_chars, rerank=rerank)
    provs = memory.providers
    active = provs.primary or provs.fallback
    out = {"results": [h for h in (search_result(x) for x in res.results) if h["score"] >= min_score],
           "provider": active.provider if active else "none", "model": active.model if active else None,
           "mode": res.mode, "warnings": res.warnings}
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


class _Server(MCPServer):
    """The SDK's server, with argument validation errors rewritten for a model to act on, and
    arguments a tool does not have refused: pydantic would drop them, and a filter the model
    believes it set (`path`, `k`) would silently not apply."""

    async def call_tool(self, name, arguments, context=None):
        accepted = mcp_sdk.argument_names(self, name)
        unknown = [k for k in arguments or {} if k not in accepted]
        if unknown and accepted:
            schema = mcp_sdk.input_schema(self, name) or {}
            return _error(f"invalid arguments for {name}: unknown parameter{'s' if len(unknown) > 1 else ''} "
                          + ", ".join(repr(k) for k in unknown)
                          + f" (nothing was done)\nhint: {name} takes {', '.join(schema.get('properties', {}))}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if isinstance(e.__cause__, ValidationError) and not isinstance(e, UnexpectedToolError):
                return _error(_invalid_arguments(name, e.__cause__, mcp_sdk.input_schema(self, name)))
            raise


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
        query: Annotated[str, Field(description="What to look for, in natural language or keywords.")],
        max_results: Annotated[int, Field(ge=1, le=100, validation_alias=AliasChoices("max_results", "maxResults"),
                                          description="How many results at most (default 6).")] = 6,
        min_score: Annotated[float, Field(ge=0, validation_alias=AliasChoices("min_score", "minScore"),
                                          description="Drop results scoring below this (default 0: keep all).")] = 0.0,
        since: Annotated[str | None, NoneIfBlank,
                         Field(description="Only daily logs from this day on: 7d, 2w, 3m, 1y or YYYY-MM-DD "
                                           "(empty: no date filter).")] = None,
        kind: Annotated[Kind | None, NoneIfBlank, KindName,
                        Field(description="Search Retain facts of this kind instead of notes (empty: no kind "
                                          "filter).")] = None,
        entity: Annotated[str | None, NoneIfBlank,
                          Field(description="Search Retain facts about this entity instead of notes (e.g. Peter; "
                                            "empty: no entity filter).")] = None,
        path: Annotated[str | None, NoneIfBlank,
                        Field(description="Only these files: a glob (bank/**, memory/2025-*) or a directory or "
                                          "file (bank/people; empty: all).")] = None,
        max_chars: Annotated[int | None, Field(ge=1, validation_alias=AliasChoices("max_chars", "maxChars"),
                                               description="Total snippet characters at most: results stop "
                                                           "there (a budget for your context).")] = None,
        rerank: Annotated[bool | None, Field(description="Reorder the top results with the reranker model (a "
                                                         "cross-encoder) and cite its best lines; left out: as the "
                                                         "user's recall.rerank setting says.")] = None,
    ) -> dict:
        return search(memory, query, max_results=max_results, min_score=min_score, since=since, kind=kind,
                      entity=entity, path=path, max_chars=max_chars, rerank=rerank)

    @server.tool(description=GET_DOC, annotations=READ_ONLY, structured_output=False)
    @tool
    def memory_get(
        path: Annotated[str, Field(description='A workspace-relative memory file, optionally with a citation: '
                                               '"memory/2025-11-24.md#L5-L6" or "path@<commit>#Lx-Ly".')],
        from_line: Annotated[int | None, Field(ge=1, validation_alias=AliasChoices("from", "from_line"),
                                               description="First line to read (1-based); overrides the "
                                                           "citation's start.")] = None,
        lines: Annotated[int | None, Field(ge=1, description="How many lines to read (default: the cited range, "
                                                             "or to the end of the file).")] = None,
    ) -> dict:
        return memory.get(path, start=from_line, count=lines).to_json()

    @server.tool(description=APPEND_DOC, structured_output=False,
                 annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                             open_world_hint=False))
    @tool
    def memory_append(
        text: Annotated[str, Field(description="What to remember: one self-contained statement.")],
        retain: Annotated[RetainKind | None, NoneIfBlank,
                          Field(description="Make it a typed Retain fact: W world, B experience, O opinion, "
                                            "S observation, R relation (@Subject predicate @Object); either "
                                            "case. Empty or left out: a plain note.")] = None,
        entities: Annotated[list[str] | None, Field(description='Whom or what it is about, e.g. ["Peter"].')] = None,
        confidence: Annotated[float | None, Field(description="Confidence in [0, 1] of an opinion "
                                                              "(retain O only).")] = None,
        commit: Annotated[bool, Field(description="Commit the daily log to git (default true).")] = True,
    ) -> dict:
        return memory.append(text, retain=retain, entities=entities, confidence=confidence, commit=commit).to_json()

    @server.tool(description=GRAPH_DOC, annotations=READ_ONLY, structured_output=False)
    @tool
    def graph_search(
        name: Annotated[str, Field(description="The entity's name, @ optional (e.g. Peter).")],
        depth: Annotated[int, Field(ge=1, le=5, description="How many hops to follow (default 1).")] = 1,
    ) -> dict:
        hood = memory.graph(name, depth)
        return {**hood.to_json(), "warnings": hood.warnings}

    @server.tool(description=BLAME_DOC, annotations=READ_ONLY, structured_output=False)
    @tool
    def memory_blame(
        target: Annotated[str, Field(description='A citation ("bank/entities/Peter.md#L7", "path:LINE", '
                                                 '"path@REV#Lx-Ly"), a fact id, or a query.')],
    ) -> dict:
        return memory.blame(target).to_json()

    @server.tool(description=AS_OF_DOC, annotations=READ_ONLY, structured_output=False)
    @tool
    def memory_recall_as_of(
        query: Annotated[str, Field(description="What to look for.")],
        as_of: Annotated[str, Field(description="A date (YYYY-MM-DD, 7d, 2w) or a git revision.")],
        max_results: Annotated[int, Field(ge=1, le=100, validation_alias=AliasChoices("max_results", "maxResults"),
                                          description="How many results at most (default 6).")] = 6,
    ) -> dict:
        return search(memory, query, max_results=max_results, min_score=0.0, as_of=as_of)

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
        server.run("stdio")
    finally:  # after the watch start, if still running (its socket is removed too), not during it
        locked = server.memory.lock.acquire(timeout=10)
        try:
            server.memory.close()
        finally:
            if locked:
                server.memory.lock.release()
