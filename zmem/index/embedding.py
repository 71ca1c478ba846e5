"""Embedding the index: which provider is active, pending chunks, the cache, background jobs."""
from __future__ import annotations

import errno
import fcntl
import os
import time
from dataclasses import dataclass, field

from zmem.store import db
from zmem.text.chunking import WINDOW_FINGERPRINT, chunk_windows, fences_at, text_hash
from zmem.embedders import fallback_settings, make_embedder
from zmem.embedders.base import Embedder, EmbeddingError
from zmem.store.vectors import VectorStore, pack, unpack
from zmem.workspace.core import Workspace


@dataclass
class Providers:
    primary: Embedder | None = None
    fallback: Embedder | None = None
    warnings: list[str] = field(default_factory=list)

    def for_fingerprint(self, fingerprint: str | None) -> Embedder | None:
        """The provider whose vectors are stored (queries must be embedded by the same one)."""
        for e in (self.primary, self.fallback):
            if e is not None and (fingerprint is None or vector_fingerprint(e) == fingerprint):
                return e
        return None


def providers(ws: Workspace) -> Providers:
    """Build the configured providers; configuration problems become warnings (BM25 still works)."""
    out = Providers()
    settings = ws.config.embeddings
    if ws.config.untrusted:
        from zmem.workspace.config import trust_note
        out.warnings.append(trust_note(ws.config))
    try:
        out.primary = make_embedder(settings)
    except EmbeddingError as e:
        out.warnings.append(f"embeddings off: {e.message} ({e.hint})")
    try:
        fb = fallback_settings(settings)  # [embeddings.fallback] has its own settings
        out.fallback = make_embedder(fb) if fb else None
    except EmbeddingError as e:
        out.warnings.append(f"fallback provider off: {e.message}" + (f" ({e.hint})" if e.hint else ""))
    return out


def vector_fingerprint(embedder: Embedder) -> str:
    """The provider's fingerprint plus how texts were cut into windows: vectors are comparable
    only when both match."""
    return f"{embedder.fingerprint()}|windows={WINDOW_FINGERPRINT}"


def _fences(conn, path: str, seen: dict[str, dict[int, str]]) -> dict[int, str]:
    """{start line: fence} of the chunks of path that start inside a code fence (chunking.fences_at), for
    their windows; seen keeps the last file's (a file's chunks have consecutive ids)."""
    if path not in seen:
        seen.clear()
        seen[path] = fences_at(conn.execute("SELECT start_line, text FROM chunks WHERE path = ?", (path,)).fetchall())
    return seen[path]


def pending_count(conn) -> int:
    return conn.execute("SELECT count(*) FROM chunks WHERE id NOT IN (SELECT chunk_id FROM chunk_vectors)").fetchone()[0]


def needs_embedding(ws: Workspace) -> bool:
    """Are there chunks without vectors, or vectors of another model than the configured one?"""
    provs = providers(ws)
    active = provs.primary or provs.fallback
    if active is None:
        return False
    from zmem.index.catchup import open_index
    conn = open_index(ws)
    try:
        if db.readonly_reason(conn) is not None:  # nothing could be stored
            return False
        return pending_count(conn) > 0 or db.get_meta(conn, "vec_fingerprint") not in (
            vector_fingerprint(active), vector_fingerprint(provs.fallback) if provs.fallback else None)
    finally:
        conn.close()


@dataclass
class EmbedReport:
    embedded: int = 0
    from_cache: int = 0
    pending: int = 0
    provider: str | None = None
    error: str | None = None
    hint: str | None = None  # the provider's own advice with the error (e.g. which package to install)
    reset: bool = False
    warnings: list[str] = field(default_factory=list)  # configuration problems (providers().warnings)


def embed_pending(ws: Workspace, conn, embedder: Embedder, *, batch: int | None = None, progress=None,
                  deadline: float | None = None) -> EmbedReport:
    """Embed every chunk that has no vector, reusing the cache; commits per batch so a failure
    keeps what was done. A new fingerprint (model, provider, dimensions) re-embeds everything."""
    store = VectorStore(conn)
    report = EmbedReport(provider=embedder.provider)
    fp = vector_fingerprint(embedder)
    if store.fingerprint() != fp:
        try:  # a provider that cannot answer must not drop the vectors another one made
            if store.count():
                embedder.embed(["zmem"], "document")
        except EmbeddingError as e:
            report.error, report.hint = e.message, e.hint
            report.pending = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]  # all need this model
            return report
        with db.write_transaction(conn):
            store.reset(fp)
        report.reset = True
    elif store.layout_outdated():  # an index from before the scan partitions: once
        with db.write_transaction(conn):
            store.upgrade_layout()
    total = pending_count(conn)
    fences: dict[str, dict[int, str]] = {}  # the last file's chunks that start inside a code fence
    batch = batch or embedder.batch_size  # one provider call per transaction: a failure keeps the rest
    done = 0
    while True:
        rows = conn.execute("SELECT id, text, heading, start_line, path FROM chunks WHERE id NOT IN "
                            "(SELECT chunk_id FROM chunk_vectors) ORDER BY id LIMIT ?",
                            (max(1, batch // 4),)).fetchall()  # ~4 windows per chunk
        if not rows or (deadline is not None and time.monotonic() > deadline):
            break
        wins = [w for cid, text, heading, start, path in rows
                for w in chunk_windows(cid, text, heading, start, _fences(conn, path, fences).get(start, ""))]
        hashes = [text_hash(w[3]) for w in wins]
        cached = _cache_get(conn, fp, set(hashes))
        missing = list(dict.fromkeys(h for h in hashes if h not in cached))
        texts = {h: w[3] for h, w in zip(hashes, wins)}
        try:
            fresh = embedder.embed([texts[h] for h in missing], "document") if missing else []
        except EmbeddingError as e:
            report.error, report.hint = e.message, e.hint
            break
        now = int(time.time())
        with db.write_transaction(conn):
            for h, vec in zip(missing, fresh):
                cached[h] = vec
                conn.execute("INSERT OR REPLACE INTO embedding_cache(fingerprint, hash, vector, last_used) VALUES(?,?,?,?)",
                             (fp, h, pack(vec), now))
            conn.executemany("UPDATE embedding_cache SET last_used = ? WHERE fingerprint = ? AND hash = ?",
                             [(now, fp, h) for h in set(hashes) - set(missing)])
            store.add([(cid, a, b, cached[h]) for (cid, a, b, _), h in zip(wins, hashes)])
        report.embedded += len(missing)
        report.from_cache += len(set(hashes)) - len(missing)
        done += len(rows)
        if progress:
            progress(min(done, total), total)
    prune_cache(conn, ws.config.cache_max_entries)
    report.pending = pending_count(conn)
    return report


def _cache_get(conn, fp: str, hashes: set[str]) -> dict[str, list[float]]:
    out = {}
    items = sorted(hashes)
    for i in range(0, len(items), 500):
        part = items[i:i + 500]
        for h, blob in conn.execute(f"SELECT hash, vector FROM embedding_cache WHERE fingerprint = ? AND hash IN "
                                    f"({','.join('?' * len(part))})", (fp, *part)):
            out[h] = unpack(blob)
    return out


def prune_cache(conn, max_entries: int) -> int:
    """Keep the max_entries most recently used cache entries."""
    n = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
    if n <= max_entries:
        return 0
    conn.execute("DELETE FROM embedding_cache WHERE (fingerprint, hash) IN "
                 "(SELECT fingerprint, hash FROM embedding_cache ORDER BY last_used, hash LIMIT ?)", (n - max_entries,))
    return n - max_entries


class EmbedLock:
    """At most one embedding job per workspace; others skip instead of queueing."""

    def __init__(self, ws: Workspace):
        self.path = ws.state_dir / "embed.lock"
        self.fd: int | None = None

    def acquire(self, wait: bool = False) -> bool:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            return True
        except OSError as e:
            os.close(self.fd)
            self.fd = None
            if e.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def busy(self) -> bool:
        if self.acquire():
            self.release()
            return False
        return True


GIVE_UP_AFTER = 5.0  # seconds a catch-up spends on a failing provider ([embeddings] give_up_after)
EXPLICIT_GIVE_UP_AFTER = 60.0  # ... and `zmem embed` in the foreground, when that is not more


def give_up_after(ws: Workspace, *, explicit: bool = False) -> float:
    """How long one embedding run may spend on a failing provider (hanging, refusing, 429, 5xx)
    before it leaves the chunks pending: `zmem index` and the background jobs a few seconds,
    `zmem embed` run by the user longer (it is asked to wait), both bounded."""
    value = float(ws.config.embeddings.get("give_up_after", GIVE_UP_AFTER))
    return max(value, EXPLICIT_GIVE_UP_AFTER) if explicit else value


def run_embed_job(ws: Workspace, *, progress=None, wait: bool = True,
                  give_up: float | None = None) -> EmbedReport | None:
    """Embed pending chunks with the active provider (primary, else the fallback when the primary
    fails). None when no provider is configured, or (wait=False) another job is running; a report
    with only an error when providers are configured but none can run (a missing model file …).
    give_up: seconds each provider may spend failing (give_up_after(ws) when None)."""
    provs = providers(ws)
    if provs.primary is None and provs.fallback is None:
        return EmbedReport(error="; ".join(provs.warnings)) if provs.warnings else None
    from zmem.index.catchup import write_denied
    if write_denied(ws) is not None:  # not even the lock may be written: say what waits, write nothing
        return _read_only_report(ws, provs)
    for embedder in (provs.primary, provs.fallback):
        if embedder is not None:
            embedder.give_up_after = give_up_after(ws) if give_up is None else give_up
    lock = EmbedLock(ws)
    if not lock.acquire(wait=wait):
        return None
    try:
        from zmem.index.catchup import open_index
        conn = open_index(ws)
        try:
            report, primary_error = None, None
            for embedder in (provs.primary, provs.fallback):
                if embedder is None:
                    continue
                report = embed_pending(ws, conn, embedder, progress=progress)
                if report.error is None:
                    break
                if embedder is provs.primary:
                    primary_error = f"the primary provider {embedder.provider} failed: {report.error}"
            if report and report.error is None and primary_error:  # the fallback did the work: say why
                report.warnings = list(provs.warnings) + [f"{primary_error}; the fallback {report.provider} was used"]
            elif report:
                report.warnings = list(provs.warnings)
            # status and doctor show the primary's failure too; the retry wait is only for a failed run
            db.set_meta(conn, "embed_error", report.error or primary_error if report else None)
            db.set_meta(conn, "embed_failed_at", str(time.time()) if report and report.error else None)
            return report
        finally:
            conn.close()
    finally:
        lock.release()


def _read_only_report(ws: Workspace, provs: Providers) -> EmbedReport:
    """What an embedding run would have to do on an index it cannot write, said in one warning."""
    from zmem.index.catchup import open_index
    active = provs.primary or provs.fallback
    conn = open_index(ws)
    try:
        why = db.readonly_reason(conn)
        pending = pending_count(conn)
        fp = db.get_meta(conn, "vec_fingerprint")
        if fp is not None and fp not in {vector_fingerprint(e) for e in (provs.primary, provs.fallback) if e}:
            pending = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]  # another model's vectors
    finally:
        conn.close()
    report = EmbedReport(provider=active.provider, pending=pending, warnings=list(provs.warnings))
    if pending and why:
        report.warnings.append(f"nothing embedded: the index is read-only ({why}); {pending} "
                               f"{'chunks without vectors are' if pending != 1 else 'chunk without a vector is'} "
                               "found by keywords only until it can be written")
    return report


def spawn_embed_job(ws: Workspace) -> bool:
    """Start `zmem embed` detached unless one is already running (or nothing could be stored: a
    read-only index). Never blocks a commit or a recall."""
    from zmem.index.catchup import write_denied
    if write_denied(ws) is not None or EmbedLock(ws).busy():
        return False
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE")}
    env.setdefault("GGML_NO_BACKTRACE", "1")
    from zmem.workspace.spawn import spawn_detached
    spawn_detached(ws, ["embed", "--quiet", "--background"], "embed.log", env)
    return True
