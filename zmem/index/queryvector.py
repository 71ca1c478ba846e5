"""The query vector of a recall: embedded by the provider that made the stored vectors (or by the
watcher that holds its model loaded), within the query timeout; a provider that timed out is not asked
again for a while by any process (the timeouts are kept in the state directory)."""
from __future__ import annotations

import time

TYPE_CHECKING = False  # as typing's, without importing typing (~3 ms of a fresh recall); checkers know the name

if TYPE_CHECKING:
    from zmem.workspace.core import Workspace

NO_PROVIDER = "no embedding provider configured: keyword (BM25) recall only"
RECENT_TIMEOUT = 60.0  # seconds a provider that timed out on a query is not asked again (by any process)


def stranded_vectors(conn, cfg) -> list[str]:
    """The warning for an index holding vectors that nothing here can embed a query for, when the
    provider is `auto` and found none — typically a venv without the engine (onnxruntime) over an index
    another venv embedded: recall would otherwise answer by keywords without a word. A provider set
    to "none" chose keywords: nothing to say. One meta lookup; nothing imported."""
    settings = cfg.embeddings
    from zmem.embedders import DEFAULT_PROVIDER
    if settings.get("provider", DEFAULT_PROVIDER) != "auto":
        return []
    from zmem.store import db
    fingerprint = db.get_meta(conn, "vec_fingerprint")
    if not fingerprint or not conn.execute("SELECT 1 FROM chunk_vectors LIMIT 1").fetchone():
        return []
    import json
    import os
    import sys
    try:
        made = json.loads(fingerprint.partition("|windows=")[0])
    except ValueError:
        made = {}
    made = made if isinstance(made, dict) else {}
    provider, model = made.get("provider") or "an embedding provider", made.get("model") or ""
    name = f"{provider} {os.path.basename(str(model))}".strip()
    if provider == "onnx":
        from zmem.embedders.auto import onnx_installed
        if onnx_installed():  # the engine is here; the model is not where this user's zmem looks
            why = "the model is not installed for this user"
            fix = ("install it: `zmem model pull` (the default model), or `[embeddings] model_path` in zmem.toml "
                   "for a model directory of your own")
        else:
            from zmem.install import pip_install
            why = "onnxruntime is not installed in it"
            fix = f"install the semantic extra into the Python that runs zmem: {pip_install('semantic')}"
    else:
        why, fix = "no provider is configured or found", "configure [embeddings] as where the index was embedded"
    return [f"the index holds vectors made with {name}, but this Python ({sys.executable}) cannot embed the query "
            f"with it: {why}; keyword (BM25) recall only; {fix} (`zmem status` says what it finds)"]


def _query_vector(ws: Workspace, conn, query: str, timeout: float, background_embed: bool, providers, matrix=None,
                  asked: bool = True):
    """(query vector or None, store, warnings). Vectors are only compared with a query embedded
    by the provider that made them (same fingerprint). No provider configured is the documented
    default, not a degradation: a warning only when vectors were asked for (`asked`); `zmem status`
    and `zmem doctor` say it once. providers and matrix: callables giving the embedding providers and
    the in-memory vectors (vectors.VectorMatrix or None), asked for only when needed."""
    from zmem.store import db
    from zmem.embedders.base import EmbeddingError
    from zmem.index.embedding import pending_count, spawn_embed_job, vector_fingerprint
    from zmem.store.vectors import VectorStore
    provs = providers()
    notes = list(provs.warnings)
    if provs.primary is None and provs.fallback is None:  # none configured, or none can run (notes say why)
        stranded = [] if notes else stranded_vectors(conn, ws.config)
        return None, None, notes + (["keyword (BM25) recall only"] if notes else stranded or
                                    ([NO_PROVIDER] if asked else []))
    store = VectorStore(conn, matrix() if matrix else None)
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
            same_model = active is not None and (fp or "").partition("|windows=")[0] == active.fingerprint()
            what = ("stored vectors were cut into windows another way (by an older zmem)" if same_model else
                    "stored vectors come from a different embedding model")
            return None, None, notes + [f"{what}; {state}; keyword (BM25) recall meanwhile"]
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
    if embedder.in_process and not embedder.loaded:  # a watcher holding the model loaded may embed it
        from zmem.index import fsmonitor
        vector = fsmonitor.embedded(ws.state_dir, key, query, timeout=min(timeout, fsmonitor.EMBED_TIMEOUT))
        if vector is not None:
            return vector, store, notes
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


def word_similarity(ws: Workspace, store, providers, timeout: float):
    """A function (words, phrases) -> the cosine of words with each phrase, or None when they cannot be
    embedded, by the provider whose vectors the store holds: the model a watcher holds loaded when the
    provider runs in-process and this process has not loaded it (one request per text), else (or when the
    watcher does not answer) the provider itself. Recall asks it only to choose which of an entity's
    relations a word of the question names (search.entity_first); nothing is embedded until then."""
    def similar(words: str, phrases: list[str]) -> list[float] | None:
        from zmem.embedders.base import EmbeddingError
        from zmem.index.embedding import vector_fingerprint
        embedder = providers().for_fingerprint(store.fingerprint())
        if embedder is None:
            return None
        key = vector_fingerprint(embedder)
        texts = [t for t in dict.fromkeys([words, *phrases]) if (key, t) not in _word_vectors]
        vectors = None
        if texts and embedder.in_process and not embedder.loaded:
            from zmem.index import fsmonitor
            vectors = [fsmonitor.embedded(ws.state_dir, key, t, timeout=min(timeout, fsmonitor.EMBED_TIMEOUT))
                       for t in texts]
        if texts and (vectors is None or any(v is None for v in vectors)):
            try:
                vectors = embedder.embed(texts, "query")
            except EmbeddingError:
                return None
        import math
        if len(_word_vectors) > WORD_VECTORS:
            _word_vectors.clear()
        for t, v in zip(texts, vectors or []):
            _word_vectors[(key, t)] = [x / (math.sqrt(sum(y * y for y in v)) or 1.0) for x in v]
        first = _word_vectors[(key, words)]
        return [sum(a * b for a, b in zip(first, _word_vectors[(key, t)])) for t in phrases]
    return similar


def token_cover(ws: Workspace, store, providers, timeout: float):
    """A function (query, passages) -> how much of the query each passage holds token by token, or None
    (Embedder.cover; zmem.query.tokencover re-orders recall's first hits by it), read by the model whose
    vectors the store holds: the copy a watcher keeps loaded when this process has not loaded it (a fresh
    recall whose query the watcher embedded), else this process's own. Never a model loaded for this
    alone: when neither has it loaded, None (the order stays as fused)."""
    def cover(query: str, passages: list[str]) -> list[float] | None:
        from zmem.embedders.base import EmbeddingError
        from zmem.index.embedding import vector_fingerprint
        embedder = providers().for_fingerprint(store.fingerprint())
        if embedder is None or not embedder.reads_tokens:  # (llama.cpp runs in-process too, without token states)
            return None
        if not embedder.loaded:
            from zmem.index import fsmonitor
            return fsmonitor.covered(ws.state_dir, vector_fingerprint(embedder), query, passages,
                                     timeout=min(timeout, fsmonitor.COVER_TIMEOUT))
        try:
            return embedder.cover(query, passages)
        except EmbeddingError:
            return None
    return cover


# (vector fingerprint, text) -> its unit vector: a long-lived process (the MCP server) asked again about the same
# relations embeds nothing
WORD_VECTORS = 512
_word_vectors: dict[tuple[str, str], list[float]] = {}


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
