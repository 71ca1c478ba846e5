"""A watcher started on demand (git's fsmonitor--daemon model): a reading command whose freshness
check found nobody serving the workspace (zmem.index.fsmonitor) starts `zmem watch --auto` in the
background when a watcher pays for itself there, and goes on with its own sweep. From then on fresh
processes are vouched for (no per-file stat sweep), get their keyword searches answered from the
watcher's lists, and their queries embedded by its preloaded model; it exits when idle (`watch.idle_exit`).

It pays when the index holds at least `watch.auto_min_files` memory files (the sweep grows with
them: ~34 ms CPU at 10,000 files, ~136 ms at 40,000), or when hybrid recall would embed the query with
an in-process model (~350 ms per fresh recall without a watcher, ~180 ms with one), whatever the size.
Never where a watcher could not serve (no inotify, a socket path too long, a state directory that
cannot be written); at most one start at a time, and not again within RETRY seconds of the last
attempt (a watcher that cannot start is not restarted by every command).
"""
from __future__ import annotations

import os
import sys
import time

from zmem.index import fsmonitor
from zmem.workspace.core import Workspace

STAMP = "watch-auto"  # in the state directory: locked while a command starts a watcher; its mtime is the last attempt
RETRY = 60.0  # seconds after an attempt before another command may start a watcher again
ENV = "ZMEM_WATCH_AUTO"  # "0" (or false, no, off): never, whatever the settings say
LOG = "watch.log"


def turned_off() -> bool:
    return os.environ.get(ENV, "").strip().lower() in ("0", "false", "no", "off")


def start_if_it_pays(ws: Workspace, conn) -> bool:
    """(A reading command whose freshness check found nobody serving the workspace.) Start a
    watcher in the background when it pays (see the module's docstring); whether one was started.
    Costs nothing measurable: a count of the index's files, a meta value, and when it qualifies a
    lock file; the start itself is a detached process."""
    if not ws.config.watch_auto or turned_off():  # before any query
        return False
    try:
        return pays(ws, conn, conn.execute("SELECT count(*) FROM files").fetchone()[0])[0] and _start_once(ws)
    except Exception:  # noqa: BLE001 - an accelerator: whatever fails here, the command goes on as without it
        return False


def pays(ws: Workspace, conn, files: int) -> tuple[bool, str]:
    """Whether a reading command that finds nobody serving the workspace (whose index holds files memory
    files) starts a watcher, and why, as `zmem status` says it (without watch.auto_max: _start_once
    counts the running ones only when it is about to start one)."""
    cfg = ws.config
    if turned_off():
        return False, f"{ENV}={os.environ[ENV]} in the environment"
    if not cfg.watch_auto:
        return False, "watch.auto = false"
    if files >= cfg.watch_auto_min_files:
        why = f"the index holds {files} memory files, at least watch.auto_min_files = {cfg.watch_auto_min_files}"
    elif query_model_to_preload(ws, conn):
        why = "hybrid recall embeds queries with an in-process model"
    else:
        return False, (f"the index holds {files} memory files, fewer than watch.auto_min_files = "
                       f"{cfg.watch_auto_min_files}, and no in-process query model")
    reason = cannot_serve(ws)
    return (False, f"{why}, but a watcher could not serve: {reason}") if reason else (True, why)


def cannot_serve(ws: Workspace) -> str | None:
    """Why no watcher could serve fresh processes here (then none is started), or None."""
    if not sys.platform.startswith("linux"):  # elsewhere a watcher would poll, which never vouches
        return "no inotify on this system"
    socket = os.path.join(ws.state_dir, fsmonitor.SOCKET)
    if len(os.fsencode(socket)) > fsmonitor.MAX_SOCKET_PATH:
        return f"its socket's path {socket} would be over {fsmonitor.MAX_SOCKET_PATH} bytes"
    if not os.access(ws.state_dir, os.W_OK | os.X_OK):
        return f"{ws.state_dir} cannot be written"
    return None


def _start_once(ws: Workspace) -> bool:
    """Start `zmem watch --auto` unless another command is starting one now (the stamp's lock) or
    one was started less than RETRY seconds ago (its mtime)."""
    import fcntl
    try:
        fd = os.open(os.path.join(ws.state_dir, STAMP), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:  # a state directory this user may not write: a watcher could not serve either
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # another command is starting one right now
        st = os.fstat(fd)
        if st.st_size and abs(time.time() - st.st_mtime) < RETRY:
            return False
        if not os.access(ws.state_dir, os.W_OK | os.X_OK):  # the stamp may be writable in a directory that is not
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {time.time():.3f}\n".encode())  # (moves the mtime)
        running = len(automatic_watchers())
        if running >= ws.config.watch_auto_max:  # said in the log; tried again after RETRY, as any attempt
            with open(os.path.join(ws.state_dir, LOG), "a", encoding="utf-8") as log:
                log.write(f"zmem: no automatic watcher started: {running} of this user's run already "
                          f"(watch.auto_max = {ws.config.watch_auto_max}); one starts once another exits\n")
            return False
        from zmem.workspace.spawn import spawn_detached
        # (a reading command run by a git hook has git's variables: they would point git at another repository)
        env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE")}
        # (in the workspace: the command's own directory, kept busy for minutes, could not be unmounted)
        spawn_detached(ws, ["watch", "--auto"], LOG, env, cwd=ws.root)
        return True
    except OSError:  # no process could start (pids limit, memory), a full disk: the next attempt after RETRY
        return False
    finally:
        os.close(fd)


def automatic_watchers(root=None) -> list[int]:
    """The pids of this user's automatic watchers (`zmem -C ROOT watch --auto`; of any workspace, or of
    the one at root), from /proc."""
    uid, out = os.getuid(), []
    workspace = os.fsencode(str(root)) if root is not None else None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if b"--auto" in argv and b"watch" in argv and any(os.path.basename(a) == b"zmem" for a in argv) \
                and (workspace is None or workspace in argv):
            out.append(int(entry))
    return out


def stop(state_dir, pid: int, wait: float = 5.0) -> bool:
    """SIGTERM to the process serving the workspace's socket (pid: as fsmonitor.serving reads it from
    the kernel), then wait up to `wait` seconds for the socket to go; whether it went. Raises
    PermissionError for another user's process."""
    import signal
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass  # gone meanwhile
    path = os.path.join(state_dir, fsmonitor.SOCKET)
    deadline = time.monotonic() + wait
    while fsmonitor.vouched_by_someone(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def take_over(ws: Workspace) -> bool:
    """(A long-lived process about to serve the workspace: `zmem mcp`, a `zmem watch` started by hand.)
    Stop the automatic watcher serving it, if that is who serves, so that this process serves from now
    on: the automatic one exits when idle and would leave fresh processes to their sweep while this one
    still runs. Whether the socket is free now."""
    who = fsmonitor.serving(ws.state_dir)
    if not who or not who.get("auto") or not who.get("pid"):
        return False
    try:
        return stop(ws.state_dir, who["pid"], wait=3.0)
    except PermissionError:
        return False


def query_model_to_preload(ws: Workspace, conn) -> str | None:
    """The vector fingerprint of the model a watcher should load as it starts: hybrid recall with stored
    vectors of a model that runs in-process (onnx, local), so that the first fresh recall's query is
    embedded by the watcher (it would answer "no loading" to that one); None otherwise (bm25, an endpoint)."""
    if ws.config.recall_mode == "bm25":
        return None
    from zmem.store import db
    fingerprint = db.get_meta(conn, "vec_fingerprint")
    if not fingerprint:
        return None
    import json
    from zmem.embedders import IN_PROCESS_PROVIDERS
    try:
        provider = json.loads(fingerprint.partition("|windows=")[0]).get("provider")
    except (ValueError, AttributeError):
        return None
    return fingerprint if provider in IN_PROCESS_PROVIDERS else None
