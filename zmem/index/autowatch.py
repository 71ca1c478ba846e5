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
# in the state directory: the first automatic watcher's pid, until a command has said so (announcement),
# then renamed to TOLD: each workspace is told once that zmem started work in the background
NEW, TOLD = "watch-auto-new", "watch-auto-told"
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
    else:
        few = f"the index holds {files} memory files, fewer than watch.auto_min_files = {cfg.watch_auto_min_files}"
        model = _in_process_model(ws, conn)
        if model is None:
            return False, f"{few}, and no in-process query model"
        missing = _missing_engine(model[1])
        if missing:  # a watcher would exist to preload a model it cannot load
            return False, f"{few}, and the query model's engine ({model[1]}) cannot run here: {missing} is not installed"
        why = "hybrid recall embeds queries with an in-process model"
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
        pid = spawn_detached(ws, ["watch", "--auto"], LOG, env, cwd=ws.root)
        if not os.path.exists(os.path.join(ws.state_dir, TOLD)):  # the first one here: a command says so
            with open(os.path.join(ws.state_dir, NEW), "w", encoding="utf-8") as f:
                f.write(f"{pid}\n")
        return True
    except OSError:  # no process could start (pids limit, memory), a full disk: the next attempt after RETRY
        return False
    finally:
        os.close(fd)


def announcement(ws: Workspace) -> str | None:
    """What a command says on stderr, once per workspace, after the first automatic watcher started
    there (by this command or by the freshness check's child, whose stderr is /dev/null): what runs,
    why and how to turn it off. None when there is nothing to say (one stat)."""
    new = os.path.join(ws.state_dir, NEW)
    if not os.path.exists(new):
        return None
    try:
        with open(new, encoding="utf-8") as f:
            pid = f.read().strip()
        os.replace(new, os.path.join(ws.state_dir, TOLD))  # whoever renames it says it: once
    except OSError:
        return None
    idle = ws.config.watch_idle_exit
    return (f"zmem started a watcher in the background (`zmem watch --auto`, pid {pid or '?'}): it keeps the index "
            f"of {ws.root} fresh (and, when recall embeds queries in-process, the query model loaded), so that the "
            f"next commands answer sooner; it exits "
            f"after {idle / 60:g} minutes without a question (`zmem status` shows it, `zmem watch --stop` stops it). "
            f"Turn automatic watchers off with {ENV}=0 or `[watch] auto = false` in zmem.toml. "
            f"(Said once for this workspace.)")


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


def stop(state_dir, pid: int, wait: float = 5.0, why: str | None = None) -> bool:
    """SIGTERM to the process serving the workspace's socket (pid: as fsmonitor.serving reads it from
    the kernel), then wait up to `wait` seconds for the socket to go; whether it went. Raises
    PermissionError for another user's process. why: said in watch.log first (the watcher's own exit
    line, after it, names the signal)."""
    import signal
    if why:
        log(state_dir, f"{why}: stopping the watcher (pid {pid})")
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


def take_over(ws: Workspace, by: str = "zmem") -> bool:
    """(A long-lived process about to serve the workspace: `zmem mcp`, a `zmem watch` started by hand.)
    Stop the automatic watcher serving it, if that is who serves, so that this process serves from now
    on: the automatic one exits when idle and would leave fresh processes to their sweep while this one
    still runs. Whether the socket is free now."""
    who = fsmonitor.serving(ws.state_dir)
    if not who or not who.get("auto") or not who.get("pid"):
        return False
    try:
        return stop(ws.state_dir, who["pid"], wait=3.0, why=f"{by} (pid {os.getpid()}) takes over serving this workspace")
    except PermissionError:
        return False


def log(state_dir, message: str) -> None:
    """A dated line in .zmem/watch.log, where automatic watchers say what they did (and why they exit)."""
    import datetime as dt
    try:
        with open(os.path.join(state_dir, LOG), "a", encoding="utf-8") as f:
            f.write(f"{dt.datetime.now().isoformat(timespec='seconds')} {message}\n")
    except OSError:
        pass


def query_model_to_preload(ws: Workspace, conn) -> str | None:
    """The vector fingerprint of the model a watcher should load as it starts: hybrid recall with stored
    vectors of a model that runs in-process (onnx, local), so that the first fresh recall's query is
    embedded by the watcher (it would answer "no loading" to that one); None otherwise (bm25, an endpoint,
    or an engine this Python does not have: onnxruntime missing where only the mcp extra is installed)."""
    model = _in_process_model(ws, conn)
    return model[0] if model and not _missing_engine(model[1]) else None


def _missing_engine(provider: str) -> str | None:
    from zmem.embedders import missing_engine
    return missing_engine(provider)


def _in_process_model(ws: Workspace, conn) -> tuple[str, str] | None:
    """(vector fingerprint, provider) of the index's vectors when hybrid recall embeds its queries with
    a model that runs in-process (onnx, local); else None."""
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
    return (fingerprint, provider) if provider in IN_PROCESS_PROVIDERS else None
