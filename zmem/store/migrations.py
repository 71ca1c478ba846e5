"""The index's schema as named migration steps: the registry (STEPS), the steps in the order they
are applied, bringing an index up to date (migrate), and refusing an index this zmem cannot read
(a newer zmem's, or full-text tables this SQLite cannot open). Above db (the driver) and fts (the
full-text rows some steps convert)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zmem.store.db import BUSY_TIMEOUT, DRIVER, schema_version, sqlite, write_transaction
from zmem.errors import IndexUnusable


@dataclass(frozen=True)
class Step:
    name: str                    # recorded in the index's _migrations: never renamed
    apply: Callable[[object], None]
    snapshot_only: bool          # leaves every note's rows as they were: NOTES_SCHEMA stays


# Schema migrations in the order they are applied, each in one transaction that records its name
# in _migrations and sets user_version to the number of steps applied. A new step goes at the end;
# it is snapshot_only only when no note's rows need re-deriving.
STEPS: list[Step] = []


def step(*, snapshot_only: bool = False):
    """Register the decorated function (of the connection) as the next migration step."""
    def register(fn):
        STEPS.append(Step(fn.__name__, fn, snapshot_only))
        return fn
    return register


def _run(conn, *statements: str) -> None:
    for stmt in statements:
        conn.execute(stmt)


@step()
def notes(conn) -> None:
    _run(
        conn,
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE files (
            path TEXT PRIMARY KEY,
            blob TEXT NOT NULL,          -- git blob id of the indexed content
            size INTEGER NOT NULL,
            day TEXT,                    -- YYYY-MM-DD from memory/YYYY-MM-DD*.md
            chunks INTEGER NOT NULL,
            lines INTEGER NOT NULL,
            warning TEXT,                -- why (part of) the file could not be indexed
            mtime_ns INTEGER NOT NULL DEFAULT 0,  -- stat signature when indexed (snapshot.py)
            ino INTEGER NOT NULL DEFAULT 0
        )""",
        "CREATE INDEX files_stat ON files(path, mtime_ns, size, ino)",  # the freshness sweep reads only these
        # Directories whose mtime (and ctime, step dir_ctime) tell whether memory files appeared or vanished (snapshot.py).
        "CREATE TABLE dirs (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL)",
        """CREATE TABLE chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: vector rows key on it
            path TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            heading TEXT NOT NULL,
            day TEXT,
            tokens INTEGER NOT NULL,
            text TEXT NOT NULL
        )""",
        "CREATE INDEX chunks_path ON chunks(path)",
        "CREATE INDEX chunks_day ON chunks(day)",
        # Contentless: the text lives once, in chunks; deletes re-supply the indexed values.
        # cjk_bi/cjk_uni hold bigrams/unigrams of Han, kana and Hangul runs, which unicode61
        # would otherwise keep as one token per run.
        """CREATE VIRTUAL TABLE chunks_fts USING fts5(
            text, heading, cjk_bi, cjk_uni, content='',
            tokenize='porter unicode61 remove_diacritics 2')""",
        # `rank` is bm25 with these column weights: text, heading, CJK bigrams, CJK unigrams.
        "INSERT INTO chunks_fts(chunks_fts, rank) VALUES('rank', 'bm25(1.0, 0.5, 1.0, 0.5)')")


# Vectors, one per window of a few lines of a chunk (precise citations, and short texts
# embed better than whole chunks). chunk_vectors is the store (the in-process fallback
# searches it); a sqlite-vec vec0 table `chunk_vec` mirrors it when the extension loads.
# One fingerprint at a time (meta vec_fingerprint): vectors of different providers are
# never compared.
@step()
def vectors(conn) -> None:
    _run(
        conn,
        """CREATE TABLE chunk_vectors (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk_id INTEGER NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            vector BLOB NOT NULL         -- float32, unit length
        )""",
        "CREATE INDEX chunk_vectors_chunk ON chunk_vectors(chunk_id)",
        """CREATE TABLE embedding_cache (
            fingerprint TEXT NOT NULL,
            hash TEXT NOT NULL,          -- sha256 of the embedded text
            vector BLOB NOT NULL,
            last_used INTEGER NOT NULL,
            PRIMARY KEY (fingerprint, hash)
        ) WITHOUT ROWID""",
        "CREATE INDEX embedding_cache_lru ON embedding_cache(last_used)")


# Retain facts (retain.py), one row per bullet; fid is the stable fact id users cite.
@step()
def facts_and_blame_cache(conn) -> None:
    _run(
        conn,
        """CREATE TABLE facts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            fid TEXT NOT NULL,
            path TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            kind TEXT NOT NULL,          -- world | experience | opinion | observation | relation
            confidence REAL,
            text TEXT NOT NULL,
            names TEXT NOT NULL,         -- entity display names, tab-separated, as written
            day TEXT,                    -- the daily log's day
            event_start TEXT,            -- dates written inside the fact
            event_end TEXT
        )""",
        "CREATE INDEX facts_path ON facts(path)",
        "CREATE INDEX facts_fid ON facts(fid)",
        "CREATE TABLE fact_entities (entity TEXT NOT NULL, fact_id INTEGER NOT NULL, PRIMARY KEY (entity, fact_id))"
        " WITHOUT ROWID",
        "CREATE INDEX fact_entities_fact ON fact_entities(fact_id)",
        """CREATE TABLE relations (
            fact_id INTEGER NOT NULL,
            subject TEXT NOT NULL,       -- entity keys
            predicate TEXT NOT NULL,
            object TEXT NOT NULL
        )""",
        "CREATE INDEX relations_subject ON relations(subject)",
        "CREATE INDEX relations_object ON relations(object)",
        """CREATE VIRTUAL TABLE facts_fts USING fts5(
            text, names, cjk_bi, cjk_uni, content='',
            tokenize='porter unicode61 remove_diacritics 2')""",
        "INSERT INTO facts_fts(facts_fts, rank) VALUES('rank', 'bm25(1.0, 0.5, 1.0, 0.5)')",
        # git blame per line of a file version. Since step history_windows_and_rowid_cache the `blob` column holds a key of
        # content, path and the commit where that version began (history.blame_lines): the same content can
        # have another blame after a revert or an amend. Survives rebuilds.
        """CREATE TABLE blame_cache (
            blob TEXT NOT NULL,
            line INTEGER NOT NULL,
            commit_id TEXT NOT NULL,     -- 40 zeros: not committed yet
            author TEXT NOT NULL,
            time INTEGER NOT NULL,       -- author time, Unix seconds
            summary TEXT NOT NULL,
            PRIMARY KEY (blob, line)
        ) WITHOUT ROWID""")


# History (history.py): the first-parent chain of HEAD, numbered from the root (seq), and
# each memory file's versions with the commit range they were valid in: [from_seq, to_seq),
# to_seq NULL while still valid. Chunks and facts are stored once per file content (blob).
@step()
def history(conn) -> None:
    _run(
        conn,
        """CREATE TABLE hist_commits (
            seq INTEGER PRIMARY KEY,
            sha TEXT NOT NULL UNIQUE,
            time INTEGER NOT NULL,       -- committer time, Unix seconds
            author TEXT NOT NULL,
            summary TEXT NOT NULL
        )""",
        """CREATE TABLE hist_versions (
            path TEXT NOT NULL,
            blob TEXT NOT NULL,
            from_seq INTEGER NOT NULL,
            to_seq INTEGER
        )""",
        "CREATE INDEX hist_versions_blob ON hist_versions(blob, from_seq, to_seq)",
        "CREATE INDEX hist_versions_path ON hist_versions(path, from_seq)",
        "CREATE INDEX hist_versions_open ON hist_versions(to_seq)",
        "CREATE TABLE hist_blobs (blob TEXT PRIMARY KEY, lines INTEGER NOT NULL) WITHOUT ROWID",
        """CREATE TABLE hist_chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            blob TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            heading TEXT NOT NULL,
            text TEXT NOT NULL
        )""",
        "CREATE INDEX hist_chunks_blob ON hist_chunks(blob)",
        """CREATE VIRTUAL TABLE hist_fts USING fts5(
            text, heading, cjk_bi, cjk_uni, content='',
            tokenize='porter unicode61 remove_diacritics 2')""",
        "INSERT INTO hist_fts(hist_fts, rank) VALUES('rank', 'bm25(1.0, 0.5, 1.0, 0.5)')",
        """CREATE TABLE hist_facts (
            blob TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            kind TEXT NOT NULL,
            confidence REAL,
            text TEXT NOT NULL,
            names TEXT NOT NULL
        )""",
        "CREATE INDEX hist_facts_blob ON hist_facts(blob)")


# Session transcripts (sessions.py): indexed up to `offset` bytes (`lines` lines) per file.
@step()
def sessions(conn) -> None:
    _run(
        conn,
        "CREATE TABLE session_files (path TEXT PRIMARY KEY, offset INTEGER NOT NULL, lines INTEGER NOT NULL)",
        """CREATE TABLE session_messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            path TEXT NOT NULL,          -- absolute path of the JSONL file
            line INTEGER NOT NULL,
            role TEXT NOT NULL,
            ts TEXT,
            text TEXT NOT NULL           -- secrets redacted
        )""",
        "CREATE INDEX session_messages_path ON session_messages(path)",
        """CREATE VIRTUAL TABLE session_fts USING fts5(
            text, cjk_bi, cjk_uni, content='', tokenize='porter unicode61 remove_diacritics 2')""",
        "INSERT INTO session_fts(session_fts, rank) VALUES('rank', 'bm25(1.0, 1.0, 0.5)')")


# The vector windows of history chunks (history.py), filled when an as-of recall first
# needs them: `hash` keys embedding_cache, so past versions are compared by the vectors
# their text got when it was current, never embedded again.
@step()
def history_windows_and_rowid_cache(conn) -> None:
    _run(
        conn,
        """CREATE TABLE hist_windows (
            chunk_id INTEGER NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            hash TEXT NOT NULL
        )""",
        "CREATE INDEX hist_windows_chunk ON hist_windows(chunk_id)",
        # embedding_cache was WITHOUT ROWID: rows of 1.5 KB vectors make such a b-tree deep and
        # slow to search (as-of recall looks up hundreds of vectors per query: 8 ms -> 4 ms per 500).
        """CREATE TABLE embedding_cache_rowid (
            fingerprint TEXT NOT NULL,
            hash TEXT NOT NULL,          -- sha256 of the embedded text
            vector BLOB NOT NULL,
            last_used INTEGER NOT NULL,
            PRIMARY KEY (fingerprint, hash)
        )""",
        "INSERT INTO embedding_cache_rowid SELECT fingerprint, hash, vector, last_used FROM embedding_cache",
        "DROP TABLE embedding_cache",
        "ALTER TABLE embedding_cache_rowid RENAME TO embedding_cache",
        "CREATE INDEX embedding_cache_lru ON embedding_cache(last_used)",
        # keyed by content alone until now: those keys never match again
        "DELETE FROM blame_cache")


# ctime joins the stat signature: a file rewritten in place with the same size and its
# mtime put back (`touch -r`, `rsync --inplace -t`) changes only its ctime. Existing rows
# start at 0, so every file is re-hashed once.
@step()
def file_ctime(conn) -> None:
    _run(
        conn,
        "ALTER TABLE files ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0",
        "DROP INDEX files_stat",
        "CREATE INDEX files_stat ON files(path, mtime_ns, size, ino, ctime_ns)")


@step()
def fts_words_against_cjk(conn) -> None:
    """Full-text rows with the Latin words and digits written against CJK text (fts.cjk_columns)."""
    from zmem.store.fts import convert_rows
    convert_rows(conn)


@step(snapshot_only=True)
def dir_ctime(conn) -> None:
    """ctime joins a directory's signature: tar, rsync -a and unzip put a directory's mtime back
    after adding entries; its ctime moves anyway. Existing rows start at 0, so every memory
    directory is listed again once (which also finds notes an older zmem lost track of).
    Idempotent: an index whose schema record was set back (tests, or an older zmem's rows) may
    have the column already."""
    if "ctime_ns" not in {row[1] for row in conn.execute("PRAGMA table_info(dirs)")}:
        conn.execute("ALTER TABLE dirs ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0")


@step()
def fts_glued_words(conn) -> None:
    """Full-text rows with the words written against characters newer than unicode61's Unicode
    6.1 tables (emoji such as U+1F973, skin tones: fts_glue), history and sessions converted in
    place; the new NOTES_SCHEMA re-derives the notes' rows."""
    from zmem.store.fts import convert_glued_rows
    convert_glued_rows(conn)


@step(snapshot_only=True)
def fts_form(conn) -> None:
    """session_messages and hist_chunks gain fts_form: the FTS_VERSION their full-text row was
    written in. An older zmem process that opened the index before fts_glued_words goes on writing
    form 2 (NULL here); the rows it wrote are converted before any is deleted
    (fts.convert_old_form_rows). Existing rows are in the current form (fts_glued_words converted
    them). Idempotent as dir_ctime."""
    for table in ("session_messages", "hist_chunks"):
        if "fts_form" not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN fts_form INTEGER")
        conn.execute(f"UPDATE {table} SET fts_form = 3 WHERE fts_form IS NULL")
        conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_old_form ON {table}(id) WHERE fts_form IS NULL")


@step(snapshot_only=True)
def contentless_delete_fts(conn) -> None:
    """Full-text tables that delete a row by its rowid (FTS5 contentless_delete=1, SQLite >= 3.43):
    a delete given other values than were indexed (an older zmem process, another Python's word
    boundaries) left tokens behind, a corrupt index nothing noticed. Built anew from the rows they
    index, which also drops what such deletes left; an older SQLite gets them as they were."""
    from zmem.store.fts import rebuild_tables
    rebuild_tables(conn)


@step(snapshot_only=True)
def fact_ids_with_entities(conn) -> None:
    """Fact ids name the fact's entities (retain.fact_id): two facts with the same words about
    different entities in one file had one id (reflect took them for one). fid becomes the new id,
    and legacy_fid keeps the one evidence recorded before (retain.legacy_fact_id) in
    bank/opinions.md still cites. Both derive from the stored row; idempotent as dir_ctime."""
    from zmem.text.retain import fact_id, legacy_fact_id
    if "legacy_fid" not in {row[1] for row in conn.execute("PRAGMA table_info(facts)")}:
        conn.execute("ALTER TABLE facts ADD COLUMN legacy_fid TEXT")
    conn.executemany("UPDATE facts SET fid = ?, legacy_fid = ? WHERE id = ?",
                     [(fact_id(path, kind, text, names.split("\t") if names else ()), legacy_fact_id(path, kind, text),
                       rowid) for rowid, path, kind, text, names in
                      conn.execute("SELECT id, path, kind, text, names FROM facts").fetchall()])
    conn.execute("CREATE INDEX IF NOT EXISTS facts_legacy_fid ON facts(legacy_fid)")


@step(snapshot_only=True)
def index_id(conn) -> None:
    """A random id of this index file, never rewritten: with the chunk id sequence and FTS5's
    structure and averages records it names what the notes' full-text rows hold (zmem.store.impact's
    state key) without the snapshot time, which a catch-up that only re-stats files also moves. A rebuild
    (`zmem index --full`) writes a new file, so a new id."""
    conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES('index_id', lower(hex(randomblob(12))))")


@step(snapshot_only=True)
def everyday_read_indexes(conn) -> None:
    """Indexes for the everyday reading commands, each replacing a scan of every row:
    - facts_names: every entity's spellings, fact count and days (query.entities.all_entities: `zmem
      entity`, `graph`, a recall naming an entity) group the facts by their list of names from it
      alone (50,000 facts: ~35 -> ~8 ms);
    - facts_newest: the facts newest first as query_facts orders them, so `zmem facts` reads its
      newest 50 without sorting all of them (50,000 facts: ~55 -> ~1 ms);
    - files_warned: the files with a warning (catchup.stored_warnings: `facts`, `index`, `status`),
      usually none (10,000 files: ~5 ms in a fresh process)."""
    conn.execute("CREATE INDEX IF NOT EXISTS facts_names ON facts(names, day)")
    conn.execute("CREATE INDEX IF NOT EXISTS facts_newest ON facts(coalesce(day, event_start, '') DESC, "
                 "path DESC, start_line DESC)")
    conn.execute("CREATE INDEX IF NOT EXISTS files_warned ON files(path) WHERE warning IS NOT NULL")


SCHEMA_VERSION = len(STEPS)  # user_version: an older zmem refuses an index whose number exceeds its own
# The index fingerprint names NOTES_SCHEMA, the position of the last step that changes what notes
# derive to: a snapshot-only step re-reads no note.
NOTES_SCHEMA = max(position for position, s in enumerate(STEPS, 1) if not s.snapshot_only)


class _ReadOnlyIndex(sqlite.Connection):
    """A connection to an index this process cannot write; readonly_reason says why."""
    readonly_reason = ""


def connect_readonly_index(path: Path, reason: str, *, hint: str):
    """The index opened for reading only (mode=ro: temporary tables still work) because it cannot be
    written (reason). A WAL database normally needs its -shm file writable; without a write-ahead
    log to read it is opened immutable (only the main file is read, which then holds everything)."""
    from urllib.parse import quote  # a '?', '#' or '%' in the path would change the URI's meaning
    uri = f"file:{quote(Path(path).as_posix())}?mode=ro"
    wal = Path(f"{path}-wal")
    conn = None
    try:
        for params in ("", "&immutable=1"):
            if params and wal.exists() and wal.stat().st_size:
                raise IndexUnusable(f"cannot read the index {path}: its write-ahead log needs write access ({reason})",
                                    hint=hint)
            try:
                conn = sqlite.connect(uri + params, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None,
                                      check_same_thread=False, factory=_ReadOnlyIndex)
                version = schema_version(conn)  # reads the file: fails here when the -shm cannot be used
                break
            except sqlite.DatabaseError as e:
                if conn is not None:
                    conn.close()
                    conn = None
                error = e
        else:
            raise IndexUnusable(f"cannot read the index {path}: {error} ({reason})", hint=hint)
    except OSError as e:
        raise IndexUnusable(f"cannot read the index {path}: {e.strerror} ({reason})", hint=hint) from None
    conn.readonly_reason = reason
    try:
        _check_fts_support(conn)
    except IndexUnusable:
        conn.close()
        raise
    try:
        _refuse_newer(version, _recorded(conn), hint="upgrade zmem")
    except IndexUnusable:
        conn.close()
        raise
    if version < SCHEMA_VERSION:
        conn.close()
        raise IndexUnusable(f"the index {path} needs converting for this zmem version, and cannot be written "
                            f"({reason})", hint=hint)
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
    return conn


def migrate(conn) -> None:
    """Bring the schema up to date: each step not applied yet, in one transaction that records it
    (statement by statement, since executescript() would commit an open transaction). Nothing to
    do is two reads."""
    try:
        version = schema_version(conn)
        recorded = _recorded(conn)
    except sqlite.DatabaseError as e:
        raise IndexUnusable(f"the index is not a readable SQLite database: {e}",
                            hint="run `zmem index --full` to rebuild it")
    _refuse_newer(version, recorded,
                  hint="upgrade zmem, or rebuild the index for this version with `zmem index --full`")
    _check_fts_support(conn)
    if version == SCHEMA_VERSION and recorded is not None and len(recorded) == SCHEMA_VERSION:
        return
    applied = (recorded or set()) | {m.name for m in STEPS[:version]}
    pending = [m for m in STEPS if m.name not in applied]
    if not pending:  # only the record to bring in line, once: an index an older zmem brought up to date
        with write_transaction(conn):
            _record_numbered_steps(conn)
    for m in pending:
        with write_transaction(conn):
            # read again under the lock: another process may have taken this step while we waited
            if m.name in _record_numbered_steps(conn):
                continue
            m.apply(conn)
            conn.execute("INSERT INTO _migrations(name, applied_at) VALUES(?, datetime('now'))", (m.name,))
            _record_numbered_steps(conn)


def _recorded(conn) -> set[str] | None:
    """The names in _migrations, or None for an index no zmem with named steps has written."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_migrations'").fetchone():
        return None
    return {name for (name,) in conn.execute("SELECT name FROM _migrations")}


def _record_numbered_steps(conn) -> set[str]:
    """Bring _migrations and user_version in line (in the caller's write transaction), and return
    the names of the steps applied. A zmem before named steps (and one still running) records a
    step only in user_version: at N, steps 1..N are applied (their applied_at is unknown, NULL).
    user_version becomes the number of leading steps applied, which an older zmem compares with
    the number of steps it knows."""
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    version = schema_version(conn)
    conn.executemany("INSERT OR IGNORE INTO _migrations(name) VALUES(?)", [(s.name,) for s in STEPS[:version]])
    names = {name for (name,) in conn.execute("SELECT name FROM _migrations")}
    done = next((i for i, s in enumerate(STEPS) if s.name not in names), len(STEPS))
    if done > version:
        conn.execute(f"PRAGMA user_version = {done}")
    return names


def _refuse_newer(version: int, recorded: set[str] | None, *, hint: str) -> None:
    """A newer zmem's index (more steps than this zmem knows, or steps it does not know) would be
    misread or damaged by this one."""
    unknown = sorted((recorded or set()) - {s.name for s in STEPS})
    if version > SCHEMA_VERSION or unknown:
        steps = f" with steps {', '.join(unknown)}" if unknown else ""
        raise IndexUnusable(
            f"the index was written by a newer zmem (schema {version}{steps}; this zmem knows {SCHEMA_VERSION})",
            hint=hint)


def _check_fts_support(conn) -> None:
    """An index whose full-text tables need a newer SQLite than this driver's (contentless_delete=1,
    made by SQLite >= 3.43: pysqlite3, here the stdlib sqlite3) cannot be read: say so, not
    'unrecognized option' at the first recall."""
    from zmem.store.fts import CONTENTLESS_DELETE
    if sqlite.sqlite_version_info >= CONTENTLESS_DELETE:
        return
    if conn.execute("SELECT 1 FROM sqlite_master WHERE sql LIKE '%contentless_delete=1%'").fetchone():
        raise IndexUnusable(f"the index was written with SQLite 3.43 or newer and this zmem runs {DRIVER} "
                            f"{sqlite.sqlite_version}, which cannot read its full-text tables",
                            hint="rebuild it for this SQLite with `zmem index --full` (the index is derived), "
                               "or install pysqlite3-binary")
