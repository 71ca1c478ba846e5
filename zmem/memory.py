"""`zmem.Memory`: the public Python API and the only front door. The CLI parses, calls a Memory and
renders what it returns; the MCP server keeps one Memory for its session and returns the same
results as tool results; an agent written in Python uses it directly:

    with zmem.Memory.open("~/memory") as mem:
        for hit in mem.recall("where does Peter live", k=3).results:
            print(hit.citation, hit.snippet)

A Memory finds the workspace, owns one index connection (opened on first need, closed by close()
or at the end of a `with`), the embedding providers, and the freshness check: the index is brought
up to date with HEAD and the working tree once per Memory, before its first answer (with
watch=True, before every answer in which something changed: for a long-lived Memory). Methods
return typed results whose to_json() is exactly what `zmem … --json` prints; every degradation is
in their warnings, and user errors are ZmemError (message and hint)."""
from __future__ import annotations

import os
from _thread import allocate_lock  # threading.Lock itself, without importing threading (~1 ms)
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from zmem.errors import IndexBusy
from zmem.index.freshness import Freshness
from zmem.index.queryvector import NO_PROVIDER, _query_vector, stranded_vectors, token_cover, word_similarity

TYPE_CHECKING = False  # as typing's, without importing typing (~3 ms of a fresh recall); checkers know the name

if TYPE_CHECKING:
    from zmem.history.blame import BlamedRange
    from zmem.index.embedding import EmbedReport
    from zmem.index.catchup import CatchUp
    from zmem.query.context import Context
    from zmem.query.reading import Lines
    from zmem.reflect.run import ReflectResult
    from zmem.results import (Appended, BeliefDiff, Blame, Check, EntityReport, Facts, IndexReport, Log,
                              Neighbourhood, Opinions, Status)
    from zmem.query.search import Recall
    from zmem.workspace.core import Workspace

SCOPES = ("private", "group")
MAX_QUERY_CHARS = 10_000  # a recall query longer than this is refused (a 5 MB one took 12 s over MCP)


Progress = Callable[[str], Callable[[int, int], None] | None]  # a stage's label -> its progress callback


# ----------------------------------------------------------------------------- Memory


class Memory(Freshness):
    """One workspace's memory. Memory.open(path) finds the workspace at once (a ZmemError with a
    hint when there is none); Memory(path) finds it on first use. path: the workspace or a
    directory in it (default: $ZMEM_WORKSPACE, else the nearest enclosing workspace). scope:
    "group" never returns MEMORY.md or the paths the config lists as private (each method may
    override it). query_timeout: the longest wait, in seconds, for embedding a query. watch: for a
    long-lived Memory (the MCP server): the freshness check runs before every call, cheaply
    (inotify where available), and the configuration, the index file and the local model files
    are reloaded when they change. start_watcher: the freshness check may start a watcher in the
    background (`zmem watch --auto`; `watch.auto` in the settings) when nobody serves the workspace and
    one pays there, as the command line's reading commands do. Not thread-safe: threads sharing one
    hold its `lock`."""

    def __init__(self, path: str | os.PathLike | None = None, *, scope: str = "private", query_timeout: float = 10.0,
                 watch: bool = False, start_watcher: bool = False):
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}")
        self.directory = path  # as given: find_workspace says what is wrong with it
        self.scope = scope
        self.query_timeout = query_timeout
        self.watch = watch
        self.start_watcher = start_watcher and not watch  # a long-lived Memory is a watcher itself
        self.lock = allocate_lock()
        self._ws = None
        self._ws_key = None
        self._conn = None
        self._conn_id = None
        self._fresh = None          # the CatchUp of this Memory's freshness check
        self._ahead = None          # that check running in a child process (check_ahead), not yet confirmed
        self._assumed_state = None  # the index state (catchup.index_state) taken as fresh meanwhile
        self._providers = None
        self._models_key = None     # the model files the providers were loaded from, as _model_files saw them
        self._matrix = None         # stored vectors kept in memory (vectors.VectorMatrix), when watching
        self._source = None         # inotify on the memory directories, or False where unavailable
        self._clean_head = None     # HEAD at the last complete catch-up with no file change since
        self._vouch = None          # the index snapshot that catch-up left (fsmonitor: fresh processes ask)
        self._stop_vouching = None  # stops the thread answering them
        self._server = None         # fsmonitor.VouchServer of that thread
        self._serve_again = 0.0     # time.monotonic() from which a call tries to serve again, while not serving
        self._settling = None       # watch.Settling, once watch_in_background() was called: the thread catches up

    @classmethod
    def open(cls, path: str | os.PathLike | None = None, *, scope: str = "private", query_timeout: float = 10.0,
             watch: bool = False, start_watcher: bool = False) -> Memory:
        """The Memory of the workspace at path, found now. Use it as a context manager (or call
        close()) so that its index connection is closed."""
        memory = cls(path, scope=scope, query_timeout=query_timeout, watch=watch, start_watcher=start_watcher)
        memory.workspace  # noqa: B018 - no workspace is an error here, not at the first call
        return memory

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the index connection (and the watch); the Memory reopens them if used again."""
        self._abandon_ahead()
        self._close_conn()
        if self._stop_vouching is not None:
            self._stop_vouching()
            self._stop_vouching, self._server = None, None
        if self._source:
            self._source.close()
        self._ws, self._ws_key, self._providers, self._matrix, self._source = None, None, None, None, None

    # -- state

    @property
    def workspace(self) -> Workspace:
        from zmem.workspace.core import find_workspace
        if self._ws is not None and not self.watch:
            return self._ws
        if self._ws is not None and self._ws.root.is_dir() and self._config_key(self._ws) == self._ws_key:
            return self._ws
        self.close()  # the configuration changed (or the workspace went): everything is rebuilt
        ws = find_workspace(self.directory)
        self._ws, self._ws_key = ws, self._config_key(ws) if self.watch else None
        return ws

    @staticmethod
    def _config_key(ws: Workspace) -> tuple:
        from zmem.workspace.config import user_config_path
        return _stamp(ws.root / "zmem.toml"), _stamp(user_config_path())

    @property
    def conn(self):
        """The index connection, opened on first need (and reopened when `zmem index --full`
        replaced the file)."""
        from zmem.index.catchup import open_index
        ws = self.workspace
        if self._conn is not None:
            if self._conn_id is None or _stamp(ws.index_path, ino=True) == self._conn_id:
                return self._conn
            self._close_conn()
        try:
            self._conn = open_index(ws)
        except IndexBusy:
            if self._ahead is None:
                raise
            # the freshness check's child, stopped or stuck while it holds a lock of the index: stopped for good
            self._abandon_ahead()
            self._conn = open_index(ws)
        self._conn_id = _stamp(ws.index_path, ino=True)
        return self._conn

    def _close_conn(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 - a broken connection is replaced anyway
                pass
        self._conn, self._conn_id, self._fresh, self._clean_head, self._vouch = None, None, None, None, None

    @property
    def providers(self):
        """The embedding providers (embedding.Providers), built on first need: a local model is
        loaded once per Memory (with watch, again when its file changes)."""
        ws = self.workspace
        models = _model_files(ws) if self.watch else None
        if self._providers is not None and models != self._models_key:
            self._providers = None  # a model file appeared, went or was replaced (`model import --force`)
        if self._providers is None:
            from zmem.index.embedding import providers
            self._providers = providers(ws)
            self._models_key = models
            if self.watch:
                from zmem.store.vectors import VectorMatrix
                self._matrix = VectorMatrix()
        return self._providers

    def catch_up(self, *, progress: Callable[[int, int], None] | None = None, lock_timeout: float = 5.0) -> CatchUp:
        """Bring the index up to date with HEAD and the working tree now (only what changed is
        reindexed); what fresh() returns until something changes."""
        from zmem.index.catchup import catch_up
        self._fresh = catch_up(self.workspace, conn=self.conn, progress=progress, lock_timeout=lock_timeout)
        return self._fresh

    def _scope(self, scope: str | None) -> str:
        scope = scope or self.scope
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}")
        return scope

    # -- reading

    def recall(self, query: str, *, k: int | None = None, since: str | None = None, until: str | None = None,
               path: str | None = None, max_chars: int | None = None, mode: str | None = None,
               explain: bool = False, kind: str | None = None, entity: str | None = None, as_of: str | None = None,
               source: str | None = None, scope: str | None = None, query_timeout: float | None = None,
               background_embed: bool = True, rerank: bool | None = None) -> Recall:
        """Recall over notes (search.Recall of Hits with path#Lx-Ly citations, best first); with
        kind or entity, over Retain facts (FactHit results); with as_of (a date or revision), over
        the memory as it stood at that commit. since/until: 7d, 2w, 3m, 1y or YYYY-MM-DD (daily
        logs of those days). path: a glob, a directory or a file. mode: hybrid, bm25 or vector
        (default: recall.mode). source: memory, sessions or all (default: all when [sessions] is
        enabled, else memory; always memory with kind, entity or as_of, which an explicit sessions
        or all refuses). rerank: True reranks note hits with recall.rerank's model (or
        zmem.query.rerank.DEFAULT_MODEL), False never, None as recall.rerank says; a reranker that cannot run
        is a warning, never an error."""
        if len(query) > MAX_QUERY_CHARS:  # a pasted document: seconds of work for a list no one can use
            from zmem.errors import ZmemError
            raise ZmemError(f"the query is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,}",
                            param="query", hint="ask with the words that matter: a question, a name, an error code")
        from zmem.text.dates import parse_when
        scope = self._scope(scope)
        since = parse_when(since) if since else None
        until = parse_when(until, end=True) if until else None
        ws = self.workspace
        sessions = None  # no [sessions] table: off, without importing their settings (~1 ms)
        if ws.config.sessions:
            from zmem.workspace.session_settings import settings_for
            sessions = settings_for(ws)
        enabled = sessions is not None and sessions.enabled
        if source is None:  # facts and the past are in memory files: the default source there is memory
            source = "all" if enabled and not (kind or entity or as_of) else "memory"
        if source != "memory" and not enabled:
            from zmem.workspace.config import sessions_off
            raise sessions_off(ws.config)
        if source != "memory" and (kind or entity or as_of):
            from zmem.errors import ZmemError, arg
            raise ZmemError(f"{arg('kind')}, {arg('entity')} and {arg('as_of')} search memory files, not session "
                            "transcripts", hint=f"use {arg('source', 'memory')} (or leave {arg('source')} out)",
                            param="source")
        exclude = ws.private_globs() if scope == "group" else None
        if since and until and since > until:
            from zmem.errors import ZmemError
            raise ZmemError(f"the range is empty: since {since} is after until {until}",
                            hint="swap them, or leave one out")
        if path:
            from zmem.workspace.core import path_filter
            path = path_filter(path)
        cfg = ws.config
        timeout = self.query_timeout if query_timeout is None else query_timeout
        conn = self.conn
        fresh = self.fresh()
        if as_of is not None:
            by_tokens = rerank is not False and _reads_tokens(cfg)  # read as a current recall is
            if rerank and not by_tokens:
                fresh.warnings.append("--as-of recall is not reranked")
            res = _recall_as_of(ws, conn, query, as_of, k=k or cfg.recall_k, since=since, until=until,
                                path_glob=path, max_chars=max_chars, mode=mode or cfg.recall_mode, kind=kind,
                                entity=entity, exclude=exclude, explain=explain, query_timeout=timeout,
                                providers=lambda: self.providers, asked=_asked(mode, cfg), by_tokens=by_tokens)
            res.warnings = fresh.warnings + res.warnings
            res.stale = fresh.stale
            return res
        warnings = list(fresh.warnings)
        warnings += _unsearchable(conn, warnings)
        requested = mode or cfg.recall_mode
        qvec, store, mode_used = None, None, "bm25"
        if requested != "bm25" and self._providers is None and _nothing_to_embed_with(cfg):
            # known without loading the providers
            warnings += stranded_vectors(conn, cfg) or ([NO_PROVIDER] if _asked(mode, cfg) else [])
        elif requested != "bm25":
            qvec, store, notes = _query_vector(ws, conn, query, timeout, background_embed, lambda: self.providers,
                                               lambda: self._matrix, asked=_asked(mode, cfg))
            warnings += notes
            if qvec is not None:
                mode_used = requested
        stage = cover = None
        if kind or entity:
            if rerank:
                warnings.append("facts (--kind, --entity) are not reranked")
        elif rerank is not False and _reads_tokens(cfg):  # the embedding model reads the first hits: hybrid only
            cover = _token_reader(ws, store, lambda: self.providers, timeout, warnings) if qvec else None
        else:
            stage, notes = _rerank_stage(ws, rerank)
            warnings += notes
        if kind or entity:
            from zmem.query.entities import normalize_kind, resolve_entity
            from zmem.query.search import recall_facts
            key = resolve_entity(ws, conn, entity).key if entity else None
            res = recall_facts(conn, query, k=k or cfg.recall_k, kind=normalize_kind(kind), entity=key, since=since,
                               until=until, path_glob=path, mode=mode_used, query_vector=qvec, store=store,
                               fusion=cfg.fusion, vector_weight=cfg.vector_weight, text_weight=cfg.text_weight,
                               multiplier=cfg.candidate_multiplier, explain=explain, exclude=exclude)
        else:
            from zmem.query.search import recall
            res = recall(conn, query, k=k or cfg.recall_k, since=since, until=until, path_glob=path,
                         max_chars=max_chars, snippet_chars=cfg.snippet_chars, mode=mode_used, query_vector=qvec,
                         store=store, fusion=cfg.fusion, vector_weight=cfg.vector_weight,
                         text_weight=cfg.text_weight, multiplier=cfg.candidate_multiplier, explain=explain,
                         exclude=exclude, rerank=stage, watcher=None if self.watch else ws.state_dir,
                         similar=word_similarity(ws, store, lambda: self.providers, timeout) if qvec else None,
                         cover=cover)
        if source != "memory":
            res = _with_sessions(ws, conn, res, query, k or cfg.recall_k, source, scope, sessions)
        res.warnings = warnings + res.warnings
        res.stale = fresh.stale
        return res

    def context(self, *, scope: str | None = None, budget: int | None = None, today=None) -> Context:
        """What an agent should read as a session starts (zmem.query.context): today's and yesterday's
        daily logs, MEMORY.md (scope "private" only: the main session; "group" leaves it and
        [scopes] private out) and recent Retain facts, within budget characters (default
        context.DEFAULT_BUDGET), newest first when it must cut, each part labelled with its citation.
        Reads the files as `get` does: no index, no catch-up. today: a datetime.date (default: today)."""
        from zmem.query.context import DEFAULT_BUDGET, build_context
        if budget is not None and budget < 1:
            from zmem.errors import ZmemError
            raise ZmemError(f"the budget must be at least 1 character (got {budget})", hint="e.g. 8000",
                            param="budget")
        return build_context(self.workspace, scope=self._scope(scope),
                             budget=DEFAULT_BUDGET if budget is None else budget, today=today)

    def get(self, path: str, *, start: int | None = None, count: int | None = None, rev: str | None = None,
            scope: str | None = None) -> Lines:
        """Exactly the cited lines of a memory file. path may carry a citation (path#L3-L5, or
        path@REV#L3-L5 for the file at a commit); start (1-based) and count override its range.
        Reads the file itself: no index, no catch-up."""
        from zmem.query.reading import Lines
        from zmem.query.reading import read_lines
        out = read_lines(self.workspace, path, start=start, count=count, rev=rev, scope=self._scope(scope))
        return Lines(path=out["path"], start=out["from"], end_line=out["end_line"], lines=out["lines"],
                     total_lines=out["total_lines"], text=out["text"], citation=out["citation"], rev=out.get("rev"))

    def file_warnings(self) -> list[str]:
        """What indexing said about the memory files (malformed Retain bullets, undecodable bytes…),
        also of files indexed earlier (by a hook), after the freshness check."""
        from zmem.index.catchup import stored_warnings
        self.fresh()
        return stored_warnings(self.conn)

    def facts(self, *, entity: str | None = None, kind: str | None = None, since: str | None = None,
              until: str | None = None, limit: int | None = None, origin: bool = False) -> Facts:
        """The typed facts of `## Retain` sections, newest first; origin adds the commit, author and
        time that added each (git blame). warnings: every malformed bullet, with file and line;
        total: how many facts pass the filters (more than returned when limit cut them)."""
        from zmem.results import Facts
        from zmem.query.entities import count_facts, normalize_kind, query_facts, resolve_entity
        from zmem.text.dates import parse_when
        from zmem.text.retain import entity_key
        ws, conn = self.workspace, self.conn
        warnings = self.file_warnings()
        key = entity_key(entity) if entity else None
        # a name as facts spell it is one index lookup; resolve_entity builds every entity (other
        # spellings, page titles, suggestions)
        if key is not None and not conn.execute("SELECT 1 FROM fact_entities WHERE entity = ? LIMIT 1",
                                                (key,)).fetchone():
            key = resolve_entity(ws, conn, entity).key
        filters = dict(entity=key, kind=normalize_kind(kind), since=parse_when(since) if since else None,
                       until=parse_when(until, end=True) if until else None)
        rows = query_facts(conn, **filters, limit=limit)
        total = count_facts(conn, **filters) if limit and len(rows) == limit else len(rows)
        if origin:
            from zmem.history.asof import attach_origins
            attach_origins(ws, conn, rows)
        return Facts(rows, warnings, total)

    def entity(self, name: str) -> EntityReport:
        """What memory holds about the entity NAME (@ optional); a ZmemError suggesting close
        spellings when it is unknown."""
        from zmem.results import EntityReport
        from zmem.text import opinions as op_mod
        from zmem.query.entities import all_entities, neighbourhood, page_text, query_facts, resolve_entity, \
            suspected_duplicates
        ws, conn = self.workspace, self.conn
        warnings = list(self.fresh().warnings)
        entities = all_entities(ws, conn)
        ent = resolve_entity(ws, conn, name, entities)
        facts = query_facts(conn, entity=ent.key)
        _, found = neighbourhood(conn, ent.key, 1)
        parsed = op_mod.read(ws.root)
        related = []
        for e in found:
            other = e.target if e.source == ent.key else e.source
            kind = e.type if e.type == "co-mentioned" or e.source == ent.key else f"{e.type} (of)"
            related.append({"key": other, "name": entities[other].name if other in entities else other, "type": kind,
                            "count": e.count, "weight": round(e.weight, 3), "last_day": e.last_day,
                            "evidence": e.evidence})
        dups = suspected_duplicates(entities, name=ent.name)
        return EntityReport(ent, page_text(ws, ent.page), facts, [o for o in parsed.opinions if ent.key in o.entity_keys],
                            related, dups, warnings + parsed.warnings)

    def graph(self, name: str, depth: int = 1, *, scope: str | None = None) -> Neighbourhood:
        """The neighbourhood of the entity NAME (@ optional): entities within depth hops and the
        edges among them; a ZmemError with suggestions if unknown. scope "group": facts and pages in
        private files count as nonexistent (an entity only they mention is unknown; fact counts,
        edges, weights and evidence come from the other files)."""
        from zmem.results import Neighbourhood
        from zmem.query.entities import all_entities, neighbourhood, resolve_entity
        scope = self._scope(scope)
        ws, conn = self.workspace, self.conn
        warnings = self.fresh().warnings
        with _public_only(conn, ws.private_globs() if scope == "group" else None):
            entities = all_entities(ws, conn)
            ent = resolve_entity(ws, conn, name, entities)
            reached, found = neighbourhood(conn, ent.key, depth)
        return Neighbourhood(ent, depth, entities, reached, found, warnings,
                             private=ws.is_private if scope == "group" else None)

    def graph_export(self) -> dict:
        """The whole graph, {"nodes", "edges"}, for other tools to load (`zmem graph --export`)."""
        from zmem.query.entities import export_graph
        self.fresh()
        return export_graph(self.workspace, self.conn)

    def opinions(self, entity: str | None = None, *, notice: Callable[[str], None] | None = None) -> Opinions:
        """The opinions of bank/opinions.md, of one entity or all, and the `O` facts awaiting reflect.
        notice receives the warnings as soon as they are known (before an unknown entity fails)."""
        from zmem.results import Opinions
        from zmem.text import opinions as op_mod
        from zmem.query.entities import awaiting_reflect, resolve_entity
        from zmem.text.retain import entity_key
        ws = self.workspace
        parsed = op_mod.read(ws.root)
        warnings = list(parsed.warnings)
        conn = self.conn
        warnings += self.fresh().warnings
        for w in warnings if notice else ():
            notice(w)
        key = None
        if entity:
            key = entity_key(entity)
            if not any(key in o.entity_keys for o in parsed.opinions):  # another spelling, or a typo
                key = resolve_entity(ws, conn, entity).key
        waiting = awaiting_reflect(conn, parsed, key)
        rows = [o for o in parsed.opinions if key is None or key in o.entity_keys]
        return Opinions(rows, waiting, (ws.root / op_mod.OPINIONS_PATH).is_file(), warnings)

    # -- history

    def blame(self, target: str, *, follow: bool = True, k: int = 3, scope: str | None = None) -> Blame:
        """Who wrote each line of target, when, in which commit. target: path#Lx-Ly, path:LINE,
        path@REV#Lx-Ly, a fact id, or a query (its top k hits). follow: also blame the daily-log
        lines that lines `zmem reflect` wrote cite (the evidence chain). A shallow clone says in
        warnings that older lines are credited to its oldest commit."""
        from zmem.results import Blame
        from zmem.history.blame import blame
        from zmem.history.asof import workspace_shallow_notes
        scope = self._scope(scope)
        ws, conn = self.workspace, self.conn
        warnings = list(self.fresh().warnings)
        ranges = blame(ws, conn, target, follow=follow, k=k)
        if scope == "group":
            ranges = [r for r in (_public_range(ws, r) for r in ranges) if r is not None]
            if not ranges:
                from zmem.errors import ZmemError, arg
                raise ZmemError(f"{target} is in private files only, and this is a group scope",
                                hint="private files (MEMORY.md, [scopes] private in zmem.toml) are blamed by "
                                     + arg("scope", "private"))
        return Blame(target, ranges, warnings + workspace_shallow_notes(ws))

    def log(self, target: str, *, since: str | None = None, reverse: bool = False) -> Log:
        """The timeline of @ENTITY (facts and opinions added, changed, retracted; the history index
        is built on first use) or of a memory file (renames followed), newest first."""
        from zmem.results import Log
        from zmem.history.asof import workspace_shallow_notes
        from zmem.text.dates import parse_when
        ws = self.workspace
        since_day = parse_when(since) if since else None
        conn = self.conn
        warnings = list(self.fresh().warnings)
        if target.lower().endswith(".md") and not target.startswith("@"):
            from zmem.errors import ZmemError
            from zmem.workspace.paths import normalize_rel
            from zmem.git.repo import file_log
            from zmem.history.timeline import file_fact_changes
            rel = normalize_rel(target)
            if rel is None or not ws.is_memory_path(rel):
                raise ZmemError(f"not a memory file: {target}", hint="e.g. zmem log memory/2025-11-27.md, or zmem log @Peter")
            warnings += workspace_shallow_notes(ws)
            events = [{**e, "date": _iso_time(e["time"])} for e in file_log(ws.root, rel)]
            file_fact_changes(ws, events)
            events = [e for e in events if not since_day or e["date"][:10] >= since_day]
            events = events[::-1] if reverse else events  # file_log is newest first, as git log
            return Log(target, "file", events, rel, warnings)
        from zmem.history.asof import history_entity_key
        from zmem.history.timeline import entity_log, require_history
        warnings += require_history(ws, conn) or workspace_shallow_notes(ws)
        key = history_entity_key(ws, conn, target)
        return Log(target, "entity", entity_log(ws, conn, key, since=since_day, reverse=reverse), None, warnings)

    def diff(self, rev1: str, rev2: str = "HEAD", *, entity: str | None = None,
             notice: Callable[[str], None] | None = None) -> BeliefDiff:
        """What memory believed differently at rev2 than at rev1 (commits, branches, tags or dates):
        facts added, retracted, changed, moved; opinions added, removed, and confidence changes.
        notice receives the warnings as soon as they are known, before the comparison (which may
        fail on an unknown revision or entity)."""
        from zmem.results import BeliefDiff
        from zmem.git.gitstatus import open_command_repo
        from zmem.history.asof import history_entity_key, workspace_shallow_notes
        from zmem.history.timeline import belief_diff, require_history
        ws, conn = self.workspace, self.conn
        warnings = self.fresh().warnings
        built = require_history(ws, conn)
        repo = open_command_repo(ws.root)  # once: each opening is a git process
        warnings = warnings + (built or workspace_shallow_notes(ws, repo))
        for w in warnings if notice else ():
            notice(w)
        key = history_entity_key(ws, conn, entity) if entity else None
        d = belief_diff(ws, conn, rev1, rev2, entity=key, repo=repo)
        return BeliefDiff(d["from"], d["to"], d["facts"], d["opinions"], warnings)

    # -- writing

    def append(self, text: str, *, retain: str | None = None, entities=(), confidence: float | None = None,
               commit: bool = True) -> Appended:
        """Append to today's log (a note, or a Retain fact of kind retain: W, B, O, S, R), commit
        it, and catch the index up so it is recallable at once.
        Only what fails before the note is written is an error. Once it is in the file, the append
        has happened: a commit or an index that cannot be updated is a warning, never an error (an
        agent told the append failed would write the note again)."""
        from zmem.results import Appended
        from zmem.index.append import append
        ws = self.workspace
        res = append(ws, text, retain=retain.upper() if retain else None, entities=entities or (),
                     confidence=confidence, commit=commit)
        try:
            fresh = self.catch_up()
            later = list(fresh.warnings)
            if fresh.stale:  # the index could not take the note in (read-only, locked): it says why above
                later.append(_saved(res) + "the index could not be updated (see above); `zmem index` takes the note "
                                           "in once it can")
        except Exception as e:  # noqa: BLE001 - the note is saved whatever the index does
            self._close_conn()
            later = [_not_searchable_yet(res, e)]
        return Appended(res.path, res.line, res.end_line, res.citation, res.text, res.committed, res.commit,
                        res.warnings + later)

    def commit_files(self, paths: list[str], *, by: str = "an agent") -> dict:
        """Commit these memory files as they are (written by something other than zmem: an agent's
        file tool), then catch the index up. Every path must be an existing memory file of this
        workspace (the same check as get). Returns {paths, commit, committed}: committed is False
        when HEAD already held them as they are."""
        from zmem.errors import ZmemError
        from zmem.git.commit import ALREADY_COMMITTED, commit_paths
        from zmem.workspace.core import resolve_memory_path
        ws = self.workspace
        rels = sorted({resolve_memory_path(ws, p) for p in paths})
        if not rels:
            raise ZmemError("no memory file to commit", hint="give one or more memory files, e.g. memory/2025-11-27.md")
        subject = f"zmem: {rels[0]}" if len(rels) == 1 else f"zmem: {len(rels)} memory files"
        sha, why = commit_paths(ws.root, rels, f"{subject}\n\nwritten by {by}\n\n" + "\n".join(rels) + "\n")
        if sha is None:
            raise ZmemError(f"cannot commit {', '.join(rels)}: {why}", hint="git status in the workspace shows why")
        self.catch_up()
        return {"paths": rels, "commit": sha, "committed": why != ALREADY_COMMITTED}

    def reflect(self, *, since: str | None = None, dry_run: bool = False, commit: bool = True,
                apply_proposals: bool = False, llm: bool = False) -> ReflectResult:
        """Update entity pages and opinions from new Retain facts, as one git commit. since: use
        facts added since then (7d, 2w, YYYY-MM-DD, or "all"; default: since the last reflect
        commit). llm: also a prose summary per updated page from the [llm] chat model."""
        import datetime as dt
        from zmem.reflect.run import reflect
        everything = bool(since) and since.strip().lower() == "all"
        when = None
        if since and not everything:
            from zmem.text.dates import commit_time, day_start
            from zmem.text.dates import parse_when
            when = commit_time(day_start(dt.date.fromisoformat(parse_when(since))))
        ws = self.workspace
        return reflect(ws, since=when, everything=everything, dry_run=dry_run, commit=commit,
                       apply_proposals=apply_proposals, llm=llm, conn=self.conn)

    # -- the index

    def index(self, *, full: bool = False, embed: bool = True, history: bool = False, sessions: bool = False,
              progress: Progress | None = None, notice: Callable[[str], None] | None = None) -> IndexReport:
        """Bring everything enabled up to date: the memory files (full: rebuilt from scratch into a
        new file swapped in atomically), the history index once built (history: build it now),
        session transcripts when enabled (sessions alone: only them), and embeddings (unless not
        embed). notice receives each warning as it arises (the CLI prints them at once);
        IndexReport.warnings lists those `zmem index --json` reports."""
        from zmem.results import IndexReport
        from zmem.errors import ZmemError
        from zmem.index.catchup import CatchUp, rebuild
        from zmem.workspace.session_settings import settings_for
        say = notice or (lambda _w: None)
        stage = progress or (lambda _label: None)
        ws = self.workspace
        settings = settings_for(ws)
        only_sessions = sessions and not (full or history)  # what recall starts in the background
        if sessions and not settings.enabled:
            from zmem.workspace.config import sessions_off
            raise sessions_off(ws.config)
        if only_sessions:
            result, warnings = CatchUp(), []
        else:
            if full:
                self._close_conn()  # the file is replaced: the next use opens the new one
                result = self._fresh = rebuild(ws, progress=stage("indexing"))
            else:
                result = self.catch_up(progress=stage("indexing"), lock_timeout=60)
            from zmem.index.catchup import stored_warnings
            # every file's current warnings (malformed Retain bullets …), also of files a hook indexed already
            warnings = result.warnings + [w for w in stored_warnings(self.conn) if w not in result.warnings]
        for w in warnings:
            say(w)
        report = IndexReport(result, full, warnings, sessions_only=only_sessions)
        if history:
            from zmem.history.asof import ensure_history
            report.history = ensure_history(ws, self.conn, progress=stage("history"))
            if report.history is None:
                raise ZmemError("another zmem process is updating the index", hint="run `zmem index --history` again")
            if report.history.shallow:
                say("this is a shallow clone: history before its oldest commit is missing "
                    "(`git fetch --unshallow` brings it)")
        if settings.enabled:
            from zmem.index.catchup import IndexLock, LockTimeout
            from zmem.query.sessions import index_sessions
            try:
                with IndexLock(ws, 60):
                    report.sessions = index_sessions(self.conn, settings, force=True)
            except LockTimeout:
                raise ZmemError("another zmem process is updating the index", hint="run the command again") from None
            for w in report.sessions.skipped:  # transcript lines not taken (file:line), files that could not be read
                say(w)
                warnings.append(w)
        if embed and not only_sessions:  # transcripts have no vectors
            from zmem.index.embedding import run_embed_job
            report.embeddings = run_embed_job(ws, progress=stage("embedding"))
            emb = report.embeddings
            for w in emb.warnings if emb else ():
                say(w)
                warnings.append(w)
            if emb and emb.error:
                say(f"embedding stopped: {emb.error}; " + (
                    f"{emb.pending} chunks await embedding: `zmem embed` retries (BM25 recall finds them meanwhile)"
                    if emb.provider else "nothing was embedded"))
        return report

    def embed(self, *, background: bool = False, progress: Callable[[int, int], None] | None = None) -> EmbedReport | None:
        """Embed the chunks that have no vector yet with the configured provider, after the
        freshness check. None when no provider is configured (or, background, another embedding
        job is running: it then returns at once instead of waiting)."""
        from zmem.index.embedding import give_up_after, run_embed_job
        ws = self.workspace
        self.fresh()
        return run_embed_job(ws, progress=progress, wait=not background,
                             give_up=give_up_after(ws, explicit=not background))

    def status(self) -> Status:
        """The workspace, HEAD against the indexed commit, dirty memory files, the index and the
        providers, as they are: status does not catch up."""
        from zmem.results import Status
        from zmem.status import workspace_status
        return Status(**workspace_status(self.workspace, self.conn))

    def doctor(self) -> list[Check]:
        """Checks of git, the SQLite driver, sqlite-vec, the hooks, the config, the index (a damaged
        full-text table is rebuilt), opinions, entity pages, and suspected duplicate entities.
        Also runs where no workspace is found (that is then a failed check)."""
        from zmem.errors import ZmemError
        from zmem.results import Check
        from zmem.query.entities import duplicate_warnings
        from zmem.status import run_doctor
        try:
            ws = self.workspace
        except ZmemError:
            ws = None  # run_doctor says why, as a failed check
        # the Memory's connection, opened where the index check opens it (run_doctor says what fails)
        checks = [Check(*c) for c in run_doctor(self.directory, workspace=ws,
                                                 connect=(lambda: self.conn) if ws is not None else None)]
        return checks + [Check("warn", "entities", w)
                         for w in duplicate_warnings(self.directory, ws=ws, conn=self._conn if ws else None)]


def _iso_time(t: int) -> str:
    from zmem.text.dates import commit_time
    return commit_time(t).isoformat()


def _stamp(path, ino: bool = False):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if ino else (st.st_mtime_ns, st.st_size, st.st_ino)


def _model_files(ws: Workspace) -> tuple:
    """Stamps of the local model files the configuration names (primary and fallback)."""
    from zmem.embedders import fallback_settings
    settings = ws.config.embeddings
    paths = [s.get("model_path") for s in (settings, fallback_settings(settings) or {})]
    return tuple(_stamp(Path(p).expanduser()) for p in paths if isinstance(p, str))


def _public_range(ws: Workspace, r: BlamedRange) -> BlamedRange | None:
    """A blamed range with private files (and evidence from them) left out; None if it is private."""
    from dataclasses import replace
    if ws.is_private(r.path):
        return None
    return replace(r, evidence=[e for e in (_public_range(ws, x) for x in r.evidence) if e is not None])


# ----------------------------------------------------------------------------- recall's parts


def _unsearchable(conn, already: list[str]) -> list[str]:
    """Memory files the index holds no text of (too large, binary, unreadable), named by every recall
    and not only by the catch-up that found them: an answer without them may be missing something."""
    skipped = [line for (w,) in conn.execute("SELECT warning FROM files WHERE chunks = 0 AND warning LIKE '%skipped:%'")
               for line in w.split("\n") if "skipped:" in line and line not in already]
    if not skipped:
        return []
    more = f"; and {len(skipped) - 3} more (`zmem status` lists them)" if len(skipped) > 3 else ""
    return [f"not searchable: {'; '.join(skipped[:3])}{more}"]


def _reads_tokens(cfg) -> bool:
    """Whether recall.rerank asks the embedding model to read the first hits (zmem.query.tokencover.NAME)
    rather than names a cross-encoder."""
    if not cfg.rerank:
        return False
    from zmem.query.tokencover import NAME
    return cfg.rerank == NAME


def _rerank_stage(ws: Workspace, asked: bool | None):
    """(search.recall's rerank step or None, warnings): the model recall.rerank names (`--rerank`
    without one: zmem.query.rerank.DEFAULT_MODEL), loaded once per process; none when the embedding model
    reads instead (_reads_tokens). A model path set by a zmem.toml that is not trusted is not read (a cloned
    repository must not choose files to load)."""
    cfg = ws.config
    if asked is False or not (cfg.rerank or asked) or _reads_tokens(cfg):
        return None, []
    from functools import partial
    from zmem.query import rerank
    spec = cfg.rerank or rerank.DEFAULT_MODEL
    own = str(ws.root / "zmem.toml")
    if cfg.origins.get("recall.rerank") == own and cfg.trust != "trusted" and rerank.is_path(spec):
        from zmem.workspace.config import trust_advice
        return None, [f"not reranked: zmem.toml sets recall.rerank to a path, read only after you {trust_advice(cfg)}"]
    try:
        encoder = rerank.load(spec)
    except rerank.RerankError as e:
        return None, [rerank.not_reranked(e)]
    return partial(rerank.stage, encoder), []


def _token_reader(ws: Workspace, store, providers, timeout: float, warnings: list[str]):
    """queryvector.token_cover when recall.rerank asks the embedding model to read (_reads_tokens), or None with
    a warning when the model that made the vectors gives no token states (an endpoint's)."""
    embedder = providers().for_fingerprint(store.fingerprint())
    if embedder is None:
        return None
    if embedder.reads_tokens:
        return token_cover(ws, store, providers, timeout)
    warnings.append(f'not reranked: rerank = "{ws.config.rerank}" reads with a model zmem runs itself (the onnx '
                    f'provider); the {embedder.provider} provider gives no token states')
    return None


def warm_reranker(ws: Workspace) -> None:
    """Load the reranker recall.rerank names, if any (the MCP server does, in the background, at start),
    so that the first reranked recall does not pay ~0.5 s for onnxruntime and the model. A model that
    cannot load is left for that recall to warn about."""
    from zmem.errors import ZmemError
    stage, _ = _rerank_stage(ws, None)
    if stage is not None:
        try:
            stage.args[0].warm()
        except ZmemError:
            pass


def _with_sessions(ws: Workspace, conn, res: Recall, query: str, k: int, source: str, scope: str, settings) -> Recall:
    """Session transcript hits merged into (or, for source sessions, instead of) memory hits."""
    from zmem.query.sessions import merge_scored, pending, search_sessions, spawn_session_index, unmatched_warning
    if scope == "group":
        res.warnings.append("session transcripts are private: not searched with --scope group")
        return res
    missing = unmatched_warning(settings)
    if missing:
        res.warnings.append(missing)
    due = pending(conn, settings)
    if due:
        spawn_session_index(ws)
        res.warnings.append(f"{len(due)} session files have new messages, being indexed in the background")
    hits = search_sessions(conn, query, k, ws.config.snippet_chars)
    res.results = hits[:k] if source == "sessions" else merge_scored(
        conn, query, res.results, hits, k, mode=res.mode, text_weight=ws.config.text_weight,
        vector_weight=ws.config.vector_weight)
    return res


def _asked(mode: str | None, cfg) -> bool:
    """Whether vectors were asked for (--mode, or recall.mode set in a config file), rather than the
    default, which means "hybrid when there are vectors"."""
    return mode not in (None, "bm25") or (cfg.recall_mode != "bm25" and "recall.mode" in cfg.origins)


def _nothing_to_embed_with(cfg) -> bool:
    """No provider configured, or auto finding none (the default with nothing installed): known without
    importing zmem.index.embedding and the providers, which a fresh keyword recall need not pay for."""
    settings = cfg.embeddings
    if cfg.untrusted or settings.get("fallback", "none") != "none":
        return False  # the providers say what is untrusted or which fallback runs
    from zmem.embedders import DEFAULT_PROVIDER
    provider = settings.get("provider", DEFAULT_PROVIDER)
    if provider == "auto":
        from zmem.embedders.auto import resolve
        return resolve(settings)[0] is None
    return provider == "none"




def _recall_as_of(ws: Workspace, conn, query: str, as_of: str, *, k: int, since, until, path_glob, max_chars,
                  mode, kind, entity, exclude, explain, query_timeout, providers, asked, by_tokens=False) -> Recall:
    from zmem.history import asof as history
    from zmem.errors import TRY_AGAIN, ZmemError
    from zmem.index.history import enabled
    notes = []
    if not enabled(conn):
        built = history.ensure_history(ws, conn)
        if built is None:
            raise ZmemError("another zmem process is updating the index", hint=TRY_AGAIN)
        notes.append(f"built the history index first ({built.commits} commits, {built.seconds:.1f} s); "
                     "later commits extend it as they come")
    from zmem.git.gitstatus import open_command_repo
    repo = open_command_repo(ws.root)  # once: each opening is a git process
    at = history.resolve_as_of(ws, conn, as_of, repo)
    if kind or entity:
        res = history.recall_facts_as_of(ws, conn, query, at, k=k, kind=kind, entity=entity, exclude=exclude,
                                         repo=repo)
    else:
        qvec = store = None
        if mode != "bm25":  # the provider that made the stored vectors, as for a current recall
            qvec, store, more = _query_vector(ws, conn, query, query_timeout, False, providers, asked=asked)
            notes += [m for m in more if "not embedded yet" not in m]  # about the current files, not these
        cfg = ws.config
        res = history.recall_as_of(ws, conn, query, at, k=k, since=since, until=until, path_glob=path_glob,
                                   max_chars=max_chars, snippet_chars=cfg.snippet_chars, exclude=exclude,
                                   mode=mode if qvec is not None else "bm25", query_vector=qvec, store=store,
                                   fusion=cfg.fusion, vector_weight=cfg.vector_weight, text_weight=cfg.text_weight,
                                   multiplier=cfg.candidate_multiplier, explain=explain, repo=repo,
                                   similar=word_similarity(ws, store, providers, query_timeout) if qvec else None,
                                   cover=_token_reader(ws, store, providers, query_timeout, notes)
                                   if qvec and by_tokens else None)
    res.warnings = notes + res.warnings
    return res



def _not_searchable_yet(res, e: Exception) -> str:
    """The warning for a note written (and committed or not) that the index could not take in."""
    from zmem.errors import describe
    problem = describe(e)
    if isinstance(e, OSError) and problem.bug:  # the disk, not zmem
        why = f"{e.filename}: {e.strerror or e}" if e.filename else str(e.strerror or e)
        fix = ("fix that, then run `zmem index` (the index is derived from the notes: `zmem index --full` "
               "rebuilds it)")
    elif problem.bug:
        why, fix = problem.message, "`zmem index` retries; this is a bug in zmem, please report it"
    else:
        why, fix = problem.message, problem.hint or "run `zmem index` when that is fixed"
    return _saved(res) + f"updating the index failed: {why}; {fix}"


def _saved(res) -> str:
    return f"the note is {'saved and committed' if res.committed else 'saved'} ({res.citation}) but not searchable yet: "



@contextmanager
def _public_only(conn, private_globs):
    """While open, the connection sees only facts (and entity pages) outside private_globs: temporary
    views named like the tables shadow them (unqualified names resolve to temp first)."""
    if not private_globs:
        yield
        return
    quoted = " OR ".join("path GLOB '" + g.replace("'", "''") + "'" for g in private_globs)
    views = {"facts": f"SELECT * FROM main.facts WHERE NOT ({quoted})",
             "fact_entities": "SELECT * FROM main.fact_entities WHERE fact_id IN (SELECT id FROM temp.facts)",
             "relations": "SELECT * FROM main.relations WHERE fact_id IN (SELECT id FROM temp.facts)",
             "files": f"SELECT * FROM main.files WHERE NOT ({quoted})",
             "chunks": f"SELECT * FROM main.chunks WHERE NOT ({quoted})"}  # resolve_entity's hint reads notes
    try:
        for view, select in views.items():
            conn.execute(f"DROP VIEW IF EXISTS temp.{view}")
            conn.execute(f"CREATE TEMP VIEW {view} AS {select}")
        yield
    finally:
        for view in views:
            conn.execute(f"DROP VIEW IF EXISTS temp.{view}")
