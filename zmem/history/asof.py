"""Git history as memory: file versions with validity intervals along HEAD's first-parent chain,
as-of recall, facts at a revision, and who committed a line (blame, cached by file content).

The chain is numbered from the root (seq 1, 2, …). A memory file's version (its blob) is valid
from the commit that wrote it up to the commit that changed or deleted it: [from_seq, to_seq).
The current view is the open versions. Chunks and facts are derived once per blob, so a backfill
costs one parse per distinct file content, and a rewritten history (rebase, force-push) only
truncates the chain back to the fork point and replays the new commits (history_build builds it;
this module reads it).
"""
from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING
from dataclasses import dataclass

from zmem.store import db
from zmem.text.dates import commit_time, day_end
from zmem.query.entities import FactRow, fact_citation
from zmem.errors import ZmemError, example
from zmem.git.gitcmd import ZERO_COMMIT
from zmem.index.history import HistoryUpdate, add_blob, insert_windows, update_history, with_fences
from zmem.text.markdown import day_from_path
from zmem.text.retain import entity_key, fact_id
from zmem.workspace.snapshot import git_blob_id
from zmem.workspace.core import Workspace

if TYPE_CHECKING:
    from zmem.git.repo import Repo

def ensure_history(ws: Workspace, conn, *, progress=None) -> HistoryUpdate | None:
    """Build or extend the history (under the index lock). None when another writer holds it."""
    from zmem.index.catchup import IndexLock, LockTimeout, access_hint
    from zmem.git.repo import open_repo
    why = db.readonly_reason(conn)
    if why is not None:
        from zmem.errors import IndexUnusable
        raise IndexUnusable(f"the history index is not built, and the index cannot be written ({why})",
                            hint=access_hint(ws.state_dir))
    repo = open_repo(ws.root)
    try:
        with IndexLock(ws, 30.0):
            return update_history(ws, repo, conn, enable=True, progress=progress)
    except LockTimeout:
        return None


def shallow_note(repo: Repo) -> str | None:
    """What to tell the user in a shallow clone, where the oldest fetched commit gets the credit
    for everything before it; None in a full clone."""
    if not repo.is_shallow():
        return None
    since = repo.shallow_since()
    day = commit_time(since).date() if since is not None else "its oldest commit"
    return f"shallow clone: history before {day} is missing (git fetch --unshallow)"


def workspace_shallow_notes(ws: Workspace, repo: Repo | None = None) -> list[str]:
    from zmem.git.gitstatus import open_command_repo
    note = shallow_note(repo or open_command_repo(ws.root))  # pygit2 only in a shallow clone
    return [note] if note else []


# ----------------------------------------------------------------------------- reading


@dataclass
class AsOf:
    sha: str
    seq: int | None          # position on the chain; None for a commit off HEAD's first-parent chain
    time: int
    summary: str

    @property
    def short(self) -> str:
        return self.sha[:10]


class BeforeHistory(ZmemError):
    """A date earlier than the first commit: memory was empty then."""


def resolve_as_of(ws: Workspace, conn, value: str, repo: Repo | None = None) -> AsOf:
    """DATE (the last commit at or before the end of that day on the chain) or REV. repo: the
    workspace's repository, when the caller has it open already."""
    import datetime as dt
    from zmem.git.gitstatus import open_command_repo
    from zmem.text.dates import parse_when
    if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", value):  # a commit id of the chain needs no git to resolve
        row = conn.execute("SELECT seq, time, summary FROM hist_commits WHERE sha = ?", (value,)).fetchone()
        if row:
            return AsOf(value, row[0], row[1], row[2])
    repo = repo or open_command_repo(ws.root)  # pygit2 only for a commit off the chain, or a shallow clone's note
    if repo.head() is None:
        raise ZmemError("the repository has no commits yet, so there is no history to look at",
                        hint="commit the memory files first")
    sha = repo.resolve(value)
    if sha is None:
        try:
            day = dt.date.fromisoformat(parse_when(value, param="as_of"))
        except ZmemError:
            if re.fullmatch(r"\s*\d+\s*[dwmy]\s*", value, re.IGNORECASE):
                raise  # a span, readable but too long: parse_when's own message says so
            raise ZmemError(f"{value!r} is neither a date nor a revision of this repository",
                            hint="use YYYY-MM-DD, 7d, or a commit, branch or tag (e.g. HEAD~3)") from None
        cutoff = day_end(day)
        row = conn.execute("SELECT seq, sha, time, summary FROM hist_commits WHERE time < ? ORDER BY seq DESC LIMIT 1",
                           (cutoff,)).fetchone()
        if row is None:
            first = conn.execute("SELECT time FROM hist_commits ORDER BY seq LIMIT 1").fetchone()
            since = commit_time(first[0]).date() if first else None
            note = shallow_note(repo)
            hint = f"the history starts on {since}" if since else "commit the memory files first"
            raise BeforeHistory(f"no commit on this branch is at or before {day}" + (f" ({note})" if note else ""),
                                hint=hint)
        return AsOf(row[1], row[0], row[2], row[3])
    row = conn.execute("SELECT seq, time, summary FROM hist_commits WHERE sha = ?", (sha,)).fetchone()
    if row:
        return AsOf(sha, row[0], row[1], row[2])
    info = repo.commit_info(sha)
    return AsOf(sha, None, info.time, info.summary)


def versions_at(ws: Workspace, conn, at: AsOf, notes: list[str] | None = None) -> dict[str, str]:
    """path -> blob of the memory files as they stood at the commit. A read-only index cannot take
    in versions it has not seen: they are left out, said in notes (an error without notes)."""
    if at.seq is not None:
        return dict(conn.execute("SELECT path, blob FROM hist_versions WHERE from_seq <= ? AND "
                                 "(to_seq IS NULL OR to_seq > ?)", (at.seq, at.seq)))
    from zmem.git.repo import open_repo
    repo = open_repo(ws.root)  # off the chain: read its tree, parse contents not seen before
    files = {rel: blob for rel, blob in repo.tree_files(at.sha).items() if ws.is_memory_path(rel)}
    known = {b for b, in conn.execute("SELECT blob FROM hist_blobs")}
    missing = [(rel, blob) for rel, blob in files.items() if blob not in known]
    why = db.readonly_reason(conn)
    if missing and why is not None:
        n = len(missing)
        problem = (f"{n} memory file{'s' * (n != 1)} as of {at.short} {'are' if n != 1 else 'is'} not in the history "
                   f"index, and the index cannot be written ({why})")
        if notes is None:
            from zmem.index.catchup import access_hint
            raise ZmemError(problem, hint=access_hint(ws.state_dir))
        notes.append(f"{problem}: answered without {'them' if n != 1 else 'it'}")
    elif missing:
        with db.write_transaction(conn):
            for rel, blob in missing:
                add_blob(ws, conn, rel, blob, repo.read_blob(blob))
    return files


@dataclass
class FactAt(FactRow):
    """A fact as memory held it at a commit: its source cites that version, `path@sha#Lnn`
    (the line may have moved or gone since)."""
    rev: str | None = None

    @property
    def source(self) -> str:
        return fact_citation(self.path, self.start_line, self.end_line, self.rev)


def facts_at(ws: Workspace, conn, at: AsOf, files: dict[str, str] | None = None, entity: str | None = None
             ) -> list[FactRow]:
    """The Retain facts memory held at a commit, each citing its line in that version (of files,
    path -> blob, when given; of entity's key only, when given: as entity_filter would leave them)."""
    files = files if files is not None else versions_at(ws, conn, at)
    by_blob: dict[str, list[str]] = {}
    for rel, blob in files.items():
        by_blob.setdefault(blob, []).append(rel)
    out = []
    blobs = list(by_blob)
    for i in range(0, len(blobs), 500):
        part = blobs[i:i + 500]
        for blob, start, end, kind, conf, text, names in conn.execute(
                f"SELECT blob, start_line, end_line, kind, confidence, text, names FROM hist_facts WHERE blob IN "
                f"({','.join('?' * len(part))})", part):
            ents = names.split("\t") if names else []
            if entity is not None and entity not in {entity_key(n) for n in ents}:
                continue  # before the dates are read: most of the cost, for every fact of every file
            for rel in by_blob[blob]:
                from zmem.text.dates import event_range
                day = day_from_path(rel)
                ev = event_range(text, day)  # missing years: the one nearest the log's day, as in the index
                out.append(FactAt(0, fact_id(rel, kind, text, ents), rel, start, end, kind, conf, text, ents, day, ev,
                                  rev=at.sha))
    out.sort(key=lambda f: (f.day or "", f.path, f.start_line), reverse=True)
    return out


def resolve_history_entity(ws: Workspace, conn, name: str):
    """The entity NAME means, among the current ones and those known only in history (every fact
    about it retracted: gone from normal recall, present in history)."""
    from zmem.query.entities import Entity, all_entities, resolve_entity
    entities = all_entities(ws, conn)
    if entity_key(name) not in entities:
        spellings: dict[str, dict[str, int]] = {}
        for names, in conn.execute("SELECT names FROM hist_facts WHERE names != ''"):
            for n in names.split("\t"):
                k = entity_key(n)
                if k not in entities:
                    counts = spellings.setdefault(k, {})
                    counts[n] = counts.get(n, 0) + 1
        for k, counts in spellings.items():
            best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
            entities[k] = Entity(k, best, None, 0, None, None, sorted(counts))
    return resolve_entity(ws, conn, name, entities)


def history_entity_key(ws: Workspace, conn, name: str) -> str:
    """resolve_history_entity(...).key; a name as today's facts spell it is one index lookup."""
    key = entity_key(name)
    if conn.execute("SELECT 1 FROM fact_entities WHERE entity = ? LIMIT 1", (key,)).fetchone():
        return key  # an entity of all_entities: resolve_history_entity would give it back
    return resolve_history_entity(ws, conn, name).key


def entity_filter(facts: list[FactRow], entity: str | None) -> list[FactRow]:
    if entity is None:
        return facts
    return [f for f in facts if entity in {entity_key(n) for n in f.entities}]


# ----------------------------------------------------------------------------- blame


def blame_lines(ws: Workspace, conn, rel: str, rev: str | None = None, *, repo: Repo | None = None
                ) -> dict[int, tuple[str, str, int, str]] | None:
    """line -> (commit, author, time, summary) for `rel` in the working tree (or at commit rev),
    from the cache when this content was blamed before. None when the file cannot be read."""
    from zmem.git.gitstatus import open_command_repo
    repo = repo or open_command_repo(ws.root)
    if rev is None:
        try:
            data = (ws.root / rel).read_bytes()
        except OSError:
            return None
        tip = repo.head()
        if tip is None:
            return {}  # no commits yet: nothing is committed
    else:
        data = repo.file_at(rev, rel)
        if data is None:
            return None
        tip = rev
    blob = git_blob_id(data)
    key = _blame_key(conn, rel, blob, tip)
    rows = conn.execute("SELECT line, commit_id, author, time, summary FROM blame_cache WHERE blob = ?", (key,))
    cached = {line: (c, a, t, s) for line, c, a, t, s in rows}
    if cached:
        return cached
    from zmem.git.repo import blame_file
    blamed = blame_file(repo.workdir, repo.prefix + rel, rev)
    out = {n: (b.commit, b.author, b.time, b.summary) for n, b in enumerate(blamed, 1)}
    if out and not any(c == ZERO_COMMIT for c, _, _, _ in out.values()) and db.readonly_reason(conn) is None:
        # only fully committed content: uncommitted lines get their commit later
        conn.executemany("INSERT OR IGNORE INTO blame_cache(blob, line, commit_id, author, time, summary) "
                         "VALUES(?,?,?,?,?,?)", [(key, n, *v) for n, v in out.items()])
    return out


def _blame_key(conn, rel: str, blob: str, tip: str) -> str:
    """The blame cache's key for the content `blob` of `rel` as seen from commit `tip`. Blame
    depends on history, not only on content (an amended commit, a revert restoring an earlier
    blob), so the key is (blob, path, the commit where this version of the file began on the
    chain): that commit's id pins every earlier commit, and the file is unchanged from it to tip.
    Off the indexed chain (history not built, or content not committed) it is tip itself."""
    row = conn.execute("SELECT s.sha FROM hist_commits t JOIN hist_versions v ON v.path = ? AND v.from_seq <= t.seq "
                       "AND (v.to_seq IS NULL OR v.to_seq > t.seq) JOIN hist_commits s ON s.seq = v.from_seq "
                       "WHERE t.sha = ? AND v.blob = ?", (rel, tip, blob)).fetchone()
    return f"{blob}:{row[0] if row else tip}:{rel}"


def attach_origins(ws: Workspace, conn, facts: list[FactRow]) -> None:
    """Fill each fact's commit, author and time (the commit that added its first line). A line not
    committed yet gets commit None and the current time."""
    by_path: dict[str, list[FactRow]] = {}
    for f in facts:
        by_path.setdefault(f.path, []).append(f)
    now = int(time.time())
    from zmem.git.repo import open_repo
    repo = open_repo(ws.root) if by_path else None
    for rel, group in by_path.items():
        lines = blame_lines(ws, conn, rel, repo=repo) or {}
        for f in group:
            commit, author, when, _ = lines.get(f.start_line, (ZERO_COMMIT, "", now, ""))
            f.commit = None if commit == ZERO_COMMIT else commit
            f.author = author or None
            f.time = when if commit != ZERO_COMMIT else now


# ----------------------------------------------------------------------------- as-of recall


def _versions_sql(ws: Workspace, conn, at: AsOf, notes: list[str]) -> tuple[str, tuple]:
    """A join source of rows (path, blob): the memory files as they stood at the commit."""
    if at.seq is not None:
        return ("(SELECT path, blob FROM hist_versions WHERE from_seq <= ? AND (to_seq IS NULL OR to_seq > ?))",
                (at.seq, at.seq))
    files = versions_at(ws, conn, at, notes)
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS asof_files(path TEXT, blob TEXT)")
    conn.execute("DELETE FROM asof_files")
    conn.executemany("INSERT INTO asof_files VALUES(?, ?)", list(files.items()))
    return "asof_files", ()


def _ensure_windows(conn) -> bool:
    """Every history chunk has its windows (chunks parsed before there were any get them now),
    cut at the current window size (another size's hashes would match no vector). False when they
    are not there and a read-only index cannot take them in."""
    from zmem.text.chunking import WINDOW_FINGERPRINT
    done = db.get_meta(conn, "hist_window_tokens")
    if done == WINDOW_FINGERPRINT:
        return True
    if db.readonly_reason(conn) is not None:  # usable as they are if every chunk got its windows when parsed
        return done is None and conn.execute("SELECT 1 FROM hist_chunks c WHERE NOT EXISTS "
                                             "(SELECT 1 FROM hist_windows w WHERE w.chunk_id = c.id)").fetchone() is None
    with db.write_transaction(conn):
        if done is not None:
            conn.execute("DELETE FROM hist_windows")
        insert_windows(conn, with_fences(conn, conn.execute(
            "SELECT c.id, c.text, c.heading, c.start_line, c.blob FROM hist_chunks c "
            "WHERE NOT EXISTS (SELECT 1 FROM hist_windows w WHERE w.chunk_id = c.id)").fetchall()))
        db.set_meta(conn, "hist_window_tokens", WINDOW_FINGERPRINT)
    return True


def _window_similarities(conn, store, query_vector, versions: str, args: tuple
                         ) -> tuple[dict[int, list[tuple[str, int, int, float]]], int]:
    """Every window of the files at the commit whose text has a cached vector of the stored
    vectors' fingerprint, with its similarity to the query: (chunk -> [(path, start, end, sim)],
    number of windows without one)."""
    fp = store.fingerprint()
    sims: dict[int, list[tuple[str, int, int, float]]] = {}
    missing = 0
    for cid, path, a, b, sim in store.similarities(
            # CROSS JOIN keeps this order: the files at the commit first, not every window ever
            f"SELECT w.chunk_id, v.path, w.start_line, w.end_line, {{sim}} FROM {versions} v "
            "CROSS JOIN hist_chunks c ON c.blob = v.blob CROSS JOIN hist_windows w ON w.chunk_id = c.id "
            "LEFT JOIN embedding_cache e ON e.fingerprint = ? AND e.hash = w.hash", "e.vector", (*args, fp), query_vector):
        if sim is None:
            missing += 1
        else:
            sims.setdefault(cid, []).append((path, a, b, sim))
    return sims, missing


def _hub_closeness(conn, store, direction: list[float], cids: list[int]) -> dict[int, dict[tuple[int, int], float]]:
    """Each window of these history chunks with its cosine to the centroid's direction (fusion.centre_scores'
    hubs): chunk -> {(start, end): cosine}."""
    out: dict[int, dict[tuple[int, int], float]] = {}
    for i in range(0, len(cids), 500):
        part = cids[i:i + 500]
        for cid, a, b, sim in store.similarities(
                f"SELECT w.chunk_id, w.start_line, w.end_line, {{sim}} FROM hist_windows w JOIN embedding_cache e "
                f"ON e.fingerprint = ? AND e.hash = w.hash WHERE w.chunk_id IN ({','.join('?' * len(part))})",
                "e.vector", (store.fingerprint(), *part), direction):
            if sim is not None:
                out.setdefault(cid, {})[(a, b)] = sim
    return out


class PastEntities:
    """What search.entity_first reads, from the memory files as they stood at a commit: facts about an entity
    then (facts_at), an entity page's chunks then, the chunks holding a line, chunk texts. keep(chunk, path)
    -> the hit key, or None when the recall's filters leave it out; text_of(keys) -> {key: text}."""

    def __init__(self, ws: Workspace, conn, at: AsOf, keep, text_of, versions: tuple[str, tuple]):
        self.ws, self.conn, self.at, self.keep, self.text_of, self.versions = ws, conn, at, keep, text_of, versions
        self._files: dict[str, str] | None = None

    def files(self) -> dict[str, str]:
        if self._files is None:
            self._files = versions_at(self.ws, self.conn, self.at, [])
        return self._files

    def facts(self, keys: set[str], spelled: str, others: str | None, n: int) -> list[tuple]:
        """Every fact about these entity keys at the commit, newest first, that the filters keep (a superset
        of what the index's FTS and newest-n queries give: entity_first keeps the n it scores best)."""
        rows = {}
        for key in keys:
            for f in facts_at(self.ws, self.conn, self.at, self.files(), entity=key):
                if self._kept(f.path):
                    rows[(f.path, f.start_line)] = (f.path, f.start_line, f.end_line, f.day, f.text,
                                                    "\t".join(f.entities), f.kind)
        return sorted(rows.values(), key=lambda r: (r[0], r[1]), reverse=True)

    def names(self) -> tuple[list[tuple[str, str | None]], dict[str, set[str]]]:
        """The entity pages at the commit with their titles, and every name its facts mention (folded key ->
        entity keys): what entities.named_in_query matches a question's words against. Read through the
        recall's own join source of the commit's files (versions: _versions_sql), not versions_at: a
        question naming no entity needs nothing else from here."""
        from zmem.query.entities import ENTITY_DIR, _fold
        versions, args = self.versions
        end = ENTITY_DIR[:-1] + chr(ord("/") + 1)
        pages = self.conn.execute(
            f"SELECT v.path, (SELECT c.heading FROM hist_chunks c WHERE c.blob = v.blob AND c.start_line = 1 LIMIT 1) "
            f"FROM {versions} v WHERE v.path >= ? AND v.path < ? ORDER BY v.path", (*args, ENTITY_DIR, end)).fetchall()
        keys: dict[str, set[str]] = {}
        for names, in self.conn.execute(f"SELECT DISTINCT h.names FROM {versions} v JOIN hist_facts h ON h.blob = v.blob "
                                        f"WHERE h.names != ''", args):
            for name in names.split("\t"):
                key = entity_key(name)
                keys.setdefault(_fold(key), set()).add(key)
        return pages, keys

    def _kept(self, path: str) -> bool:
        blob = self.files().get(path)
        got = blob and self.conn.execute("SELECT id FROM hist_chunks WHERE blob = ? LIMIT 1", (blob,)).fetchone()
        return bool(got) and self.keep(got[0], path) is not None

    def page(self, path: str) -> list[tuple[int, str]]:
        blob = self.files().get(path)
        keys = [key for cid, in self.conn.execute("SELECT id FROM hist_chunks WHERE blob = ? ORDER BY start_line",
                                                  (blob,)) if (key := self.keep(cid, path)) is not None] if blob else []
        return list(self.text_of(keys).items())

    def holding(self, path: str, line: int) -> list[int]:
        blob = self.files().get(path)
        return [key for cid, in self.conn.execute(
            "SELECT id FROM hist_chunks WHERE blob = ? AND start_line <= ? AND end_line >= ?", (blob, line, line))
            if (key := self.keep(cid, path)) is not None] if blob else []

    def texts(self, keys: list[int]) -> dict[int, str]:
        return self.text_of(keys)


class _ScoredWindows:
    """search.complete_scores' store for as-of recall: every window at the commit already has its similarity
    to the query (hit key -> [(start, end, similarity)])."""

    def __init__(self, windows: dict[int, list[tuple[int, int, float]]]):
        self.windows = windows

    def windows_of(self, keys: list[int], query_vector) -> dict[int, list[tuple[int, int, float]]]:
        return {key: self.windows[key] for key in keys if key in self.windows}


def recall_as_of(ws: Workspace, conn, query: str, at: AsOf, *, k: int = 6, since: str | None = None,
                 until: str | None = None, path_glob: str | None = None, max_chars: int | None = None,
                 snippet_chars: int = 700, exclude: list[str] | None = None, mode: str = "bm25",
                 query_vector: list[float] | None = None, store=None, fusion: str = "weighted",
                 vector_weight: float = 0.3, text_weight: float = 0.7, multiplier: int = 4,
                 explain: bool = False, repo: Repo | None = None, similar=None, cover=None):
    """Recall over the memory files as they stood at a commit; hits cite path@sha#Lx-Ly (repo: the
    workspace's repository when the caller has it open, as for resolve_as_of).
    mode hybrid/vector (with query_vector and store): past versions are compared through the
    vectors their text got when it was embedded (the embedding cache), never embedded again.
    Ranked as current recall ranks (zmem.query.search.recall: words standing together, both lists
    completed, similarities centred, the adaptive fusion and its floor, named days first, a named entity's
    page and facts then first, the first hits read token by token), so at HEAD it lists what `zmem recall`
    lists. similar, cover: as recall's."""
    import fnmatch
    from zmem.store.fts import build_match
    from zmem.query import expand
    from zmem.query.search import (BY_MEANING_EVIDENCE, KEYWORD_DEPTH, TOGETHER, Recall, _best_first, _r, assemble_hits,
                                   bonus_from_windows, complete_scores, entity_first, explain_scores, fuse,
                                   look_deeper, words_together)
    from zmem.workspace.core import glob_to_sql
    if not query.strip():
        raise ZmemError("the query is empty", param="query",
                        hint=f"say what to look for, e.g. {example('recall', query='Peter', as_of='2025-11-30')}")
    if query_vector is None or store is None:
        mode = "bm25"
    date = commit_time(at.time).isoformat()
    out = Recall(query=query, mode=mode, as_of={"commit": at.sha, "date": date, "summary": at.summary})
    out.warnings += workspace_shallow_notes(ws, repo)
    if mode != "bm25" and not _ensure_windows(conn):
        out.warnings.append(f"the vector windows of past versions are not built, and the index cannot be written "
                            f"({db.readonly_reason(conn)}): keyword (BM25) recall only")
        mode = out.mode = "bm25"
    versions, args = _versions_sql(ws, conn, at, out.warnings)
    glob = glob_to_sql(path_glob) if path_glob else None
    # a hit is a chunk at a path: history stores a blob's chunks once, and files with the same
    # content (a copy) at that commit are each a hit of their own
    units: dict[tuple[int, str], int] = {}
    where: dict[int, tuple[int, str]] = {}  # hit key -> (chunk, path): units the other way round

    def keep(cid: int, path: str, days: tuple[str | None, str | None] = (since, until)) -> int | None:
        """The hit key of this chunk at this path, or None when the filters (or these days) leave it out."""
        first, last = days
        if first or last:
            day = day_from_path(path)
            if (first and (day is None or day < first)) or (last and (day is None or day > last)):
                return None
        if (glob and not fnmatch.fnmatchcase(path, glob)) or \
                (exclude and any(fnmatch.fnmatchcase(path, g) for g in exclude)):
            return None
        key = units.setdefault((cid, path), len(units))
        where[key] = (cid, path)
        return key

    match = build_match(query)

    def keyword(depth: int, days: tuple[str | None, str | None] = (since, until), expr: str | None = None,
                dated: bool = False) -> list[tuple[int, float]]:
        """The first `depth` keyword hits (key, BM25 as s / (1 + s), s = -bm25, as in current recall) of the
        query (or of the MATCH expression expr; dated: daily logs only)."""
        hits: list[tuple[int, float]] = []
        rows = conn.execute(f"SELECT c.id, v.path, hist_fts.rank FROM hist_fts JOIN hist_chunks c ON c.id = hist_fts.rowid "
                            f"JOIN {versions} v ON v.blob = c.blob WHERE hist_fts MATCH ? ORDER BY hist_fts.rank",
                            (*args, expr or match))
        for cid, path, rank in rows:
            key = keep(cid, path, days)
            if key is not None and not (dated and day_from_path(path) is None):
                hits.append((key, (-rank) / (1.0 - rank)))
                if len(hits) == depth:
                    break
        return hits

    texts: dict[int, tuple] = {}  # history chunk -> (start, end, heading, text)

    def text_of(keys) -> dict[int, str]:
        """key -> its chunk's text (read once)."""
        cids = list({where[key][0] for key in keys} - texts.keys())
        for i in range(0, len(cids), 500):
            part = cids[i:i + 500]
            for cid, start, end, heading, text in conn.execute(
                    f"SELECT id, start_line, end_line, heading, text FROM hist_chunks WHERE id IN "
                    f"({','.join('?' * len(part))})", part):
                texts[cid] = (start, end, heading, text)
        return {key: texts[where[key][0]][3] for key in keys}

    n = k * multiplier
    deep: list[tuple[int, float]] = []
    if match is None and mode != "vector":
        out.warnings.append("the query has no searchable words (letters, digits or CJK characters)")
        if mode == "bm25":
            return out
    if match is not None and mode != "vector":
        # hybrid weighted/adaptive: deeper, to give vector candidates their keyword score (as complete_scores)
        deep = keyword(max(n, KEYWORD_DEPTH) if mode == "hybrid" and fusion in ("weighted", "adaptive") else n)
    bm25 = deep[:n]
    apart: dict[int, float] = {}
    if mode == "bm25" and len(bm25) > 1 and TOGETHER:  # the first k: where it decides what is cited first
        top, apart = words_together(bm25[:k], text_of([key for key, _ in bm25[:k]]), query)
        bm25 = sorted(top + bm25[k:], key=_best_first)
    windows: dict[int, list[tuple[int, int, float]]] = {}
    vec: list[tuple[int, float]] = []
    if mode != "bm25":
        sims, missing = _window_similarities(conn, store, query_vector, versions, args)
        if missing:
            out.warnings.append(f"{missing} vector windows of the files at {at.short} have no stored vector "
                                "(never embedded, or pruned from the embedding cache): found by keywords only")
        for cid, wins in sims.items():
            for path, a, b, sim in wins:
                key = keep(cid, path)
                if key is not None:
                    windows.setdefault(key, []).append((a, b, sim))
        best = sorted(((key, max(s for _, _, s in w)) for key, w in windows.items()), key=_best_first)
        vec = best[:n]
    cut = len(bm25) == n or len(vec) == n  # a list stopped at n: there are more candidates
    plain = vec
    if mode == "hybrid" and fusion in ("weighted", "adaptive"):  # both scores for every candidate
        bm25, plain = complete_scores(_ScoredWindows(windows), query_vector, bm25, vec, dict(deep))
    weights = None
    if mode != "bm25":
        from zmem.query import fusion as adaptive
        got = adaptive.centroid(conn) if adaptive.CENTRE and plain else None
        vec = plain
        if got is not None and len(got[0]) == len(query_vector):  # similarities centred as current recall's
            hubs = _hub_closeness(conn, store, got[0], list({where[key][0] for key, _ in plain}))
            vec = adaptive.centre_scores(plain, {key: windows.get(key, []) for key, _ in plain},
                                         {key: hubs.get(where[key][0], {}) for key, _ in plain}, got[1])
        if mode == "vector":
            ranked = vec
        elif fusion == "adaptive":
            ranked, weights = adaptive.fuse_by_evidence(
                conn, query, bm25, vec, text_of([key for key, _ in bm25]), text_weight=text_weight,
                vector_weight=vector_weight, table="hist_fts", query_vector=query_vector, store=store, raw=plain)
        else:
            ranked = fuse(bm25, vec, method=fusion, vector_weight=vector_weight, text_weight=text_weight)
    else:
        ranked = bm25
    fused = dict(ranked) if explain else {}
    if not (since or until) and ranked and match is not None:  # a question naming its days: their notes first
        def event_day(words: str) -> str | None:  # as search._event_day, in the commit's daily logs
            expr = build_match(words)
            first = keyword(1, (None, None), expr, dated=True) if expr else []
            return day_from_path(where[first[0][0]][1]) if first else None

        ranked, _ = expand.days_first(conn, query, ranked, lambda a, b: keyword(n, (a, b)), n=n,
                                      days_of=lambda keys: {key: day_from_path(where[key][1]) for key in keys},
                                      find_day=event_day)
    about: dict[int, float] | None = None
    fact_lines: dict[int, dict[int, float]] = {}
    if mode != "vector":  # a query naming a known entity: its page and its facts then first
        ranked, about, fact_lines = entity_first(conn, query, ranked, n=n, similar=similar,
                                                 source=PastEntities(ws, conn, at, keep, text_of, (versions, args)))
    if not ranked:
        return out
    text_of([key for key, _ in ranked])
    chunks = {}
    for key, _ in ranked:
        cid, path = where[key]
        start, end, heading, text = texts[cid]
        chunks[key] = (key, path, start, end, heading, day_from_path(path), text)
    from zmem.query.citelines import DEPTH, line_similarities
    bonus = bonus_from_windows({key: windows[key] for key, _ in ranked[:k * DEPTH] if key in windows
                                and not (weights and weights.keyword_line(chunks[key][6]))})
    for key, lines in fact_lines.items():
        bonus[key] = {**bonus.get(key, {}), **lines}
    why = explain_scores(bm25, plain, [(key, fused.get(key, s)) for key, s in ranked]) if explain else {}
    for key, w in why.items():
        if weights is not None:
            w.update(weights.explain(key))
        if key in apart:
            w["words_together"] = _r(apart[key])
        if about is not None:
            w["entity"] = _r(about.get(key))
    sims = line_similarities({key: windows[key] for key, _ in ranked[:k * DEPTH] if key in windows}) if windows else None
    out = assemble_hits(out, ranked, chunks, query, k=k, max_chars=max_chars, snippet_chars=snippet_chars,
                        bonus=bonus, why=why, rev=at.sha, sims=sims, ordered=bool(about),
                        by_meaning=weights is not None and weights.evidence < BY_MEANING_EVIDENCE)
    if look_deeper(out, k=k, cut=cut, max_chars=max_chars, snippet_chars=snippet_chars, multiplier=multiplier,
                   weights=weights):
        return recall_as_of(ws, conn, query, at, k=k, since=since, until=until, path_glob=path_glob,
                            max_chars=max_chars, snippet_chars=snippet_chars, exclude=exclude, mode=mode,
                            query_vector=query_vector, store=store, fusion=fusion, vector_weight=vector_weight,
                            text_weight=text_weight, multiplier=multiplier * 4, explain=explain, repo=repo,
                            similar=similar, cover=cover)
    if cover is not None and mode == "hybrid" and not about:  # (entity_first's order stays)
        from zmem.query import tokencover
        tokencover.apply(out, query, cover, explain)
    return out


def recall_facts_as_of(ws: Workspace, conn, query: str, at: AsOf, *, k: int = 6, kind: str | None = None,
                       entity: str | None = None, exclude: list[str] | None = None, repo: Repo | None = None):
    """The facts memory held at a commit, filtered by kind/entity, those sharing the most query
    words first (then newest first). A fact sharing none is listed only about an entity (--entity), after
    the matches and with a warning, as recall_facts lists them: an empty list says nothing matched."""
    from zmem.query.entities import normalize_kind
    from zmem.store.fts import query_terms
    from zmem.query.search import FactHit, Recall
    key = resolve_history_entity(ws, conn, entity).key if entity else None
    kind = normalize_kind(kind)
    from fnmatch import fnmatchcase
    notes: list[str] = []  # versions a read-only index has not seen
    facts = [f for f in entity_filter(facts_at(ws, conn, at, versions_at(ws, conn, at, notes)), key)
             if (kind is None or f.kind == kind)
             and not (exclude and any(fnmatchcase(f.path, g) for g in exclude))]
    terms = [t[:max(3, len(t) - 2)] for t in query_terms(query)]
    scored = []
    for i, f in enumerate(facts):
        low = (f.text + " " + " ".join(f.entities)).lower()
        hits = sum(t in low for t in terms)
        scored.append((-(hits / len(terms) if terms else 0.0), i, f))
    scored.sort(key=lambda x: (x[0], x[1]))
    scored = scored[:k] if entity else [x for x in scored[:k] if x[0] < 0]
    unmatched = sum(neg == 0 for neg, _, _ in scored)
    date = commit_time(at.time).isoformat()
    out = Recall(query=query, mode="bm25", as_of={"commit": at.sha, "date": date, "summary": at.summary})
    out.warnings += workspace_shallow_notes(ws, repo) + notes
    if unmatched:
        out.warnings.append(f"{unmatched} of the facts shown did not match the query; listed newest first")
    for neg, _, f in scored:
        f.commit = None
        out.results.append(FactHit(f, -neg, rev=at.sha))
    return out
