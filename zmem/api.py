"""The library's front door: what the CLI and the MCP server (`zmem mcp`) call.
Catch-up, provider selection, query embedding and recall, with every degradation in warnings;
and the JSON shapes both of them print (append, blame, graph), defined once here."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from zmem.indexer import catch_up, open_index
from zmem.search import Recall, recall
from zmem.workspace import Workspace

NO_PROVIDER = "no embedding provider configured: keyword (BM25) recall only"
RECENT_TIMEOUT = 60.0  # seconds a provider that timed out on a query is not asked again (by any process)


def _unsearchable(conn, already: list[str]) -> list[str]:
    """Memory files the index holds no text of (too large, binary, unreadable), named by every recall
    and not only by the catch-up that found them: an answer without them may be missing something."""
    skipped = [line for (w,) in conn.execute("SELECT warning FROM files WHERE chunks = 0 AND warning LIKE '%skipped:%'")
               for line in w.split("\n") if "skipped:" in line and line not in already]
    if not skipped:
        return []
    more = f"; and {len(skipped) - 3} more (`zmem status` lists them)" if len(skipped) > 3 else ""
    return [f"not searchable: {'; '.join(skipped[:3])}{more}"]


def recall_workspace(ws: Workspace, query: str, *, k: int | None = None, since: str | None = None,
                     until: str | None = None, path_glob: str | None = None, max_chars: int | None = None,
                     mode: str | None = None, explain: bool = False, query_timeout: float = 10.0,
                     background_embed: bool = True, progress=None, kind: str | None = None,
                     entity: str | None = None, as_of: str | None = None, scope: str = "private",
                     source: str | None = None, conn=None, providers=None, caught_up=None,
                     vector_matrix=None) -> Recall:
    """Recall over notes; with kind or entity, over Retain facts (FactHit results); with as_of
    (a date or revision), over the memory as it stood at that commit. scope "group" never returns
    MEMORY.md or the paths config lists as private (nor session transcripts). source: memory,
    sessions or all (default: all when [sessions] is enabled, else memory; always memory with kind,
    entity or as_of, which an explicit sessions or all refuses).
    A long-running caller (the MCP server) passes its open index connection (left open), its
    embedding providers (built once, so a local model is loaded once) and, when it knows the index
    is already fresh, the CatchUp that says so (caught_up; otherwise recall catches up first), and
    a vectors.VectorMatrix it keeps (vector_matrix: stored vectors searched in memory)."""
    if scope not in ("private", "group"):
        raise ValueError(f"unknown scope {scope!r}")
    from zmem.session_settings import settings_for
    sessions = settings_for(ws)
    if source is None:  # facts and the past are in memory files: the default source there is memory
        source = "all" if sessions.enabled and not (kind or entity or as_of) else "memory"
    if source != "memory" and not sessions.enabled:
        from zmem.config import sessions_off
        raise sessions_off(ws.config)
    if source != "memory" and (kind or entity or as_of):
        from zmem.errors import ZmemError
        raise ZmemError("--kind, --entity and --as-of search memory files, not session transcripts",
                        hint="use --source memory (or leave --source out)")
    exclude = ws.private_globs() if scope == "group" else None
    if since and until and since > until:
        from zmem.errors import ZmemError
        raise ZmemError(f"the range is empty: since {since} is after until {until}",
                        hint="swap them, or leave one out")
    if path_glob:
        from zmem.workspace import path_filter
        path_glob = path_filter(path_glob)
    cfg = ws.config
    own = conn is None
    if own:
        conn = open_index(ws)
    try:
        fresh = caught_up if caught_up is not None else catch_up(ws, progress=progress, conn=conn)
        if as_of is not None:
            res = _recall_as_of(ws, conn, query, as_of, k=k or cfg.recall_k, since=since, until=until,
                                path_glob=path_glob, max_chars=max_chars, mode=mode or cfg.recall_mode, kind=kind,
                                entity=entity, exclude=exclude, explain=explain, query_timeout=query_timeout,
                                providers=providers, asked=_asked(mode, cfg))
            res.warnings = fresh.warnings + res.warnings
            res.stale = fresh.stale
            return res
        warnings = list(fresh.warnings)
        warnings += _unsearchable(conn, warnings)
        requested = mode or cfg.recall_mode
        qvec, store, mode_used = None, None, "bm25"
        if requested != "bm25":
            qvec, store, notes = _query_vector(ws, conn, query, query_timeout, background_embed, providers, vector_matrix,
                                               asked=_asked(mode, cfg))
            warnings += notes
            if qvec is not None:
                mode_used = requested
        if kind or entity:
            from zmem.entities import normalize_kind, resolve_entity
            from zmem.search import recall_facts
            key = resolve_entity(ws, conn, entity).key if entity else None
            res = recall_facts(conn, query, k=k or cfg.recall_k, kind=normalize_kind(kind), entity=key, since=since,
                               until=until, path_glob=path_glob, mode=mode_used, query_vector=qvec, store=store,
                               fusion=cfg.fusion, vector_weight=cfg.vector_weight, text_weight=cfg.text_weight,
                               multiplier=cfg.candidate_multiplier, explain=explain, exclude=exclude)
        else:
            res = recall(conn, query, k=k or cfg.recall_k, since=since, until=until, path_glob=path_glob,
                         max_chars=max_chars, snippet_chars=cfg.snippet_chars, mode=mode_used, query_vector=qvec,
                         store=store, fusion=cfg.fusion, vector_weight=cfg.vector_weight,
                         text_weight=cfg.text_weight, multiplier=cfg.candidate_multiplier, explain=explain,
                         exclude=exclude)
        if source != "memory":
            res = _with_sessions(ws, conn, res, query, k or cfg.recall_k, source, scope, sessions)
    finally:
        if own:
            conn.close()
    res.warnings = warnings + res.warnings
    res.stale = fresh.stale
    return res


def _with_sessions(ws: Workspace, conn, res: Recall, query: str, k: int, source: str, scope: str, settings) -> Recall:
    """Session transcript hits merged into (or, for source sessions, instead of) memory hits."""
    from zmem.sessions import merge_ranked, pending, search_sessions, spawn_session_index, unmatched_warning
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
    res.results = hits[:k] if source == "sessions" else merge_ranked(res.results, hits, k)
    return res


def _asked(mode: str | None, cfg) -> bool:
    """Whether vectors were asked for (--mode, or a recall.mode other than the default hybrid), rather
    than the default, which means "hybrid when there are vectors"."""
    return mode not in (None, "bm25") or cfg.recall_mode == "vector"


def _query_vector(ws: Workspace, conn, query: str, timeout: float, background_embed: bool, provs=None, matrix=None,
                  asked: bool = True):
    """(query vector or None, store, warnings). Vectors are only compared with a query embedded
    by the provider that made them (same fingerprint). No provider configured is the documented
    default, not a degradation: a warning only when vectors were asked for (`asked`); `zmem status`
    and `zmem doctor` say it once."""
    settings = ws.config.embeddings
    if provs is None and not ws.config.untrusted and settings.get("provider", "none") == "none" \
            and settings.get("fallback", "none") == "none":  # the default: no need to import the providers
        return None, None, [NO_PROVIDER] if asked else []
    from zmem import db
    from zmem.embedders.base import EmbeddingError
    from zmem.embedding import pending_count, providers, spawn_embed_job, vector_fingerprint
    from zmem.vectors import VectorStore
    provs = provs if provs is not None else providers(ws)
    notes = list(provs.warnings)
    if provs.primary is None and provs.fallback is None:  # none configured, or none can run (notes say why)
        return None, None, notes + (["keyword (BM25) recall only"] if notes else [NO_PROVIDER] if asked else [])
    store = VectorStore(conn, matrix)
    stored = store.count()
    pending = pending_count(conn)
    fp = store.fingerprint()
    active = provs.primary or provs.fallback
    failed = db.get_meta(conn, "embed_error")
    read_only = db.readonly_reason(conn)  # nothing can be embedded into it
    if pending or fp != vector_fingerprint(active):
        ago = time.time() - float(db.get_meta(conn, "embed_failed_at") or "-inf")
        # after a failed run, not again at every recall: a provider that refuses (wrong dimensions, a
        # bad key) would be sent a batch of notes each time
        wait = RECENT_TIMEOUT - ago if failed and 0 <= ago < RECENT_TIMEOUT else 0
        started = background_embed and not wait and not read_only and spawn_embed_job(ws)
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        if pending:
            state = (f"the index is read-only: {read_only}" if read_only else
                     "embedding started in the background" if started else
                     f"embedding retried in {wait:.0f} s" if wait else "embedding is running")
            notes.append(f"{pending} of {total} chunks are not embedded yet and are found by keywords only ({state})"
                         + (f"; the last embedding run failed: {failed} (`zmem embed` shows it)" if failed else ""))
    embedder = provs.for_fingerprint(fp) if stored else None
    if embedder is None:
        if stored:
            state = (f"re-embedding them failed: {failed} (`zmem embed` shows it)" if failed else
                     f"the index is read-only ({read_only}), so they are not re-embedded" if read_only else
                     "they are being re-embedded")
            return None, None, notes + [f"stored vectors come from a different embedding model; {state}; "
                                        "keyword (BM25) recall meanwhile"]
        if not pending:
            return None, None, notes
        return None, None, notes + ["no vectors yet: keyword (BM25) recall only"]
    if embedder is not active:
        notes.append(f"vectors come from the fallback provider {embedder.provider}")
    if not store.vec_loaded:
        notes.append(f"vector search uses the exact in-process fallback ({store.detail})")
    key = vector_fingerprint(embedder)
    ago = time.time() - _query_timeouts(ws).get(key, float("-inf"))
    if 0 <= ago < RECENT_TIMEOUT:  # not waited for again by every recall, in any process
        return None, None, notes + [f"embedding provider timed out recently or could not be reached ({ago:.0f} s ago; "
                                    f"tried again in {RECENT_TIMEOUT - ago:.0f} s): keyword (BM25) recall only"]
    if timeout < embedder.timeout:
        embedder.timeout = timeout
    embedder.max_retries = 0  # one attempt: the whole query embedding takes at most the timeout
    t0 = time.monotonic()
    try:
        vector = embedder.embed([query], "query")[0]
    except EmbeddingError as e:
        message = e.message.replace(" (gave up after 0 retries)", "")
        timed_out = time.monotonic() - t0 >= 0.9 * embedder.timeout
        if timed_out or e.unreachable:  # a refused connection too: each recall would pay for trying
            _remember_query_timeout(ws, key, time.time())
            if timed_out:
                message += f", no answer within {embedder.timeout:g} s"
        return None, None, notes + [f"query embedding failed ({message}): keyword (BM25) recall only"]
    _remember_query_timeout(ws, key, None)
    return vector, store, notes


QUERY_TIMEOUTS = "query-timeouts.json"  # in the state dir: {vector fingerprint: time.time() of its last timeout}


def _query_timeouts(ws: Workspace) -> dict[str, float]:
    """When each provider last timed out on a query. Kept in a file because the CLI is a new process
    per recall: a dead endpoint would otherwise cost every recall the whole timeout."""
    import json
    try:
        marks = json.loads((ws.state_dir / QUERY_TIMEOUTS).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return {k: v for k, v in marks.items() if isinstance(v, (int, float))} if isinstance(marks, dict) else {}


def _remember_query_timeout(ws: Workspace, key: str, when: float | None) -> None:
    """Record a timeout (when) or a success (None) of the provider with this fingerprint."""
    import json
    import os
    marks = _query_timeouts(ws)
    if when is None and key not in marks:
        return  # the usual case: nothing to write
    if when is None:
        del marks[key]
    else:
        marks[key] = when
    path = ws.state_dir / QUERY_TIMEOUTS
    tmp = path.with_name(f".{QUERY_TIMEOUTS}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(marks), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only state dir: the next recall waits again, nothing worse
        pass


def _recall_as_of(ws: Workspace, conn, query: str, as_of: str, *, k: int, since, until, path_glob, max_chars,
                  mode, kind, entity, exclude, explain, query_timeout, providers, asked) -> Recall:
    from zmem import history
    from zmem.errors import ZmemError
    from zmem.history_build import enabled
    notes = []
    if not enabled(conn):
        built = history.ensure_history(ws, conn)
        if built is None:
            raise ZmemError("another zmem process is updating the index", hint="run the command again")
        notes.append(f"built the history index first ({built.commits} commits, {built.seconds:.1f} s); "
                     "later commits extend it as they come")
    at = history.resolve_as_of(ws, conn, as_of)
    if kind or entity:
        res = history.recall_facts_as_of(ws, conn, query, at, k=k, kind=kind, entity=entity, exclude=exclude)
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
                                   multiplier=cfg.candidate_multiplier, explain=explain)
    res.warnings = notes + res.warnings
    return res


# ----------------------------------------------------------------------------- shared JSON shapes


def append_note(ws: Workspace, text: str, *, retain: str | None = None, entities=(), confidence: float | None = None,
                commit: bool = True) -> dict:
    """The `zmem append` write path: append to today's log (a note, or a Retain fact with retain),
    commit it, catch the index up so it is recallable at once. Returns what `zmem append --json`
    prints (and the MCP tool memory_append returns).
    Only what fails before the note is written is an error. Once it is in the file, the append has
    happened: a commit or an index that cannot be updated is a warning, never an error (an agent
    told the append failed would write the note again)."""
    from zmem.append import append
    res = append(ws, text, retain=retain.upper() if retain else None, entities=entities, confidence=confidence,
                 commit=commit)
    try:
        fresh = catch_up(ws)
        later = list(fresh.warnings)
        if fresh.stale:  # the index could not take the note in (read-only, locked): it says why above
            later.append(_saved(res) + "the index could not be updated (see above); `zmem index` takes the note "
                                       "in once it can")
    except Exception as e:  # noqa: BLE001 - the note is saved whatever the index does
        later = [_not_searchable_yet(res, e)]
    return {"path": res.path, "line": res.line, "end_line": res.end_line, "citation": res.citation, "text": res.text,
            "committed": res.committed, "commit": res.commit, "warnings": res.warnings + later}


def _not_searchable_yet(res, e: Exception) -> str:
    """The warning for a note written (and committed or not) that the index could not take in."""
    from zmem.errors import ZmemError
    if isinstance(e, ZmemError):
        why, fix = e.message, e.hint or "run `zmem index` when that is fixed"
    elif type(e).__module__.startswith(("sqlite3", "pysqlite3")):
        why, fix = f"the index could not be used: {e}", "run `zmem index --full` to rebuild it from the Markdown files"
    elif isinstance(e, OSError):
        why = f"{e.filename}: {e.strerror or e}" if e.filename else str(e.strerror or e)
        fix = ("fix that, then run `zmem index` (the index is derived from the notes: `zmem index --full` "
               "rebuilds it)")
    else:
        why, fix = f"internal error: {type(e).__name__}: {e}", "`zmem index` retries; this is a bug in zmem, please report it"
    return _saved(res) + f"updating the index failed: {why}; {fix}"


def _saved(res) -> str:
    return f"the note is {'saved and committed' if res.committed else 'saved'} ({res.citation}) but not searchable yet: "


def blame_json(target: str, ranges) -> dict:
    """What `zmem blame --json` prints (and the MCP tool memory_blame returns)."""
    return {"target": target, "ranges": [r.to_json() for r in ranges]}


@dataclass
class Neighbourhood:
    """An entity, the entities within `depth` hops of it, and the edges among them (`zmem graph`)."""
    entity: object             # entities.Entity
    depth: int
    entities: dict = field(default_factory=dict)
    reached: set = field(default_factory=set)
    edges: list = field(default_factory=list)

    def to_json(self) -> dict:
        """What `zmem graph NAME --json` prints (and the MCP tool graph_search returns)."""
        return {"entity": self.entity.to_json(), "depth": self.depth,
                "nodes": [self.entities[k].to_json() for k in sorted(self.reached) if k in self.entities],
                "edges": [e.to_json(self.entities) for e in self.edges]}


def graph_neighbourhood(ws: Workspace, conn, name: str, depth: int = 1, entities: dict | None = None,
                        scope: str = "private") -> Neighbourhood:
    """The neighbourhood of the entity NAME (@ optional); a ZmemError with suggestions if unknown.
    scope "group": facts and pages in private files count as nonexistent (an entity only they
    mention is unknown; fact counts, edges, weights and evidence come from the other files)."""
    from zmem.entities import all_entities, neighbourhood, resolve_entity
    if scope not in ("private", "group"):
        raise ValueError(f"unknown scope {scope!r}")
    with _public_only(conn, ws.private_globs() if scope == "group" else None):
        entities = entities if entities is not None and scope == "private" else all_entities(ws, conn)
        ent = resolve_entity(ws, conn, name, entities)
        reached, found = neighbourhood(conn, ent.key, depth)
    return Neighbourhood(ent, depth, entities, reached, found)


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
             "files": f"SELECT * FROM main.files WHERE NOT ({quoted})"}
    try:
        for view, select in views.items():
            conn.execute(f"DROP VIEW IF EXISTS temp.{view}")
            conn.execute(f"CREATE TEMP VIEW {view} AS {select}")
        yield
    finally:
        for view in views:
            conn.execute(f"DROP VIEW IF EXISTS temp.{view}")
