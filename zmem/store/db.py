"""The only module that owns the SQLite driver: connecting, loading sqlite-vec, the meta table.
The schema and its migration steps are in migrations.

The stdlib sqlite3 of many Python builds (this machine's included) cannot load extensions, so
zmem prefers pysqlite3 (a DB-API drop-in with FTS5 and load_extension) and falls back to the
stdlib module, reporting which one it uses and whether sqlite-vec loaded.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from zmem.errors import IndexUnusable

try:  # pragma: no cover - which branch runs depends on the platform
    import pysqlite3.dbapi2 as sqlite  # type: ignore[import-not-found]
    DRIVER = "pysqlite3"
except ImportError:  # pragma: no cover
    import sqlite3 as sqlite  # type: ignore[no-redef]
    DRIVER = "sqlite3"

Error = sqlite.Error
LOCKED = {5, 6, 15}  # SQLITE_BUSY, SQLITE_LOCKED, SQLITE_PROTOCOL: another connection holds a lock
BUSY_TIMEOUT = 10.0  # seconds a connection waits for another's lock
OperationalError = sqlite.OperationalError
DatabaseError = sqlite.DatabaseError


def connect(path: Path | str, *, readonly: bool = False):
    """Open the index with WAL (readers never block the writer) and a busy timeout."""
    try:
        if readonly:
            from urllib.parse import quote  # a '?', '#' or '%' in the path would change the URI's meaning
            conn = sqlite.connect(f"file:{quote(Path(path).as_posix())}?mode=ro", uri=True, timeout=BUSY_TIMEOUT,
                                  isolation_level=None, check_same_thread=False)
        else:
            conn = sqlite.connect(str(path), timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite.DatabaseError as e:
        if (getattr(e, "sqlite_errorcode", 0) & 0xFF) in LOCKED:
            from zmem.errors import TRY_AGAIN, IndexBusy
            raise IndexBusy(f"cannot open the index {path}: {e}",
                            hint=f"another process (a zmem command, a watcher) holds it: {TRY_AGAIN}") from None
        raise IndexUnusable(f"cannot open the index {path}: {e}",
                            hint="the index is derived: run `zmem index --full` to rebuild it")
    return conn


def readonly_reason(conn) -> str | None:
    """Why conn cannot write the index (connect_readonly_index), or None."""
    return getattr(conn, "readonly_reason", None) or None


@contextmanager
def write_transaction(conn):
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        # SQLite may have rolled back already (a full disk, a file too large), or the COMMIT went
        # through before a Ctrl-C landed: a failing ROLLBACK must not hide what went wrong
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite.Error:
                pass
        raise


def schema_version(conn) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def vec_extension_path() -> str | None:
    """Path of sqlite-vec's loadable library, found without importing the package (numpy)."""
    import importlib.util  # here: a BM25 recall never looks (~0.4 ms)
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return None
    for d in spec.submodule_search_locations:
        for name in ("vec0.so", "vec0.dylib", "vec0.dll"):
            if (Path(d) / name).is_file():
                return str(Path(d) / name)
    return None


def load_vec(conn) -> tuple[bool, str]:
    """Try to load sqlite-vec. Returns (loaded, detail) — detail says why not."""
    path = vec_extension_path()
    if path is None:
        return False, "sqlite-vec is not installed"
    if not hasattr(conn, "enable_load_extension"):
        return False, f"the {DRIVER} driver cannot load extensions"
    try:
        conn.enable_load_extension(True)
        conn.load_extension(path.rsplit(".", 1)[0])
        conn.enable_load_extension(False)
        version = conn.execute("SELECT vec_version()").fetchone()[0]
        return True, f"sqlite-vec {version}"
    except (sqlite.Error, AttributeError) as e:
        return False, f"sqlite-vec failed to load: {e}"


def sqlite_version() -> str:
    return sqlite.sqlite_version


def get_meta(conn, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn, key: str, value: str | None) -> None:
    if value is None:
        conn.execute("DELETE FROM meta WHERE key = ?", (key,))
    else:
        conn.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                     (key, value))
