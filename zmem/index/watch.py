"""`zmem watch`: keep the index fresh (and optionally commit) while agents write memory files.

Directories are watched, never files: on Linux one inotify descriptor holds a watch per memory
directory (however many files they contain); elsewhere, when inotify is missing or out of watches,
the memory files are stat-polled every second. Changes are debounced, then `catch_up` (stat
snapshot + blob ids) reindexes exactly what changed. No click in here: the CLI renders the events.
"""
from __future__ import annotations

import ctypes
import errno
import os
import select
import signal
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from zmem.index import fsmonitor
from zmem.index.autowatch import query_model_to_preload
from zmem.errors import IndexUnusable, WorkspaceError, ZmemError
from zmem.workspace.snapshot import memory_dirs
from zmem.workspace.core import Workspace

# <sys/inotify.h>
IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = getattr(os, "O_CLOEXEC", 0o2000000)
WATCH_MASK = (IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF
              | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name

POLL_SECONDS = 1.0
COMMIT_ATTEMPTS = 3  # a memory file git keeps refusing is left uncommitted after this many tries
SYNC_BACKOFF_MAX = 600.0  # a failing sync is retried at the interval, then twice as late each time, up to this
MERGE_MARKERS = ("MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD")


class WorkspaceGone(WorkspaceError):
    def __init__(self, root: Path):
        super().__init__(f"the workspace {root} was moved or deleted",
                         hint="zmem watch stopped; if the workspace was moved, start it again there: zmem -C NEW_DIR watch")


class InotifyUnavailable(Exception):
    pass


def _file_stamp(path) -> tuple[int, int, int] | None:
    """(mtime, size, inode) of the file path names, through symlinks (a config.toml kept in a dotfiles
    repository), or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _user_config_stamp() -> tuple[int, int, int] | None:
    from zmem.workspace.config import user_config_path
    return _file_stamp(user_config_path())


def _under(rel: str, tops: list[str]) -> bool:
    return any(rel == t or rel.startswith(t + "/") for t in tops)


def _above(rel: str, tops: list[str]) -> bool:
    return any(t.startswith(rel + "/") for t in tops)


# ----------------------------------------------------------------------------- sources


class InotifySource:
    """One inotify descriptor, one watch per memory directory (the root included)."""

    name = "inotify"

    def __init__(self, ws: Workspace):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self._init1, self._add, self._rm = libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch
        except (OSError, AttributeError) as e:
            raise InotifyUnavailable(f"inotify is not available ({e})") from None
        self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._rm.argtypes = [ctypes.c_int, ctypes.c_int]
        fd = self._init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise InotifyUnavailable(f"inotify_init1 failed: {os.strerror(err)}")
        self.fd = fd
        self.ws = ws
        self.rel_of: dict[int, str] = {}  # wd -> workspace-relative directory ("" is the root)
        self.wd_of: dict[str, int] = {}
        self.root_gone = False
        self.needs_sync = False
        self.cookie_wd: int | None = None  # fsmonitor's cookie directory: not memory, only markers
        self.cookies: set[str] = set()  # cookie files whose creation was read
        try:
            self.sync()
        except BaseException:
            self.close()
            raise

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _watch(self, rel: str) -> int | None:
        path = os.fsencode(str(self.ws.root / rel) if rel else str(self.ws.root))
        wd = self._add(self.fd, path, WATCH_MASK)
        if wd >= 0:
            self.rel_of[wd] = rel
            self.wd_of[rel] = wd
            return wd
        err = ctypes.get_errno()
        if err == errno.ENOSPC:
            raise InotifyUnavailable("inotify ran out of watches (fs.inotify.max_user_watches)")
        if err in (errno.ENOMEM, errno.EMFILE):
            raise InotifyUnavailable(f"inotify_add_watch failed: {os.strerror(err)}")
        if not rel and err in (errno.ENOENT, errno.ENOTDIR):
            self.root_gone = True
        return None  # vanished meanwhile, a symlink, or unreadable: nothing to watch there

    def sync(self) -> None:
        """Watch exactly the root and every directory under the memory roots (after a move,
        an overflow, or a settings change)."""
        self.needs_sync = False
        old = dict(self.wd_of)
        self.rel_of.clear()
        self.wd_of.clear()
        for rel in memory_dirs(self.ws.root, self.ws.memory_roots()):
            self._watch(rel)
        keep = set(self.wd_of.values())
        for wd in set(old.values()) - keep:
            self._rm(self.fd, wd)

    def count(self) -> int:
        return len(self.wd_of)

    def watch_cookies(self, path: str) -> bool:
        """Watch fsmonitor's cookie directory as well (its events are markers, never changes)."""
        wd = self._add(self.fd, os.fsencode(path), IN_CREATE | IN_ONLYDIR | IN_DONT_FOLLOW)
        self.cookie_wd = wd if wd >= 0 else None
        return self.cookie_wd is not None

    def read_until(self, cookie: str, timeout: float) -> tuple[set[str], bool]:
        """Read events until the cookie's creation: (the paths they name, whether it came in time).
        Every change made before the cookie was created is then among the paths."""
        out: set[str] = set()
        end = time.monotonic() + timeout
        while True:
            out |= self.read()
            if cookie in self.cookies:
                self.cookies.discard(cookie)
                return out, True
            left = end - time.monotonic()
            if left <= 0:
                return out, False
            try:
                select.select([self.fd], [], [], left)
            except InterruptedError:
                pass

    def read_to_now(self, server: fsmonitor.VouchServer) -> tuple[set[str], bool]:
        """Every event up to now, for a fresh process's question: a cookie file is created in the
        server's directory and events are read until its own (read_until's answer)."""
        cookie = server.new_cookie()
        try:
            return self.read_until(cookie, fsmonitor.ASK_TIMEOUT)
        finally:
            server.drop_cookie(cookie)

    def watches_all(self, conn) -> bool:
        """Whether every directory holding an indexed file is watched (a symlinked or unreadable one
        is not: then nobody may vouch for it)."""
        return {rel.rpartition("/")[0] for (rel,) in conn.execute("SELECT path FROM files")} <= set(self.wd_of)

    def _add_tree(self, rel: str) -> None:
        for sub in memory_dirs(self.ws.root, [rel])[1:]:
            if sub not in self.wd_of:
                self._watch(sub)

    def read(self) -> set[str]:
        """Drain pending events: the workspace-relative paths they name (directories too)."""
        out: set[str] = set()
        tops = self.ws.memory_roots()
        while True:
            try:
                data = os.read(self.fd, 256 * 1024)
            except BlockingIOError:
                return out
            except InterruptedError:
                continue
            if not data:
                return out
            pos = 0
            while pos + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
                name = os.fsdecode(data[pos + _EVENT.size:pos + _EVENT.size + length].rstrip(b"\0"))
                pos += _EVENT.size + length
                if mask & IN_Q_OVERFLOW:
                    self.needs_sync = True
                    out.add("")
                    continue
                if wd == self.cookie_wd:
                    if mask & IN_CREATE:
                        self.cookies.add(name)
                    continue
                rel = self.rel_of.get(wd)
                if rel is None:
                    continue
                if mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT) and not name:
                    if rel == "":
                        self.root_gone = True
                    if mask & IN_MOVE_SELF:
                        self.needs_sync = True  # a directory moved inside the tree keeps its watch
                    if mask & IN_IGNORED and self.wd_of.get(rel) == wd:
                        del self.wd_of[rel], self.rel_of[wd]
                    continue
                child = f"{rel}/{name}" if rel else name
                if mask & IN_ISDIR:
                    if mask & (IN_CREATE | IN_MOVED_TO):
                        if _under(child, tops):
                            self._add_tree(child)
                        elif _above(child, tops):
                            self.needs_sync = True  # e.g. "projects" of extra path projects/notes
                    elif mask & IN_MOVED_FROM:
                        self.needs_sync = True
                    if _under(child, tops) or _above(child, tops):
                        out.add(child)
                elif self.ws.is_memory_path(child) or child == "zmem.toml" or name == ".gitignore":
                    out.add(child)  # not editors' temporary files, not other files


class PollSource:
    """Stat every memory file once a second (no descriptors held between polls)."""

    name = "polling"

    def __init__(self, ws: Workspace):
        self.ws = ws
        self.root_gone = False
        self.needs_sync = False
        self.seen = self._scan()

    def fileno(self) -> int | None:
        return None

    def close(self) -> None:
        pass

    def sync(self) -> None:
        self.needs_sync = False

    def count(self) -> int:
        return len(self.seen)

    def _scan(self) -> dict[str, tuple[int, int, int]]:
        out = {}
        root = self.ws.root
        for rel in memory_dirs(root, self.ws.memory_roots()):
            try:
                with os.scandir(root / rel if rel else root) as it:
                    for entry in it:
                        child = f"{rel}/{entry.name}" if rel else entry.name
                        try:
                            if entry.is_file(follow_symlinks=False) and (self.ws.is_memory_path(child)
                                                                         or entry.name == ".gitignore"):
                                st = entry.stat(follow_symlinks=False)
                                out[child] = (st.st_mtime_ns, st.st_size, st.st_ino)
                        except OSError:
                            continue
            except OSError:
                continue
        return out

    def read(self) -> set[str]:
        now = self._scan()
        changed = {rel for rel in now.keys() | self.seen.keys() if now.get(rel) != self.seen.get(rel)}
        self.seen = now
        return changed


# ----------------------------------------------------------------------------- the watcher


@dataclass
class WatchEvent:
    event: str  # watching | indexed | committed | synced | error
    files: list[str] = field(default_factory=list)
    commit: str | None = None
    seconds: float = 0.0
    message: str | None = None
    warnings: list[str] = field(default_factory=list)
    backend: str | None = None
    watched: int | None = None

    def to_json(self) -> dict:
        out = {"event": self.event, "files": self.files, "commit": self.commit, "seconds": round(self.seconds, 4)}
        if self.message is not None:
            out["message"] = self.message
        if self.warnings:
            out["warnings"] = self.warnings
        if self.backend is not None:
            out["backend"], out["watched"] = self.backend, self.watched
        return out


def _commit_message(files: list[str]) -> str:
    subject = f"zmem watch: {files[0]}" if len(files) == 1 else f"zmem watch: {len(files)} memory files"
    return subject + "\n\n" + "\n".join(files) + "\n"


def merge_in_progress(git_dir: Path) -> str | None:
    """The marker that shows a merge, rebase, cherry-pick or revert in progress, else None."""
    for marker in MERGE_MARKERS:
        if (git_dir / marker).exists():
            return marker
    return None


class Settling:
    """When changes call for a catch-up: once they settled for `debounce` seconds, or `max_wait` after
    the first one (a steady stream of writes is still indexed that often). `zmem watch`'s loop and a
    long-lived Memory's watch thread (`zmem mcp`) both keep one."""

    def __init__(self, debounce: float):
        self.debounce = debounce
        self.max_wait = max(10.0, 4 * debounce)
        self.first: float | None = None  # the first change not caught up with yet
        self.last: float | None = None  # the latest change (kept after the catch-up: commits wait for quiet too)

    def changed(self, now: float) -> None:
        if self.first is None:
            self.first = now
        self.last = now

    def wait(self, now: float) -> float | None:
        """Seconds until the catch-up is due (0: now), None when nothing is waiting for one."""
        if self.first is None:
            return None
        return max(0.0, min(self.last + self.debounce, self.first + self.max_wait) - now)

    def due(self, now: float) -> bool:
        return self.first is not None and (now - self.last >= self.debounce or now - self.first >= self.max_wait)

    def caught_up(self) -> None:
        self.first = None


def serve_fresh_processes(ws: Workspace, source: InotifySource, embedder_for: Callable[[str], object],
                          about: dict) -> fsmonitor.VouchServer | None:
    """The socket fresh processes ask (vouching, query vectors, keyword searches), its cookies watched
    by source; None when another watcher answers already or it cannot be made (they do the sweep).
    An automatic watcher serving already is stopped (autowatch.take_over) unless this one is automatic too.
    about: what this process says of itself to "who" (command, auto, idle_exit; the start time is added)."""
    import datetime as dt
    from zmem.index.autowatch import take_over
    about = {**about, "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    try:
        server = fsmonitor.VouchServer(ws.state_dir, embedder_for=embedder_for, about=about)
    except OSError:
        if about.get("auto") or not take_over(ws, by=f"zmem {about.get('command', 'watch')}"):
            return None
        try:
            server = fsmonitor.VouchServer(ws.state_dir, embedder_for=embedder_for, about=about)
        except OSError:  # another process took the socket meanwhile
            return None
    if not source.watch_cookies(server.cookie_dir):
        server.close()
        return None
    server.serve_searches(ws.index_path)
    return server


class Watcher:
    """Debounce changes, catch up, and with commit=True commit the changed memory files after a
    longer quiet period. `clock` is injectable (monotonic seconds) so the timing logic is testable.
    idle_exit: stop after that many seconds without a question from another zmem process (fsmonitor).
    unless_watched: stop at once when another process serves this workspace already. auto: the watcher
    a reading command starts (zmem.index.autowatch): unless_watched, and it stops as soon as it cannot
    serve (its socket removed or taken over, inotify unavailable: it never polls)."""

    def __init__(self, ws: Workspace, *, debounce: float = 1.5, commit: bool = False, commit_after: float = 30.0,
                 poll: bool = False, max_events: int | None = None, exit_after: float | None = None,
                 emit: Callable[[WatchEvent], None] = lambda e: None,
                 notice: Callable[[str], None] = lambda s: None,
                 clock: Callable[[], float] = time.monotonic,
                 sync_every: float | None = None, syncer: Callable[[], object] | None = None,
                 idle_exit: float | None = None, unless_watched: bool = False, auto: bool = False):
        self.ws = ws
        self.idle_exit = idle_exit
        self.auto = auto
        self.unless_watched = unless_watched or auto
        self.finished: str | None = None  # why the watcher stopped by itself (idle, another serves, ...)
        self.commit = commit
        self.commit_after = commit_after
        self.force_poll = poll
        self.max_events = max_events
        self.exit_after = exit_after
        self.emit = emit
        self.notice = notice  # warnings for stderr (always shown)
        self.clock = clock
        # --sync: syncer() runs `zmem sync` (returns a sync.SyncResult, raises ZmemError); the CLI
        # passes it in, so this module never imports the sync above it
        self.sync_every = sync_every
        self.syncer = syncer if sync_every else None
        self.sync_at = clock() + (sync_every or 0.0)
        self.sync_failures = 0
        self.settling = Settling(debounce)  # changes not indexed yet
        self.pending: set[str] = set()  # memory files changed since the last commit
        self.failed_commits: dict[str, int] = {}  # pending file -> failed commit attempts since it changed
        self.commit_retry_at = 0.0
        self.blocked: str | None = None  # why the last commit attempt did not happen
        self.warned: set[str] = set()  # the catch-ups' warnings said so far
        self.indexed_with: str | None = None  # the settings' fingerprint (catchup.fingerprint) of its last catch-up
        self.events = 0
        self.stop_signal: int | None = None
        self.source = None
        self.vouch: str | None = None  # the index snapshot no event has come in since (fsmonitor)
        self.server = None  # fsmonitor.VouchServer: fresh processes ask it instead of stat-ing every file
        self.query_providers = None  # (workspace, embedding.Providers) that embed fresh processes' queries
        self.user_settings = _user_config_stamp()  # the user's config.toml the settings were read with
        self.code = _file_stamp(__file__)  # this module's file: a new one means zmem was upgraded under this process
        root = ws.root
        st = os.stat(root)
        self.identity = (st.st_dev, st.st_ino)
        self.root = root
        self.started = time.monotonic()

    # -- timing: changed() records, due() says when, tick() acts (tests drive it with a fake clock)
    def changed(self, paths: set[str], now: float) -> None:
        if not paths:
            return
        self.vouch = None
        if "zmem.toml" in paths:
            self._reload_config()
        if self.commit:
            self._add_pending({p for p in paths if self.ws.is_memory_path(p)})
        self.settling.changed(now)

    def due(self, now: float) -> float | None:
        """Seconds until the next thing to do (0: now), or None when idle."""
        waits = []
        if (index_wait := self.settling.wait(now)) is not None:
            waits.append(index_wait)
        if self.commit and self.pending:
            quiet = (self.settling.last or 0.0) + self.commit_after
            waits.append(max(quiet, self.commit_retry_at) - now)
        if self.syncer is not None:
            waits.append(self.sync_at - now)
        return max(0.0, min(waits)) if waits else None

    def tick(self, now: float) -> None:
        """Do whatever is due: index after the debounce, then commit after the quiet period."""
        commit_due = (self.commit and self.pending and now - (self.settling.last or 0.0) >= self.commit_after
                      and now >= self.commit_retry_at)
        if self.settling.first is not None and (commit_due or self.settling.due(now)):
            self.index()
        if commit_due and self.settling.first is None and self.stop_signal is None:
            self.commit_pending()  # only once the index has seen every change (never after a stop)
        if self.syncer is not None and now >= self.sync_at and self.settling.first is None and self.stop_signal is None:
            self.sync_now()

    # -- actions
    def index(self, startup: bool = False) -> None:
        from zmem.index.catchup import LockUnavailable, catch_up, open_index
        from zmem.store import db
        self.vouch = None
        if _user_config_stamp() != self.user_settings:  # not watched: the user's settings may hold extra_paths
            self._reload_config()
        if self.source is not None and self.source.needs_sync:
            self._sync()
        self.settling.caught_up()
        try:
            conn = open_index(self.ws)
            try:
                if self.auto and self._other_settings(conn):
                    self._finish("another process brought the index up to date with other settings than this "
                                 "watcher's (a config.toml of another environment): it would undo that at every change")
                    return
                result = catch_up(self.ws, conn=conn)
                if not (result.stale or result.deferred):
                    self.vouch = self._vouchable(conn)
                    self.indexed_with = db.get_meta(conn, "fingerprint")
            finally:
                conn.close()
        except ZmemError as e:
            self._check_root()
            if startup:  # not a git repository, a broken .zmem, …: fail before "watching", like any command
                raise
            self._error(e.message)
            if self.auto and isinstance(e, IndexUnusable) and not isinstance(e, LockUnavailable):
                # (a newer zmem converted the index, .zmem made unusable): it could never vouch again, and
                # its "no" answers would keep it alive and keep a watcher that can serve from starting
                self._finish(e.message)
                return
            self._retry_index()
            return
        except Exception as e:  # noqa: BLE001 - the database or a file vanished mid-way
            self._check_root()
            self._error(f"indexing failed: {type(e).__name__}: {e}")
            self._retry_index()
            return
        for w in result.warnings:
            if w not in self.warned:  # once: a watcher serving for days would say it at every catch-up
                self.warned.add(w)
                self.notice(w)
        if result.stale:
            self._retry_index()
            return
        files = sorted(set(result.updated) | set(result.removed))
        if self.commit and not startup:  # --commit commits what changed while watching
            self._add_pending({p for p in files if self.ws.is_memory_path(p)})
        elif self.commit:  # … and the memory files already uncommitted at start (with the first quiet period)
            self.pending |= self._dirty_at_start()
        if files:
            event = WatchEvent("indexed", files, seconds=result.seconds, warnings=result.warnings)
            self.emit(event) if startup else self._count(event)  # --max-events counts changes seen while watching

    def _other_settings(self, conn) -> bool:
        """Whether the index was brought up to date since this watcher's last catch-up with settings other
        than this watcher's (its fingerprint neither the one it left nor this watcher's own)."""
        from zmem.index.catchup import fingerprint
        from zmem.store import db
        now = db.get_meta(conn, "fingerprint")
        return self.indexed_with is not None and now not in (self.indexed_with, fingerprint(self.ws))

    def _vouchable(self, conn) -> str | None:
        """The snapshot a complete catch-up left, when inotify watches every directory holding an
        indexed file (a symlinked or unreadable one is not watched: then no vouching)."""
        from zmem.store import db
        source = self.source
        if not isinstance(source, InotifySource) or source.needs_sync or source.root_gone:
            return None
        return db.get_meta(conn, "snapshot_ns") if source.watches_all(conn) else None

    def answer(self, snapshot: str) -> bool:
        """A fresh process asks whether nothing changed since the index snapshot it read: every
        event up to now is read first (up to a cookie file's), then yes only for the snapshot the
        last complete catch-up left with no event since."""
        source = self.source
        if not isinstance(source, InotifySource) or source.cookie_wd is None:
            return False
        try:
            paths, seen = source.read_to_now(self.server)
        except OSError:  # no cookie could be made, or inotify failed: the asking process sweeps
            return False
        self.changed(paths, self.clock())
        if not seen or source.needs_sync or source.root_gone or self.vouch is None:
            return False
        if self.vouch != snapshot and self.settling.first is None:
            # another process moved the snapshot (a commit's hook, a recall recording new stats):
            # a catch-up here checks it, and the next question can be vouched for
            self.changed({""}, self.clock())
        return self.vouch == snapshot

    def _serve(self) -> None:
        """Start answering fresh processes (inotify only; another watcher may already answer)."""
        if isinstance(self.source, InotifySource) and self.server is None:
            self.server = serve_fresh_processes(self.ws, self.source, self.query_embedder,
                                                {"command": "watch", "auto": self.auto, "idle_exit": self.idle_exit})

    def _preload_query_model(self) -> None:
        """Start loading the query model (query_model_to_preload) on the query embedding thread. After
        "watching": the start is not delayed."""
        if self.server is None or self.server.queries is None:
            return
        from zmem.index.catchup import open_index
        from zmem.store import db
        try:
            conn = open_index(self.ws)
            try:
                fingerprint = query_model_to_preload(self.ws, conn)
            finally:
                conn.close()
        except (ZmemError, OSError, db.Error):  # the driver's errors (pysqlite3's are not sqlite3's)
            return
        if fingerprint:
            self.server.queries.preload(fingerprint)

    def query_embedder(self, fingerprint: str):
        """(On fsmonitor's query embedding thread.) The provider, built from this workspace's settings,
        whose vectors have this fingerprint, kept with its model once loaded; None when there is none.
        Built again when it does not match (the settings were reloaded, or the model files replaced)."""
        from zmem.index.embedding import providers
        ws, kept = self.ws, self.query_providers
        if kept is None or kept[0] is not ws or kept[1].for_fingerprint(fingerprint) is None:
            fresh = providers(ws)
            if kept is None or kept[0] is not ws or fresh.for_fingerprint(fingerprint) is not None:
                kept = self.query_providers = (ws, fresh)  # a model loaded for the old settings is let go
        return kept[1].for_fingerprint(fingerprint)

    def _dirty_at_start(self) -> set[str]:
        from zmem.git.repo import open_repo
        try:
            return {p for p in open_repo(self.ws.root).dirty_paths() if self.ws.is_memory_path(p)}
        except ZmemError as e:
            self.notice(f"cannot tell which memory files are uncommitted: {e.message}")
            return set()

    def _retry_index(self) -> None:
        self.settling.changed(self.clock())

    def _add_pending(self, paths: set[str]) -> None:
        """Files changed again: commit them (again), with a fresh count of attempts."""
        self.pending |= paths
        for p in paths:
            self.failed_commits.pop(p, None)

    def commit_pending(self) -> None:
        from zmem.git.commit import ALREADY_COMMITTED, commit_paths
        from zmem.git.repo import open_repo
        t0 = time.perf_counter()
        try:
            repo = open_repo(self.ws.root)
            dirty = repo.dirty_paths()
        except ZmemError as e:
            self._blocked(e.message, retry=self.commit_after)
            return
        # committed meanwhile by someone else, or changed back: nothing left to commit there
        for p in self.pending - dirty:
            self.pending.discard(p)
            self.failed_commits.pop(p, None)
        files = sorted(p for p in self.pending if self.ws.is_memory_path(p))
        if not files:
            self.pending.clear()
            self.blocked = None
            return
        marker = merge_in_progress(Path(repo.git_dir()))
        if marker:
            self._blocked(f"not committing the changed memory files: a merge or rebase is in progress "
                          f"({marker} in the git directory); retrying until it is over",
                          retry=min(self.commit_after, 5.0), files=files)
            return
        try:
            sha, problem = commit_paths(self.ws.root, files, _commit_message(files))
        except ZmemError as e:  # git gone from PATH meanwhile: said once, tried again later
            self._blocked(f"not committing the changed memory files: {e.message}", retry=self.commit_after,
                          files=files)
            return
        # ALREADY_COMMITTED: someone else (`zmem append`, a hook) committed exactly these contents
        # meanwhile; like the files committed before this round, nothing to report
        already = files if sha and problem == ALREADY_COMMITTED else []
        commits: list[tuple[str, list[str]]] = [(sha, files)] if sha and not already else []
        failed = {} if sha else {f: problem for f in files}
        if sha is None and len(files) > 1 and "index.lock" not in (problem or ""):
            # one file git refuses must not hold back the others: then one commit per file
            # (not when another git held the index all along: every file would wait for it again)
            commits, failed = [], {}
            for f in files:
                try:
                    one, why = commit_paths(self.ws.root, [f], _commit_message([f]))
                except ZmemError as e:
                    one, why = None, e.message
                if one and why == ALREADY_COMMITTED:
                    already.append(f)
                elif one:
                    commits.append((one, [f]))
                else:
                    failed[f] = why
        for f in already:
            self.pending.discard(f)
            self.failed_commits.pop(f, None)
        for one, group in commits:
            self.pending.difference_update(group)
            for f in group:
                self.failed_commits.pop(f, None)
            self._count(WatchEvent("committed", group, commit=one, seconds=time.perf_counter() - t0))
        if commits:
            from zmem.index.catchup import catch_up
            try:
                catch_up(self.ws)  # record the new HEAD (blobs are unchanged: nothing is reindexed)
            except Exception:  # noqa: BLE001 - the next change or reader catches up anyway
                pass
        if not failed:
            self.pending.clear()
            self.blocked = None
            self.commit_retry_at = 0.0
            return
        why = next(iter(failed.values()))
        given_up = []
        for f in sorted(failed):
            self.failed_commits[f] = self.failed_commits.get(f, 0) + 1
            if self.failed_commits[f] >= COMMIT_ATTEMPTS:  # never wedge the watcher on one file
                given_up.append(f)
                self.pending.discard(f)
                del self.failed_commits[f]
        if given_up:
            self._error(f"gave up committing {', '.join(given_up)} after {COMMIT_ATTEMPTS} attempts "
                        f"(left uncommitted until changed again): {why}", files=given_up)
        if self.pending:
            self._blocked(f"memory files not committed: {why}", retry=self.commit_after, files=sorted(failed))
        else:
            self.blocked = None
            self.commit_retry_at = 0.0

    def sync_now(self) -> None:
        """One `zmem sync` (it commits the changed memory files itself). A failure is said on stderr,
        as an error event and in .zmem/watch.log, and retried later (backoff), never fatal."""
        t0 = time.perf_counter()
        try:
            res = self.syncer()
        except ZmemError as e:
            self._sync_failed(e.message)
            return
        except Exception as e:  # noqa: BLE001 - whatever went wrong, the watcher keeps watching
            self._sync_failed(f"{type(e).__name__}: {e}")
            return
        if self.sync_failures:
            self._log(f"sync works again after {self.sync_failures} failed attempts")
        self.sync_failures = 0
        self.sync_at = self.clock() + self.sync_every
        for w in res.warnings:
            self.notice(w)
        self.pending.difference_update(res.committed_files)
        came = res.incoming
        self.emit(WatchEvent("synced", list(came["files"]), commit=res.head, seconds=time.perf_counter() - t0,
                             message=f"{came['commits']} commits in ({res.merge}), "
                                     f"{res.outgoing['commits'] if res.pushed else 0} out",
                             warnings=list(res.warnings)))

    def _sync_failed(self, why: str) -> None:
        self.sync_failures += 1
        delay = min(self.sync_every * 2 ** (self.sync_failures - 1), max(self.sync_every, SYNC_BACKOFF_MAX))
        self.sync_at = self.clock() + delay
        message = f"sync failed (attempt {self.sync_failures}; retrying in {delay:g} s): {why}"
        self._log(message)
        self._error(message)

    def _log(self, message: str) -> None:
        """A line in .zmem/watch.log (what a watch running unattended did wrong, for later)."""
        import datetime as dt
        try:
            self.ws.state_dir.mkdir(exist_ok=True)
            with open(self.ws.state_dir / "watch.log", "a", encoding="utf-8") as f:
                f.write(f"{dt.datetime.now().isoformat(timespec='seconds')} {message}\n")
        except OSError:
            pass

    def _blocked(self, why: str, retry: float, files=None) -> None:
        self.commit_retry_at = self.clock() + retry
        if why != self.blocked:  # say it once per cause, not at every retry
            self.blocked = why
            self._error(why, files=files if files is not None else sorted(self.pending))

    def _error(self, message: str, files=None) -> None:
        self.notice(message)
        self.emit(WatchEvent("error", list(files or []), message=message))

    def _count(self, event: WatchEvent) -> None:
        self.emit(event)
        self.events += 1

    def _reload_config(self) -> None:
        from zmem.workspace.config import load_config
        self.user_settings = _user_config_stamp()
        try:
            self.ws = Workspace(root=self.ws.root, config=load_config(self.ws.root))
        except ZmemError as e:
            self._error(f"{e.message}; keeping the previous settings")
            return
        if self.source is not None:
            self.source.ws = self.ws
            self.source.needs_sync = True

    def _finish(self, why: str) -> None:
        """Stop at the next turn of the loop, with exit status 0, saying why (and in .zmem/watch.log when
        started automatically: nobody reads its stderr but that log)."""
        if self.finished is None:
            self.finished = why
            if self.auto:
                self._log(f"automatic watcher (pid {os.getpid()}) exits: {why}")

    def _sync(self) -> None:
        try:
            self.source.sync()
        except InotifyUnavailable as e:
            self._fall_back(str(e))

    def _fall_back(self, why: str) -> None:
        self.vouch = None
        if self.server is not None:
            self.server.close()
            self.server = None
        if self.source is not None:
            self.source.close()
        if self.auto:  # a poller never serves fresh processes: an automatic watcher has no use then
            self.source = None
            self._finish(f"{why}; an automatic watcher does not poll")
            return
        self.notice(f"{why}; polling the memory files every {POLL_SECONDS:g} s instead")
        self.source = PollSource(self.ws)

    def _check_root(self) -> None:
        try:
            st = os.stat(self.root)
            gone = (st.st_dev, st.st_ino) != self.identity or not os.path.isdir(self.root)
        except OSError:
            gone = True
        if gone or (self.source is not None and self.source.root_gone):
            raise WorkspaceGone(self.root)

    # -- the loop
    def run(self) -> int:
        """Watch until a signal, max_events or exit_after. Returns the exit status (130 after
        SIGINT). Raises WorkspaceGone when the workspace is moved or deleted. An automatic watcher's
        every exit leaves its reason as the last line it writes to .zmem/watch.log."""
        try:
            code = self._run()
        except BaseException as e:
            if self.auto and self.finished is None:
                self.finished = _why_raised(e)
                self._log(f"automatic watcher (pid {os.getpid()}) exits: {self.finished}")
            raise
        if self.auto and self.finished is None:  # (_finish logged its reason already)
            if self.stop_signal is not None:
                why = f"stopped by {signal.Signals(self.stop_signal).name}"
            elif self.max_events is not None and self.events >= self.max_events:
                why = f"{self.events} events (--max-events)"
            else:
                why = "--exit-after reached"
            self._finish(why)
        return code

    def _run(self) -> int:
        if self.commit:  # before watching, like any command: not at the first commit, maybe hours later
            import shutil
            from zmem.git.gitcmd import git_missing
            if shutil.which("git") is None:
                raise git_missing(hint="install git or fix PATH, or watch without --commit (then nothing is committed)")
        start = self.clock()
        if self.unless_watched and fsmonitor.vouched_by_someone(os.path.join(self.ws.state_dir, fsmonitor.SOCKET)):
            self._finish("another process serves this workspace already")
            return 0
        if self.auto and (self.force_poll or os.uname().sysname != "Linux"):
            raise ZmemError("an automatic watcher needs inotify (Linux)", hint="run `zmem watch` without --auto: "
                            "it polls the memory files instead, but other zmem processes are not served by a poller")
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        restore = self._install_signals(wake_w)
        try:
            if self.force_poll or not hasattr(select, "poll") or os.uname().sysname != "Linux":
                self.source = PollSource(self.ws)
                if not self.force_poll:
                    self.notice(f"inotify is not available on this system; polling the memory files every "
                                f"{POLL_SECONDS:g} s instead")
            else:
                try:
                    self.source = InotifySource(self.ws)
                except InotifyUnavailable as e:
                    self.source = None
                    self._fall_back(str(e))
            self._check_root()
            if self.source is None:  # (auto) inotify out of watches or descriptors
                raise ZmemError(f"the automatic watcher cannot start: {self.finished}",
                                hint="raise fs.inotify.max_user_watches / max_user_instances (sysctl), or run "
                                     "`zmem watch`, which polls instead (a poller serves no other zmem process)")
            self._serve()
            if self.server is None and self.unless_watched and isinstance(self.source, InotifySource):
                if fsmonitor.vouched_by_someone(os.path.join(self.ws.state_dir, fsmonitor.SOCKET)):
                    self._finish("another process serves this workspace already")
                    return 0
                if self.auto:
                    raise ZmemError(f"the automatic watcher cannot serve other zmem processes: no socket could be "
                                    f"made in {self.ws.state_dir}", hint="run `zmem doctor`")
            if self.auto:
                self._log(f"automatic watcher (pid {os.getpid()}) started; exits after {self.idle_exit:g} s "
                          "without a question" if self.idle_exit else
                          f"automatic watcher (pid {os.getpid()}) started")
            self.settling.changed(self.clock())
            self.index(startup=True)  # catch up with what changed before the watches were in place
            # ready: the watches are in place and the index is up to date
            self.emit(WatchEvent("watching", seconds=self.clock() - start, backend=self.source.name,
                                 watched=self.source.count()))
            self._preload_query_model()
            next_poll = self.clock() + POLL_SECONDS
            while self.stop_signal is None and self.finished is None and not self._done(start):
                now = self.clock()
                timeout = max(0.0, next_poll - now)  # the root is checked (and polled) every second
                if self.idle_exit is not None:
                    timeout = min(timeout, max(0.0, self._idle_until() - time.monotonic()))
                wait = self.due(now)
                if wait is not None:
                    timeout = min(timeout, wait)
                if self.exit_after is not None:
                    timeout = min(timeout, max(0.0, start + self.exit_after - now))
                ready, asked = self._wait(wake_r, timeout)
                if self.stop_signal is not None:
                    break
                if asked:
                    self.server.serve(self.answer)
                self._check_root()
                polling = isinstance(self.source, PollSource)
                if ready or (polling and self.clock() >= next_poll):
                    try:
                        paths = self.source.read()
                    except InotifyUnavailable as e:
                        self._fall_back(str(e))
                        paths = {""}
                    self._check_root()
                    self.changed(paths, self.clock())
                if self.clock() >= next_poll:
                    next_poll = self.clock() + POLL_SECONDS
                    self._check_serving()
                self.tick(self.clock())
                self._check_root()
                if self.idle_exit is not None and time.monotonic() >= self._idle_until():
                    self._finish(f"no question from another zmem process for {self.idle_exit:g} s")
        finally:
            if self.server is not None:
                self.server.close()
                self.server = None
            if self.source is not None:
                self.source.close()
            restore()
            os.close(wake_r)
            os.close(wake_w)
        if self.stop_signal == signal.SIGINT:
            return 130
        return 0

    def _idle_until(self) -> float:
        """When the watcher is idle for idle_exit seconds (monotonic), questions answered so far."""
        return (self.server.last_question if self.server is not None else self.started) + self.idle_exit

    def _check_serving(self) -> None:
        """(The automatic watcher.) Stop once its socket was removed (`rm -rf .zmem`) or taken over, or zmem
        was upgraded under it."""
        if self.auto and (self.server is None or not self.server.still_bound()):
            self._finish("its socket was removed or taken over")
        elif self.auto and _file_stamp(__file__) != self.code:
            # its answers (keyword searches, query vectors) are the old version's; the next reading
            # command starts one of the new version
            self._finish("zmem was upgraded or reinstalled")

    def _done(self, start: float) -> bool:
        if self.max_events is not None and self.events >= self.max_events:
            return True
        return self.exit_after is not None and self.clock() - start >= self.exit_after

    def _wait(self, wake_r: int, timeout: float) -> tuple[bool, bool]:
        """Sleep until the source has events, a fresh process asks (fsmonitor), a signal arrives,
        or timeout. (source ready, question waiting)."""
        fds = [wake_r]
        src = self.source.fileno() if self.source is not None else None
        if src is not None:
            fds.append(src)
        server = self.server.fileno() if self.server is not None else None
        if server is not None:
            fds.append(server)
        try:
            readable, _, _ = select.select(fds, [], [], timeout)
        except InterruptedError:
            return False, False
        if wake_r in readable:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        return src is not None and src in readable, server is not None and server in readable

    def _install_signals(self, wake_w: int):
        """SIGINT/SIGTERM only set a flag (the loop wakes through the pipe), so a commit or an
        index transaction is never cut half-way."""
        import threading
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(signum, _frame):
            if self.stop_signal is None:
                self.stop_signal = signum
            elif signum == signal.SIGINT:
                raise KeyboardInterrupt  # a second Ctrl-C: stop now (an index transaction rolls back)

        old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        old_wakeup = signal.set_wakeup_fd(wake_w)

        def restore():
            signal.set_wakeup_fd(old_wakeup)
            for s, h in old.items():
                signal.signal(s, h)
        return restore


def _why_raised(e: BaseException) -> str:
    """An automatic watcher's exit reason when an exception ends it, for watch.log."""
    if isinstance(e, KeyboardInterrupt):
        return "interrupted (a second SIGINT)"
    if isinstance(e, ZmemError):
        return e.message
    if isinstance(e, SystemExit):
        return f"exit status {e.code}"
    return f"an unexpected error: {type(e).__name__}: {e}"
