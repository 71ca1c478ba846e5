"""Keeping the derived index equal to the memory files: catch-up, full rebuild, the lock."""
from __future__ import annotations

import errno
import fcntl
import functools
import itertools
import json
import os
import re
import shutil
import signal
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

TYPE_CHECKING = False  # as typing's, without importing typing (~3 ms of a fresh recall); checkers know the name
if TYPE_CHECKING:
    from zmem.git.repo import Repo

from zmem.store import db
from zmem.index import fsmonitor
from zmem.store import migrations
from zmem.text.chunking import CHUNKER_VERSION, chunk_lines
from zmem.errors import TRY_AGAIN, IndexUnusable
from zmem.store.fts import FTS_VERSION, cjk_columns, delete_rows
from zmem.text.markdown import day_from_path, decode_note, scan_blocks, split_lines, without_markers
from zmem.text.retain import RETAIN_VERSION, Fact, entity_key, facts_of_blocks, legacy_fact_id
from zmem.workspace.snapshot import (IGNORE_META, Changes, changed_since_snapshot, dir_signatures, git_blob_id, ignore_inputs,
                           ignore_record, ignore_rules_changed, now_ns, read_head, record_dirs, stat_signature,
                           stored_ignore_record)
from zmem.store.vectors import VectorStore
from zmem.workspace.core import Workspace, shown_name, unciteable

Progress = Callable[[int, int], None] | None
# The blob column of a memory file that could not be read (EACCES, EIO): its row keeps the file's
# stat signature, so the cheap check notices when it changes (a chmod moves its ctime) and tries again,
# and its warning, so every recall names it while it stays unreadable.
UNREADABLE = ""


class LockTimeout(Exception):
    pass


class LockUnavailable(IndexUnusable):
    """The lock file cannot be opened at all (no permission to create it, a read-only file system)."""


class IndexLock:
    """One writer at a time: an flock on .zmem/lock (released by the kernel if we die). Whoever
    takes it also removes what killed rebuilds left behind (remove_dead_rebuilds)."""

    def __init__(self, ws: Workspace, timeout: float):
        self.path = ws.state_dir / "lock"
        self.timeout = timeout
        self.fd: int | None = None

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except IsADirectoryError:
            raise _not_a_file(self.path) from None
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and self.path.is_file():
                try:  # flock needs no write access: a lock file we may only read still serializes writers
                    return os.open(self.path, os.O_RDONLY)
                except OSError:
                    pass
            raise LockUnavailable(f"cannot open the lock file {self.path}: {e.strerror}",
                                  hint=access_hint(self.path.parent)) from None

    def __enter__(self):
        self.fd = self._open()
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                remove_dead_rebuilds(self.path.parent)
                return self
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                    os.close(self.fd)
                    self.fd = None
                    raise LockTimeout() from e
                time.sleep(0.02)

    def __exit__(self, *exc):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


REBUILD_PREFIX = "index.sqlite.rebuild-"  # + the rebuilding process's PID: the new index until it is swapped in
_REBUILD_FILE = re.compile(re.escape(REBUILD_PREFIX) + r"(\d+)(?:-wal|-shm|-journal)?")


def dead_rebuilds(state_dir: Path) -> list[Path]:
    """The files of full rebuilds whose process is gone (kill -9, a crash, a power loss): only
    `zmem index --full` itself removes its file, so nothing else would. A file whose PID is alive
    belongs to a rebuild in progress."""
    try:
        names = os.listdir(state_dir)
    except OSError:
        return []
    return [state_dir / name for name in names
            if (m := _REBUILD_FILE.fullmatch(name)) and not _pid_alive(int(m[1]))]


def remove_dead_rebuilds(state_dir: Path) -> None:
    for path in dead_rebuilds(state_dir):
        try:
            path.unlink()
        except OSError:  # gone meanwhile, or a state dir we may not write: the next writer tries again
            pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except (OverflowError, ValueError):
        return False
    return True


NO_SPACE_BYTES = 1 << 20  # free space under which an index that cannot be opened for writing is read as it is
# What zmem keeps in .zmem under these names is a file; anything else there stops it with an error naming it.
STATE_FILES = ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm", "index.sqlite-journal", "lock")


def _not_a_file(path: Path) -> IndexUnusable:
    what = "a directory" if path.is_dir() else "not a regular file"
    return IndexUnusable(f"{path} is {what}; zmem keeps a file of its own there",
                         hint=f"remove it (rm -r {path}): everything in {path.parent.name}/ is derived and rebuilt")


def access_hint(state_dir: Path) -> str:
    return (f"zmem needs to write in {state_dir}: give this user write access to it (chmod u+rwx {state_dir}, "
            f"or run zmem as its owner), or delete it: everything in it is derived and rebuilt")


@dataclass
class CatchUp:
    head: str | None = None
    previous: str | None = None  # indexed commit before this catch-up
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stale: bool = False  # could not catch up (another writer held the lock)
    deferred: bool = False  # too much to do inline; left for a detached `zmem index`
    full_scan: bool = False
    seconds: float = 0.0


def ensure_state_dir(ws: Workspace) -> None:
    d = ws.state_dir
    try:
        d.mkdir(exist_ok=True)
    except (FileExistsError, NotADirectoryError):  # a file (or a broken symlink) took the name
        raise IndexUnusable(f"{d} is not a directory; zmem keeps its index there",
                            hint=f"move it aside (mv {d} {d}.bak): the index is derived "
                               "from the notes and is rebuilt") from None
    except OSError as e:
        raise IndexUnusable(f"cannot create {d}: {e.strerror}",
                            hint=f"zmem keeps its index there: give this user write access to {d.parent} "
                               "(or run zmem as its owner)") from None
    try:
        for name in STATE_FILES:
            path = d / name
            try:  # one stat: SQLite deletes the WAL when its last connection closes, maybe in between two
                mode = os.stat(path).st_mode
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    continue  # not there (a dangling or looping link: not ours either way)
                raise
            if not stat.S_ISREG(mode):
                raise _not_a_file(path)
        ignore = d / ".gitignore"
        if not ignore.exists():  # keeps .zmem/ out of git even where the top .gitignore lacks it
            ignore.write_text("# derived by zmem; never commit\n*\n")
    except OSError as e:
        if not os.access(d, os.R_OK | os.X_OK):  # .zmem exists, but its own permissions keep us out
            raise IndexUnusable(f"cannot use {d}: {e.strerror}",
                                hint=f"give this user access to it (chmod u+rwx {d}), or delete it: everything "
                                   "in it is derived and rebuilt") from None
        # readable but not writable: the index is used as it is (open_index says so)


def write_denied(ws: Workspace) -> str | None:
    """Why the index cannot be written (a read-only file system, permissions), or None."""
    d = ws.state_dir
    try:
        if os.statvfs(d).f_flag & os.ST_RDONLY:
            return f"{d} is on a read-only file system"
    except OSError:
        pass
    if not os.access(d, os.W_OK | os.X_OK):
        return f"no permission to write in {d}"
    for path in (ws.index_path, d / "lock"):
        if path.exists() and not os.access(path, os.W_OK):
            return f"no permission to write {path}"
    return None


def fingerprint(ws: Workspace) -> str:
    """Everything that changes chunk boundaries or the set of sources; a change re-scans all."""
    c = ws.config
    return (f"chunker={CHUNKER_VERSION};retain={RETAIN_VERSION};schema={migrations.NOTES_SCHEMA};tokens={c.chunk_tokens};"
            f"overlap={c.chunk_overlap};max_mb={c.max_file_mb};extra={sorted(ws.extra_roots())}")


def stored_warnings(conn) -> list[str]:
    """What indexing said about files (undecodable bytes, malformed Retain bullets), one per line."""
    return [w for (ws_,) in conn.execute("SELECT warning FROM files WHERE warning IS NOT NULL ORDER BY path")
            for w in ws_.split("\n")]


def open_index(ws: Workspace):
    """A migrated connection to the index (created if missing). When the index cannot be written
    (permissions, a read-only file system) but can be read: a read-only connection
    (db.readonly_reason says why), which catch_up never writes to and reports as stale when the
    notes changed."""
    if not ws.state_dir.exists():  # a first command in a folder git does not hold fails before writing anything
        from zmem.git.repo import open_repo
        open_repo(ws.root)
    ensure_state_dir(ws)
    why = write_denied(ws)
    if why is not None:
        if not ws.index_path.is_file() or ws.index_path.stat().st_size == 0:
            raise IndexUnusable(f"cannot create the index {ws.index_path}: {why}", hint=access_hint(ws.state_dir))
        return migrations.connect_readonly_index(ws.index_path, why, hint=access_hint(ws.state_dir))
    try:
        conn = db.connect(ws.index_path)
    except IndexUnusable:
        full = _no_space(ws.state_dir)
        if full is None or not ws.index_path.is_file() or ws.index_path.stat().st_size == 0:
            raise
        # the index is whole; its write-ahead log could not be made: read it as it is, stale
        return migrations.connect_readonly_index(ws.index_path, full, hint="free some space on that disk: the "
                                                 "next command catches up")
    try:
        migrations.migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _no_space(d: Path) -> str | None:
    """Why nothing can be written in d for want of space (a full disk, or one short of SQLite's few pages)."""
    try:
        free = shutil.disk_usage(d).free
    except OSError:
        return None
    return f"no space left on the disk that holds {d}" if free < NO_SPACE_BYTES else None


def _cannot_update(ws: Workspace, repo: Repo | None, why: str) -> CatchUp:
    """The answer of a catch-up that could not write: the index as it is, said to be stale."""
    if repo is None:
        from zmem.git.repo import open_repo
        repo = open_repo(ws.root)
    return CatchUp(head=repo.head(), stale=True,
                   warnings=[f"the index could not be updated ({why}); answers come from the index as it was "
                             "and may miss recent changes"])


def _is_readonly_error(e: BaseException) -> bool:
    return isinstance(e, db.Error) and str(getattr(e, "sqlite_errorname", "")).startswith("SQLITE_READONLY")


def catch_up(ws: Workspace, *, repo: Repo | None = None, lock_timeout: float = 5.0,
             max_inline: int | None = None, progress: Progress = None, conn=None, reading: bool = False) -> CatchUp:
    """Bring the index up to HEAD plus the working tree, reindexing only what changed.
    conn: an open index connection to use (and leave open); one connection per catch-up matters,
    because closing the last connection after a write checkpoints the WAL (~15 ms). reading: the
    freshness check of a reading command, which may start a watcher (quick_check)."""
    t0 = time.perf_counter()
    ensure_state_dir(ws)
    own = conn is None
    if own:
        conn = open_index(ws)
    why = db.readonly_reason(conn)  # opened read-only: nothing is written, what changed makes it stale
    try:
        hint = None
        if repo is None:
            checked_at = now_ns()
            indexed, hint = quick_check(ws, conn, reading=reading)
            if indexed is not None and not (hint.files or hint.dirs or hint.ignores):
                if (hint.restat or hint.rehashed or hint.rescanned) and why is None:
                    # same content, new stat (touch, checkout), or files and directories too new to trust by stat:
                    # record what was verified so the next check is stat-only again
                    _restat(ws, conn, hint.restat, checked_at)
                elif why is None and dead_rebuilds(ws.state_dir):  # a listdir: taking the lock removes them
                    _restat(ws, conn, {}, None)
                # nothing changed: no pygit2, no lock
                return CatchUp(head=indexed, previous=indexed, warnings=list(ws.config.warnings),
                               seconds=time.perf_counter() - t0)
            if why is None:  # git's answers from the git command: pygit2 only if a full scan needs it
                from zmem.git.gitstatus import open_command_repo
                repo = open_command_repo(ws.root, git_optional=True)
        if why is not None:
            # what changed, found as a catch-up would find it (a chmod -R moves every ctime, and
            # content nobody changed is not stale), but nothing is written
            if repo is None:
                from zmem.git.repo import open_repo
                repo = open_repo(ws.root)
            result = _catch_up(ws, repo, conn, None, None, hint, dry_run=True)
            if result.stale:
                result = _cannot_update(ws, repo, why)
        else:
            try:
                with IndexLock(ws, lock_timeout):
                    result = _catch_up(ws, repo, conn, max_inline, progress, hint)
            except LockTimeout:
                result = CatchUp(head=repo.head(), stale=True,
                                 warnings=["another zmem process is updating the index; results may be stale"])
            except LockUnavailable as e:
                result = _cannot_update(ws, repo, e.message)
            except db.Error as e:
                if not _is_readonly_error(e):
                    raise _write_failure(ws, e, "cannot update the index") from None
                result = _cannot_update(ws, repo, f"{e}: {write_denied(ws) or 'the index file is read-only'}")
    finally:
        if own:
            conn.close()
    result.warnings[:0] = ws.config.warnings  # zmem.toml keys no setting has: every reading command says so
    result.seconds = time.perf_counter() - t0
    return result


def quick_check(ws: Workspace, conn, reading: bool = False) -> tuple[str | None, Changes | None]:
    """(indexed commit if HEAD and the settings are as the index saw them, else None; what changed
    on disk since the snapshot, or None without a snapshot). Needs no git library. reading: a reading
    command's check, which starts a watcher when nobody serves the workspace and one pays (autowatch)."""
    indexed = db.get_meta(conn, "indexed_commit")
    taken = db.get_meta(conn, "snapshot_ns")
    git_dir, common = db.get_meta(conn, "git_dir"), db.get_meta(conn, "git_common_dir")
    if not (indexed is not None and taken and git_dir and common):
        return None, None
    vouched = fsmonitor.vouched(ws.state_dir, taken)
    if vouched:  # a watcher saw no memory file change since the snapshot
        changes = Changes()
        changes.ignores = ignore_rules_changed(stored_ignore_record(conn))  # partly outside what it watches
    else:
        changes = changed_since_snapshot(ws.root, conn, int(taken), ws.is_memory_path, ws.memory_roots())
        if vouched is None and reading:  # nobody serves this workspace: start a watcher for the next commands
            from zmem.index.autowatch import start_if_it_pays
            start_if_it_pays(ws, conn)  # (after the sweep: the watcher's start does not slow this one down)
    same = db.get_meta(conn, "fingerprint") == fingerprint(ws) and indexed and read_head(git_dir, common) == indexed
    return (indexed if same else None), changes


# How long a recall waits for its forked check's answer before it stops the child and checks for
# itself: a sweep of 100k files takes ~0.5 s; a child stopped (SIGSTOP) or stuck must not hang the recall.
CHECK_AHEAD_WAIT = 10.0


class CheckAhead:
    """quick_check running in a forked child process while this one reads the index (check_ahead)."""

    def __init__(self, pid: int, fd: int):
        self.pid, self.fd = pid, fd

    def indexed(self) -> str | None:
        """Wait for the child (at most CHECK_AHEAD_WAIT seconds): the index state it checked (index_state) when catch_up would have returned at once with
        nothing to record (HEAD, settings, files, directories and ignore rules as the index saw
        them), else None (changed, or anything odd: the caller catches up as usual)."""
        import select
        deadline = time.monotonic() + CHECK_AHEAD_WAIT
        try:
            reply = b""
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                    self.abandon()  # stopped, or stuck: the caller checks for itself
                    return None
                chunk = os.read(self.fd, 128)
                if not chunk:
                    break
                reply += chunk
            status = os.waitpid(self.pid, 0)[1]
        except BaseException:  # Ctrl-C while waiting: the child is not left behind
            self.abandon()
            raise
        self._done()
        ok = os.waitstatus_to_exitcode(status) == 0 and bool(reply) and reply.isascii()
        return reply.decode() if ok else None

    def abandon(self) -> None:
        """Stop the child, if it is still running, and reap it."""
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except ChildProcessError:  # reaped already
            pass
        finally:
            self._done()

    def _done(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def check_ahead(ws: Workspace, reading: bool = False) -> CheckAhead | None:
    """Start the freshness check (quick_check, with its own connection) in a forked child, so that
    its stat sweep runs on another core while this process opens the index and searches. Call it
    before this process opens the index: an open SQLite connection must not cross a fork. None
    where there is no fork, when no other core is idle (the child would only add its own cost, ~8 ms
    of CPU), or when a watcher's socket is there (asking it is quicker than a fork). reading: as quick_check's."""
    if not hasattr(os, "fork") or not _idle_core() or os.path.exists(os.path.join(ws.state_dir, fsmonitor.SOCKET)):
        return None
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the child: say the indexed commit when nothing is to be done, exit 1 for anything else
        code = 1
        try:
            os.close(r)
            null = os.open(os.devnull, os.O_RDWR)  # a reader waiting for EOF on the parent's output never waits for it
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            indexed = _nothing_to_do(ws, reading=reading)
            if indexed:
                os.write(w, indexed.encode())
                code = 0
        except BaseException:  # noqa: BLE001 - the parent then checks for itself
            pass
        finally:
            os._exit(code)  # no atexit, no flushing of the parent's buffers, no SQLite close
    os.close(w)
    return CheckAhead(pid, r)


def _idle_core() -> bool:
    """Whether a core is idle now besides this process's: Linux counts the tasks running or ready to
    run now (this one included) in /proc/loadavg; elsewhere the last minute's load average tells."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        with open("/proc/loadavg", "rb") as f:
            return int(f.read().split()[3].split(b"/")[0]) < cores
    except (OSError, ValueError, IndexError):
        try:
            return os.getloadavg()[0] < cores - 1
        except OSError:
            return False


def _nothing_to_do(ws: Workspace, reading: bool = False) -> str | None:
    """"COMMIT SNAPSHOT" (the index state checked: its indexed commit and snapshot time, see
    index_state) when catch_up would return at once without writing anything, else None."""
    conn = db.connect(ws.index_path, readonly=True)
    conn.execute("BEGIN")  # one index state for every read: another process may catch up meanwhile
    indexed, changes = quick_check(ws, conn, reading=reading)
    if indexed is None or changes is None or changes.files or changes.dirs or changes.ignores or changes.restat \
            or changes.rehashed or changes.rescanned or dead_rebuilds(ws.state_dir):
        return None
    return index_state(conn)


def index_state(conn) -> str:
    """"COMMIT SNAPSHOT" of the index conn reads: every catch-up that writes records a new snapshot
    time, so the child's check holds for what this process read only when both say the same."""
    return " ".join(v or "" for v in conn.execute(
        "SELECT (SELECT value FROM meta WHERE key = 'indexed_commit'), "
        "(SELECT value FROM meta WHERE key = 'snapshot_ns')").fetchone())


def _restat(ws: Workspace, conn, restat: dict, checked_at: int | None) -> None:
    """Record verified stat signatures under the lock (checked_at None: only take the lock, which
    removes what killed rebuilds left)."""
    try:
        with IndexLock(ws, 0):
            if checked_at is None:
                return
            with db.write_transaction(conn):
                _record_stats(conn, restat)
                db.set_meta(conn, "snapshot_ns", str(checked_at))
    except (LockTimeout, LockUnavailable):
        pass  # a writer is busy (it or the next command records them), or none can write: nothing changed
    except db.Error as e:
        if not _is_readonly_error(e):
            raise


def _record_stats(conn, restat: dict[str, tuple[int, int, int, int]]) -> None:
    """Store new stat signatures of files whose content is unchanged (the caller holds the transaction)."""
    conn.executemany("UPDATE files SET mtime_ns = ?, size = ?, ino = ?, ctime_ns = ? WHERE path = ?",
                     [(*sig, rel) for rel, sig in restat.items()])


def _catch_up(ws: Workspace, repo: Repo, conn, max_inline: int | None, progress: Progress,
              hint: Changes | None = None, dry_run: bool = False) -> CatchUp:
    """Candidates: the tree diff between the indexed commit and HEAD, plus what the stat snapshot
    says changed in the working tree (edits, new and deleted files: what `git status` would say,
    for memory files only, and without ignoring files git considers clean but we never indexed).
    dry_run: write nothing, and say stale when the index would have changed (a read-only index)."""
    # anything modified from here on is newer than the snapshot; with a hint, from when it was taken
    # (before the wait for the lock): what changed meanwhile must still look new to the next check
    taken = min(now_ns(), hint.checked_ns) if hint else now_ns()
    head = repo.head()
    indexed = db.get_meta(conn, "indexed_commit")  # None: never indexed; "": indexed an unborn HEAD
    result = CatchUp(head=head, previous=indexed or None)
    # new settings (chunk sizes, or a new chunker, Retain parser or schema): every file is read
    # and indexed again, even one whose content the index already holds
    resettle = indexed is not None and db.get_meta(conn, "fingerprint") != fingerprint(ws)
    full = indexed is None or resettle
    candidates: set[str] = set()
    if not full and head != (indexed or None):
        if indexed and head and repo.has_commit(indexed):
            # only memory files: a name that is not UTF-8 is none (is_memory_path) and no query can take it
            candidates |= {p for p in repo.changed_paths(indexed, head) if ws.is_memory_path(p)}
        else:  # first commit, orphan branch, or the indexed commit was rewritten away and pruned
            full = True
    old_taken = db.get_meta(conn, "snapshot_ns")
    restat: dict[str, tuple[int, int, int, int]] = {}
    old_rules = stored_ignore_record(conn)
    if full or not old_taken:
        dirs = dir_signatures(ws.root, ws.memory_roots())  # before the files are listed
        rules = _ignore_rules(ws, repo, dirs)  # before git reads them: a later edit shows next time
        unnamed: list[str] = []
        on_disk = [p for p in ws.memory_files(unnamed) if not repo.is_ignored(p)]  # sorted
        result.warnings += [f"{shown_name(p)}: skipped: {unciteable(p)}; rename it to index it" for p in unnamed]
        full = result.full_scan = True

        def listing():
            return _full_listing(on_disk, conn)
    else:
        changes = hint or changed_since_snapshot(ws.root, conn, int(old_taken), ws.is_memory_path, ws.memory_roots())
        dirs = changes.dirs
        rules = _ignore_rules(ws, repo, {d for (d,) in conn.execute("SELECT path FROM dirs")} | set(changes.dirs))
        candidates |= changes.files
        ignored = functools.cache(repo.is_ignored)
        if ignore_rules_changed(old_rules, rules):
            # a .gitignore (info/exclude, core.excludesFile) changed: which memory files count is
            # decided again; only the files whose answer changed are read
            indexed_all = {p for (p,) in conn.execute("SELECT path FROM files")}
            candidates |= {p for p in indexed_all if ignored(p)} | (set(ws.memory_files()) - indexed_all)
        skip = {p for p in candidates if ws.is_memory_path(p) and ignored(p)}
        restat = dict(changes.restat)
        known = _known_files(conn, candidates)

        def listing():
            return ((rel, ws.is_memory_path(rel) and rel not in skip, known.get(rel)) for rel in sorted(candidates))
    if max_inline is not None and sum(1 for _ in listing()) > max_inline:
        result.deferred = True
        return result

    # What a full index holds per file until the end is its path and a pointer or two (a workspace of
    # 100k files must not cost a few hundred bytes each): contents, blob ids and stat signatures only
    # for the files held from the scan (KEEP_BYTES); the others are read, stat'ed and hashed again.
    # removals: (path, None, indexed blob): its rows go; (path, UNREADABLE, indexed blob): a row that watches it
    # replaces them. to_index: read (again) and indexed, in order; replaced: those of them the index holds a
    # row of -> whether that row has text (not UNREADABLE).
    removals: list[tuple[str, str | None, str | None]] = []
    to_index: list[str] = []
    replaced: dict[str, bool] = {}
    held: dict[str, tuple[bytes, str | None]] = {}  # path -> (content, blob id if computed)
    kept = 0
    to_index_bytes = 0
    sigs: dict[str, tuple[int, int, int, int] | None] = {}
    unreadable: dict[str, str] = {}  # path -> warning
    for rel, listed, old in listing():
        data = _read_memory_file(ws, rel, result, sigs, unreadable) if listed else None
        if rel in unreadable:
            if old == UNREADABLE and not resettle:
                restat[rel] = sigs.get(rel) or (0, 0, 0, 0)
            else:  # its rows go; a row that keeps watching it takes their place
                removals.append((rel, UNREADABLE, old))
            continue
        if data is None:
            if old is not None:
                removals.append((rel, None, old))
            continue
        blob = None
        if old is not None and not resettle:  # the only use of the blob before the insert
            blob = git_blob_id(data)
            if blob == old:
                restat[rel] = sigs.get(rel) or (0, 0, 0, 0)
                continue
        to_index_bytes += len(data)
        to_index.append(rel)
        if old is not None:
            replaced[rel] = old != UNREADABLE
        if kept + len(data) <= KEEP_BYTES:
            kept += len(data)
            held[rel] = (data, blob)
        else:
            del sigs[rel]  # taken again with the second read

    if dry_run:
        result.stale = bool(removals or to_index) or indexed != (head or "") or full
        return result
    if removals or to_index or restat or dirs or indexed != (head or "") or full \
            or rules["inputs"] != (old_rules or {}).get("inputs"):
        store = VectorStore(conn)
        with db.write_transaction(conn):
            _record_stats(conn, restat)
            if full:
                conn.execute("DELETE FROM dirs")
            record_dirs(conn, dirs)
            if resettle:  # every file is inserted again below: clear all rows at once
                _clear_notes(conn, store)
            for rel, blob, old in removals:
                if not resettle and old is not None:
                    _remove_file(conn, rel, store)
                if blob == UNREADABLE:
                    _insert_unreadable(conn, rel, sigs.get(rel), unreadable[rel])
                    if old not in (None, UNREADABLE):
                        result.removed.append(rel)  # its text left the index
                else:
                    result.removed.append(rel)
            if not resettle:
                for rel in replaced:
                    _remove_file(conn, rel, store)
            pending: dict[str, tuple[str, str, int]] = {}  # path -> (path, blob, size) of what was read, until inserted
            lost: list[str] = []  # gone or unreadable when read again

            def contents():
                for rel in to_index:
                    data, blob = held.pop(rel, (None, None))
                    if data is None:  # read again: a change since the scan is newer than its stat signature
                        data = _read_memory_file(ws, rel, result, sigs, unreadable)
                        if data is None:
                            lost.append(rel)
                            continue
                    pending[rel] = (rel, blob or git_blob_id(data), len(data))
                    yield rel, data

            # closing: an exception here (Ctrl-C) stops the worker pool now, not when the generator is collected
            batch: list[tuple[Prepared, str, int, tuple[int, int, int, int] | None]] = []

            def insert_batch() -> None:
                if not batch:
                    return
                insert_files(conn, batch)
                for p, _, _, _ in batch:
                    result.warnings.extend(p.warnings)
                    result.updated.append(p.rel)
                    if progress:
                        progress(len(result.updated), len(to_index))
                batch.clear()

            with closing(prepare_all(ws, contents(), len(to_index), to_index_bytes)) as prepared:
                for p in prepared:
                    # this process's string for the path, not the worker's copy: one string per file, not two
                    p.rel, blob, size = pending.pop(p.rel)
                    batch.append((p, blob, size, sigs.pop(p.rel, None)))
                    if len(batch) >= GROUP_FILES:
                        insert_batch()
                insert_batch()
            for rel in lost:
                if rel in unreadable:
                    _insert_unreadable(conn, rel, sigs.get(rel), unreadable[rel])
                if replaced.get(rel):
                    result.removed.append(rel)
            db.set_meta(conn, "indexed_commit", head or "")
            db.set_meta(conn, "fingerprint", fingerprint(ws))
            db.set_meta(conn, "snapshot_ns", str(taken))
            db.set_meta(conn, "git_dir", repo.git_dir())
            db.set_meta(conn, "git_common_dir", repo.common_dir())
            db.set_meta(conn, IGNORE_META, json.dumps(rules))
            db.set_meta(conn, "indexed_at", str(int(time.time())))
    _extend_history(ws, repo, conn, head, result)
    return result


def _ignore_rules(ws: Workspace, repo: Repo, dirs) -> dict:
    """The ignore files that decide which memory files count, as they are now (snapshot.ignore_record)."""
    return ignore_record(ignore_inputs(ws.root, repo.workdir, repo.common_dir(), dirs))


def _extend_history(ws: Workspace, repo: Repo, conn, head: str | None, result: CatchUp) -> None:
    """Once history is on (`zmem index --history`), each catch-up appends the new commits."""
    from zmem.index import history as history_build
    if not head or not history_build.enabled(conn):
        return
    tip = conn.execute("SELECT sha FROM hist_commits ORDER BY seq DESC LIMIT 1").fetchone()
    if tip and tip[0] == head:
        return
    try:
        update = history_build.update_history(ws, repo, conn)
    except (db.Error, OSError, ValueError, KeyError) as e:
        result.warnings.append(f"history not updated ({e}); run `zmem index --history`")
        return
    if update.rewound:
        result.warnings.append(update.rewound_note())


def _known_files(conn, paths: set[str]) -> dict[str, str]:
    """path -> blob for the indexed ones among paths (without loading every row)."""
    out: dict[str, str] = {}
    ordered = sorted(paths)
    for i in range(0, len(ordered), 500):
        batch = ordered[i:i + 500]
        out.update(conn.execute(f"SELECT path, blob FROM files WHERE path IN ({','.join('?' * len(batch))})", batch))
    return out


def _full_listing(on_disk: list[str], conn) -> Iterator[tuple[str, bool, str | None]]:
    """(path, on disk, blob the index holds or None) of every memory file on disk (on_disk, sorted)
    and every path the index holds, in order: on_disk merged with the index's rows read in the same
    order (SQLite compares the paths' UTF-8 bytes, which sort as their code points do), so the
    index's paths are never all held at once."""
    rows = conn.execute("SELECT path, blob FROM files ORDER BY path")
    row = rows.fetchone()
    for rel in on_disk:
        while row is not None and row[0] < rel:
            yield row[0], False, row[1]
            row = rows.fetchone()
        if row is not None and row[0] == rel:
            yield rel, True, row[1]
            row = rows.fetchone()
        else:
            yield rel, True, None
    while row is not None:
        yield row[0], False, row[1]
        row = rows.fetchone()


def _read_memory_file(ws: Workspace, rel: str, result: CatchUp, sigs: dict, unreadable: dict) -> bytes | None:
    """A memory file's bytes; None when it is not a regular file (gone, a symlink, a directory) or
    cannot be read (then in unreadable with its warning, and its stat signature in sigs)."""
    path = os.path.join(ws.root, rel)  # os, not pathlib: this runs for every file of a full index
    try:
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):  # a symlink, a directory, ...
                return None
        except OSError as e:
            if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EBADF):
                return None  # gone
            raise
        sigs[rel] = stat_signature(path)  # before reading: a later change shows as a new stat
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        warning = f"{rel}: skipped: cannot read ({e.strerror})"
        result.warnings.append(warning)
        if sigs.get(rel) is not None:
            unreadable[rel] = warning
        return None


def _insert_unreadable(conn, rel: str, sig: tuple[int, int, int, int] | None, warning: str) -> None:
    """The row of a memory file that could not be read: its stat signature and its warning, no text."""
    insert_files(conn, [(Prepared(rel, day_from_path(rel), 0, [warning], []), UNREADABLE, sig[1] if sig else 0, sig)])


def _clear_notes(conn, store: VectorStore) -> None:
    """Every note's rows, gone. 'delete-all' needs no column values: rows an older zmem wrote in
    another form (a process of it still running next to this one) cannot make the delete fail."""
    store.remove([cid for (cid,) in conn.execute("SELECT id FROM chunks")])
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('delete-all')")
    conn.execute("INSERT INTO facts_fts(facts_fts) VALUES('delete-all')")
    for table in ("chunks", "fact_entities", "relations", "facts", "files"):
        conn.execute(f"DELETE FROM {table}")


def _remove_file(conn, rel: str, store: VectorStore) -> None:
    rows = conn.execute("SELECT id, text, heading FROM chunks WHERE path = ?", (rel,)).fetchall()
    store.remove([cid for cid, _, _ in rows])
    delete_rows(conn, "chunks_fts", [(cid, without_markers(text), heading) for cid, text, heading in rows])
    conn.execute("DELETE FROM chunks WHERE path = ?", (rel,))
    facts = conn.execute("SELECT id, text, names FROM facts WHERE path = ?", (rel,)).fetchall()
    delete_rows(conn, "facts_fts", facts)
    ids = [(fid,) for fid, _, _ in facts]
    conn.executemany("DELETE FROM fact_entities WHERE fact_id = ?", ids)
    conn.executemany("DELETE FROM relations WHERE fact_id = ?", ids)
    conn.execute("DELETE FROM facts WHERE path = ?", (rel,))
    conn.execute("DELETE FROM files WHERE path = ?", (rel,))


@dataclass
class Prepared:
    """One file ready to insert: the pure, parallelizable part of indexing."""
    rel: str
    day: str | None
    lines: int
    warnings: list[str]
    rows: list[tuple]  # (start_line, end_line, heading, tokens, text, its full-text form, cjk_bi, cjk_uni)
    facts: list[tuple] = field(default_factory=list)  # fact_rows: each Retain fact as insert_files stores it


def prepare_file(rel: str, data: bytes, max_mb: float, chunk_tokens: int, chunk_overlap: int) -> Prepared:
    text, warnings = decode_note(rel, data, max_mb)
    day = day_from_path(rel)
    if not text:
        return Prepared(rel, day, 0, warnings + conflict_markers(rel, text), [])
    lines = split_lines(text)
    blocks = scan_blocks(lines)  # once for both the chunks and the facts
    rows = [(c.start_line, c.end_line, c.heading, c.tokens, c.text, fts, *cjk_columns(fts + "\n" + c.heading))
            for c in chunk_lines(lines, blocks, chunk_tokens, chunk_overlap) for fts in (without_markers(c.text),)]
    facts, fact_warnings = facts_of_blocks(lines, blocks, rel, day)
    n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    return Prepared(rel, day, n_lines, warnings + fact_warnings + conflict_markers(rel, text), rows,
                    fact_rows(rel, day, facts))


# git's conflict markers at a line start (not `=======`, which is also a Markdown heading underline)
_CONFLICT = re.compile(r"^(<<<<<<<|>>>>>>>)(?: |$)", re.MULTILINE)


def conflict_markers(rel: str, text: str | None) -> list[str]:
    """A warning naming the first conflict marker of an unresolved merge left in a note: its lines
    are indexed like any others, but they are not memory until a person resolves them."""
    m = _CONFLICT.search(text) if text and ("<<<<<<<" in text or ">>>>>>>" in text) else None
    if m is None:
        return []
    line = text.count("\n", 0, m.start()) + 1
    return [f"{rel}:{line}: git conflict markers ({m.group(1)}): an unresolved merge; resolve the conflict "
            "(keep the lines that are true, delete the markers) and commit"]


def _prepare_group(items: list[tuple[str, bytes]], settings: tuple[float, int, int]) -> list[Prepared]:
    return [prepare_file(rel, data, *settings) for rel, data in items]


def _worker_init(parent: int) -> None:
    """A pool worker's initializer. Ctrl-C reaches the whole process group, and only the parent
    acts on it (a worker dying of it would break the pool, and a broken pool can hang the parent).
    A worker dies with its parent: after a kill -9 of zmem, nobody would ever send it work or stop it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked by the parent across the fork
    _die_with(parent)


PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """Linux: the kernel sends SIGKILL when the parent dies. Elsewhere: a thread that watches the parent."""
    if sys.platform.startswith("linux"):
        import ctypes
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
        if armed:
            if os.getppid() != parent:  # it died before prctl: no signal will come
                os._exit(1)
            return
    import threading

    def watch() -> None:
        while os.getppid() == parent:  # reparented once the parent is gone
            time.sleep(0.5)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


POOL_MIN_FILES = 200  # smaller batches (or fewer bytes) are chunked in this process: a pool costs more than it saves
POOL_MIN_BYTES = 2_000_000
# What one worker task holds, and how many tasks per worker are handed out ahead (read, sent, or
# prepared and not yet inserted): memory stays bounded whatever the number of files.
GROUP_FILES = 32
GROUP_BYTES = 1 << 20
AHEAD_PER_WORKER = 2
KEEP_BYTES = 16 << 20  # file contents a catch-up holds from reading them to indexing them; the rest is read again


def _groups(items: Iterable[tuple[str, bytes]]) -> Iterator[list[tuple[str, bytes]]]:
    group: list[tuple[str, bytes]] = []
    size = 0
    for rel, data in items:
        group.append((rel, data))
        size += len(data)
        if len(group) >= GROUP_FILES or size >= GROUP_BYTES:
            yield group
            group, size = [], 0
    if group:
        yield group


def prepare_all(ws: Workspace, items: Iterable[tuple[str, bytes]], files: int, size: int) -> Iterator[Prepared]:
    """Prepared files in order, from (path, content) read as they are needed; files and size (bytes)
    say how many there are. A big batch is chunked by a process pool (one worker per core) that is
    handed only a few groups ahead of the insertions. Close the generator when done with it early
    (an exception, Ctrl-C): that stops the pool at once, cancelling what the workers have not
    started; only the groups in their hands are waited for."""
    c = ws.config
    settings = (c.max_file_mb, c.chunk_tokens, c.chunk_overlap)
    workers = min(os.cpu_count() or 1, 8)
    if files < POOL_MIN_FILES or workers < 2 or size < POOL_MIN_BYTES:
        for rel, data in items:
            yield prepare_file(rel, data, *settings)
        return
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor
    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:
        for rel, data in items:
            yield prepare_file(rel, data, *settings)
        return
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),))
    groups = _groups(items)
    ahead: deque = deque()
    finished = False
    try:
        # the workers are forked by the first submit: with SIGINT held until each has set it to be
        # ignored, a Ctrl-C in between cannot kill one; it is raised once they are started
        with _sigint_held():
            for group in itertools.islice(groups, workers * AHEAD_PER_WORKER):
                ahead.append(pool.submit(_prepare_group, group, settings))
        while ahead:
            group = next(groups, None)
            # a Ctrl-C landing inside the wait for a result can break its lock ("cannot release
            # un-acquired lock" instead of KeyboardInterrupt): held, it is raised right after
            with _sigint_held():
                prepared = ahead.popleft().result()
                if group is not None:
                    ahead.append(pool.submit(_prepare_group, group, settings))
            yield from prepared
        finished = True
    finally:
        # on the way out early, what no worker has started is cancelled: the workers finish the group
        # in hand (milliseconds) and exit. Waited for: the pool's thread, left running, could race the
        # interpreter's exit ("Exception ignored in threading: Bad file descriptor" after Ctrl-C)
        with _sigint_held():
            pool.shutdown(wait=True, cancel_futures=not finished)


@contextmanager
def _sigint_held():
    """SIGINT blocked in this thread meanwhile (the pool's threads, started while it was, block it
    too): a Ctrl-C waits, then raises KeyboardInterrupt here on the way out."""
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def insert_files(conn, files: list[tuple[Prepared, str, int, tuple[int, int, int, int] | None]]) -> None:
    """Insert prepared files' rows, (file, blob, size, stat signature taken before it was read) each,
    in order (the caller holds the transaction). Table by table, several files at once: half the time
    of row by row."""
    file_rows = []
    chunk_rows = []
    fts_rows = []
    chunk_id = _next_id(conn, "main", "chunks")
    for p, blob, size, sig in files:
        mtime, size, ino, ctime = sig if sig is not None else (0, size, 0, 0)
        file_rows.append((p.rel, blob, size, p.day, len(p.rows), p.lines, "\n".join(p.warnings) or None, mtime, ino, ctime))
        for start, end, heading, tokens, text, fts, bi, uni in p.rows:
            chunk_rows.append((chunk_id, p.rel, start, end, heading, p.day, tokens, text))
            fts_rows.append((chunk_id, fts, heading, bi, uni))
            chunk_id += 1
    conn.executemany("INSERT INTO files(path, blob, size, day, chunks, lines, warning, mtime_ns, ino, ctime_ns) "
                     "VALUES(?,?,?,?,?,?,?,?,?,?)", file_rows)
    conn.executemany("INSERT INTO chunks(id, path, start_line, end_line, heading, day, tokens, text) "
                     "VALUES(?,?,?,?,?,?,?,?)", chunk_rows)
    conn.executemany("INSERT INTO chunks_fts(rowid, text, heading, cjk_bi, cjk_uni) VALUES(?, ?, ?, ?, ?)", fts_rows)
    _insert_fact_rows(conn, [row for p, _, _, _ in files for row in p.facts])


def _next_id(conn, schema: str, table: str) -> int:
    """The id SQLite would give the next row of an AUTOINCREMENT table: above every id it ever gave."""
    seq = conn.execute(f"SELECT seq FROM {schema}.sqlite_sequence WHERE name = ?", (table,)).fetchone()
    top = conn.execute(f"SELECT max(id) FROM {schema}.{table}").fetchone()[0]
    return max(seq[0] if seq else 0, top or 0) + 1


def fact_rows(rel: str, day: str | None, facts: list[Fact], *, fts: bool = True) -> list[tuple]:
    """What the index stores of each fact: (the facts row without its id, the full-text columns
    (None without fts), entity keys, relation keys or None)."""
    rows = []
    for f in facts:
        names = "\t".join(f.entities)
        row = (f.fact_id(rel), rel, f.start_line, f.end_line, f.kind, f.confidence, f.text, names, day,
               *(f.event or (None, None)), legacy_fact_id(rel, f.kind, f.text))
        text_columns = (f.text, names, *cjk_columns(f.text + "\n" + names)) if fts else None
        relation = None
        if f.relation:
            subject, predicate, obj = f.relation
            relation = (entity_key(subject), predicate, entity_key(obj))
        rows.append((row, text_columns, [entity_key(name) for name in f.entities], relation))
    return rows


def insert_facts(conn, rel: str, day: str | None, facts: list[Fact], *, schema: str = "main") -> None:
    """Store one file's Retain facts with their entities and relations (and, in the index itself,
    their full-text rows). schema "temp": reflect's view of the facts as HEAD holds them."""
    _insert_fact_rows(conn, fact_rows(rel, day, facts, fts=schema == "main"), schema=schema)


def _insert_fact_rows(conn, rows: list[tuple], *, schema: str = "main") -> None:
    """Insert fact_rows, their ids in order (those one row at a time would get)."""
    if not rows:
        return
    fact_id = _next_id(conn, schema, "facts")
    facts, texts, entities, relations = [], [], [], []
    for row, text_columns, keys, relation in rows:
        facts.append((fact_id, *row))
        if text_columns is not None:
            texts.append((fact_id, *text_columns))
        entities.extend((key, fact_id) for key in keys)
        if relation is not None:
            relations.append((fact_id, *relation))
        fact_id += 1
    conn.executemany(f"INSERT INTO {schema}.facts(id, fid, path, start_line, end_line, kind, confidence, text, names, "
                     "day, event_start, event_end, legacy_fid) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", facts)
    if schema == "main":
        conn.executemany("INSERT INTO facts_fts(rowid, text, names, cjk_bi, cjk_uni) VALUES(?, ?, ?, ?, ?)", texts)
    conn.executemany(f"INSERT OR IGNORE INTO {schema}.fact_entities(entity, fact_id) VALUES(?, ?)", entities)
    conn.executemany(f"INSERT INTO {schema}.relations(fact_id, subject, predicate, object) VALUES(?,?,?,?)", relations)


def rebuild(ws: Workspace, *, lock_timeout: float = 60.0, progress: Progress = None) -> CatchUp:
    """Rebuild from scratch into a temporary file, then swap it in atomically. A failed or
    interrupted rebuild leaves the previous index as it was."""
    t0 = time.perf_counter()
    from zmem.git.repo import open_repo
    repo = open_repo(ws.root)
    ensure_state_dir(ws)
    why = write_denied(ws)
    if why is not None:
        raise IndexUnusable(f"cannot rebuild the index: {why}", hint=access_hint(ws.state_dir))
    tmp = ws.state_dir / f"{REBUILD_PREFIX}{os.getpid()}"
    try:
        with IndexLock(ws, lock_timeout):
            try:
                conn = db.connect(tmp)
                try:
                    migrations.migrate(conn)
                    result = _catch_up(ws, repo, conn, None, progress)
                    _carry_over_cache(conn, ws.index_path)
                    conn.execute("PRAGMA journal_mode = DELETE")  # one self-contained file to copy
                finally:
                    conn.close()
                _swap_in(ws, tmp)
            except (db.Error, OSError, IndexUnusable) as e:
                cause = e.__context__ if isinstance(e, IndexUnusable) else e  # db.connect's, around SQLite's
                if not isinstance(cause, (db.Error, OSError)):
                    raise
                raise _write_failure(ws, cause, "cannot rebuild the index", tmp) from None
    except LockTimeout:
        raise IndexUnusable("another zmem process is updating the index",
                            hint=f"wait for it to finish (see .zmem/lock) and {TRY_AGAIN}")
    finally:
        _unlink_db(tmp)
    result.warnings[:0] = ws.config.warnings
    result.seconds = time.perf_counter() - t0
    return result


def _write_failure(ws: Workspace, e: BaseException, what: str, tmp: Path | None = None) -> IndexUnusable:
    """An error saying why writing the index failed — the file size limit, a full disk, permissions —
    and what helps (never `zmem index --full`, which would fail the same way)."""
    import resource
    d = ws.state_dir
    detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    unchanged = "; the index in use is unchanged" if tmp is not None else ""
    files = [Path(f"{p}{suffix}") for p in (tmp, ws.index_path) if p is not None for suffix in ("", "-wal", "-journal")]
    largest = max((f.stat().st_size for f in files if f.is_file()), default=0)
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY and largest + (1 << 20) >= limit:
        return IndexUnusable(f"{what}: {detail}: a file reached this process's file size limit "
                             f"(ulimit -f: {limit} bytes){unchanged}",
                             hint=f"raise the limit (`ulimit -f unlimited`) and {TRY_AGAIN}")
    try:
        st = os.statvfs(d)
        free = st.f_bavail * st.f_frsize
    except OSError:
        free = None
    full = (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)) or \
        str(getattr(e, "sqlite_errorname", "")).startswith("SQLITE_FULL") or (free is not None and free < (1 << 20))
    if full:
        need = max(largest, ws.index_path.stat().st_size if ws.index_path.is_file() else 0) * 2
        return IndexUnusable(f"{what}: {detail}: the file system holding {d} is full"
                             + (f" ({free / 1e6:.1f} MB free)" if free is not None else "") + unchanged,
                             hint="free some space there" + (f" (a rebuild needs about {need / 1e6:.0f} MB)" if need else "")
                                + f" and {TRY_AGAIN}")
    denied = write_denied(ws)
    if denied is not None or (isinstance(e, OSError) and e.errno in (errno.EACCES, errno.EPERM, errno.EROFS)):
        return IndexUnusable(f"{what}: {detail}" + (f" ({denied})" if denied else "") + unchanged,
                             hint=access_hint(d))
    return IndexUnusable(f"{what}: {detail}{unchanged}",
                         hint=f"check the disk holding {d} (`dmesg`) and `zmem doctor`; if it persists, delete "
                            f"{ws.index_path} (it is derived) and {TRY_AGAIN}")


def _carry_over_cache(conn, live: Path) -> None:
    """Keep the embedding and blame caches across rebuilds: unchanged text is never embedded
    twice, and unchanged files are never blamed twice."""
    if not live.exists():
        return
    try:
        conn.execute("ATTACH DATABASE ? AS old", (str(live),))
    except db.DatabaseError:
        return
    try:
        has = conn.execute("SELECT 1 FROM old.sqlite_master WHERE name = 'embedding_cache'").fetchone()
        if has:
            conn.execute("INSERT OR IGNORE INTO main.embedding_cache(fingerprint, hash, vector, last_used) "
                         "SELECT fingerprint, hash, vector, last_used FROM old.embedding_cache")
        if conn.execute("SELECT 1 FROM old.sqlite_master WHERE name = 'blame_cache'").fetchone():
            conn.execute("INSERT OR IGNORE INTO main.blame_cache SELECT * FROM old.blame_cache")
        if conn.execute("SELECT value FROM old.meta WHERE key = 'history' AND value = 'on'").fetchone() and \
                conn.execute("SELECT 1 FROM old.sqlite_master WHERE name = 'hist_fts'").fetchone():
            # history depends only on git: keep it (the next catch-up checks it against HEAD)
            for table in ("hist_commits", "hist_versions", "hist_blobs", "hist_facts"):
                conn.execute(f"INSERT INTO main.{table} SELECT * FROM old.{table}")
            # hist_fts is written anew below, in the current form (whatever fts_form the old row has)
            conn.execute("INSERT INTO main.hist_chunks(id, blob, start_line, end_line, heading, text, fts_form) "
                         "SELECT id, blob, start_line, end_line, heading, text, ? FROM old.hist_chunks", (FTS_VERSION,))
            conn.executemany("INSERT INTO main.hist_fts(rowid, text, heading, cjk_bi, cjk_uni) VALUES(?,?,?,?,?)",
                             [(cid, text, heading, *cjk_columns(text + "\n" + heading)) for cid, text, heading in
                              conn.execute("SELECT id, text, heading FROM main.hist_chunks").fetchall()])
            conn.execute("INSERT INTO main.meta(key, value) VALUES('history', 'on')")
    except db.DatabaseError:
        pass  # an unreadable old index has nothing to give
    finally:
        conn.execute("DETACH DATABASE old")


def _swap_in(ws: Workspace, tmp: Path) -> None:
    """Copy the new database over the live one in one transaction (the backup API), so open
    readers see either the old index or the new one; replace the file if it is unreadable."""
    live = ws.index_path
    src = db.connect(tmp, readonly=True)
    try:
        try:
            dst = db.connect(live)
            try:
                src.backup(dst)
            finally:
                dst.close()
        except (db.DatabaseError, IndexUnusable):  # unreadable: nobody can be reading it either
            _unlink_db(live)
            os.replace(tmp, live)
    finally:
        src.close()


def _unlink_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass


def spawn_detached_index(ws: Workspace) -> None:
    """Run `zmem index` in its own session so the calling git command returns at once."""
    from zmem.workspace.spawn import spawn_detached
    spawn_detached(ws, ["index", "--quiet"], "index.log")
