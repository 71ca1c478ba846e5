"""A watcher's word that nothing changed, so a fresh process can skip the per-file stat sweep (the
idea of git's fsmonitor). `zmem watch` holds inotify watches on every memory directory; after a
complete catch-up it vouches for the index's snapshot (meta snapshot_ns) until any event arrives.

A fresh process asks over a Unix socket in the state directory: "vouch SNAPSHOT". Before it answers,
the watcher creates a cookie file in a watched directory of its own and reads its events up to that
cookie's, so every change made before the question is counted (inotify queues events in order).
It says "yes" only when it saw no event since the catch-up that recorded SNAPSHOT; anything else
(no watcher, a dead or busy one, another snapshot, a timeout) means the caller does the sweep.
Not seen by inotify, and so not vouched against: writes through a hard link in an unwatched
directory, writes through mmap, and changes made by another machine on a network file system.
"""
from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Callable

SOCKET = "fsmonitor.sock"
COOKIES = "fsmonitor"  # the directory of cookie files (watched by the watcher, inside the state directory)
ASK_TIMEOUT = 0.05  # seconds a fresh process waits for an answer before it does the sweep itself
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes; a longer path: no vouching, the sweep as before
_serving = False  # this process is the watcher: its own catch-ups never ask it (it would wait on itself)


def vouched(state_dir: Path, snapshot: str, timeout: float = ASK_TIMEOUT) -> bool:
    """Whether a watcher vouches that no memory file changed since the index's snapshot was taken."""
    path = os.path.join(state_dir, SOCKET)
    if _serving or len(os.fsencode(path)) > MAX_SOCKET_PATH or not os.path.exists(path):  # no watcher: no socket import
        return False
    import _socket  # not `socket`: its enums cost a fresh process a few ms
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(f"vouch {snapshot}\n".encode())
        reply = b""
        while not reply.endswith(b"\n"):
            part = s.recv(64)
            if not part:
                break
            reply += part
    except OSError:  # refused (a watcher that died), timed out (a busy one), …
        return False
    finally:
        s.close()
    return reply == b"yes\n"


class VouchServer:
    """The watcher's end of the socket: answer(snapshot) -> bool decides each question."""

    def __init__(self, state_dir: Path):
        import socket
        global _serving
        _serving = True
        self.path = os.path.join(state_dir, SOCKET)
        self.cookie_dir = os.path.join(state_dir, COOKIES)
        self._names = itertools.count()
        if len(os.fsencode(self.path)) > MAX_SOCKET_PATH:
            raise OSError(f"the socket path {self.path} is too long")
        os.makedirs(self.cookie_dir, exist_ok=True)
        for name in os.listdir(self.cookie_dir):  # left by a watcher that was killed
            if name.startswith(f"{os.getpid()}-") or not _alive(name.partition("-")[0]):
                _unlink(os.path.join(self.cookie_dir, name))
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._bind()
            self.sock.listen(16)
            self.sock.setblocking(False)
        except BaseException:
            self.sock.close()
            raise
        self.ino = os.stat(self.path).st_ino

    def _bind(self) -> None:
        try:
            self.sock.bind(self.path)
        except OSError:
            if vouched_by_someone(self.path):  # another watcher serves this workspace: leave it be
                raise
            _unlink(self.path)  # left by a watcher that died
            self.sock.bind(self.path)

    def fileno(self) -> int:
        return self.sock.fileno()

    def new_cookie(self) -> str:
        """Create a cookie file; its name (the caller waits for its creation event)."""
        name = f"{os.getpid()}-{next(self._names)}"
        os.close(os.open(os.path.join(self.cookie_dir, name), os.O_CREAT | os.O_WRONLY, 0o600))
        return name

    def drop_cookie(self, name: str) -> None:
        _unlink(os.path.join(self.cookie_dir, name))

    def serve(self, answer: Callable[[str], bool]) -> None:
        """Answer every question waiting (a client that says nothing within the timeout is dropped)."""
        while True:
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            with conn:
                try:
                    conn.settimeout(ASK_TIMEOUT)
                    request = b""
                    while not request.endswith(b"\n") and len(request) < 256:
                        part = conn.recv(256)
                        if not part:
                            break
                        request += part
                    word, _, snapshot = request.decode("ascii", "replace").strip().partition(" ")
                    ok = word == "vouch" and snapshot.isdigit() and answer(snapshot)
                    conn.sendall(b"yes\n" if ok else b"no\n")
                except OSError:
                    pass  # the client gave up waiting

    def close(self) -> None:
        global _serving
        _serving = False
        self.sock.close()
        try:
            if os.stat(self.path).st_ino == self.ino:  # ours, not a newer watcher's
                os.unlink(self.path)
        except OSError:
            pass


def serve_in_thread(server: VouchServer, answer: Callable[[str], bool]) -> Callable[[], None]:
    """Answer questions on a thread of its own (`zmem mcp`, whose main thread waits on stdin);
    returns the function that stops it and closes the server."""
    import select
    import threading
    stop_r, stop_w = os.pipe()

    def loop() -> None:
        while True:
            try:
                ready, _, _ = select.select([server.fileno(), stop_r], [], [])
            except InterruptedError:
                continue
            if stop_r in ready:
                return
            server.serve(answer)

    thread = threading.Thread(target=loop, name="zmem-fsmonitor", daemon=True)
    thread.start()

    def stop() -> None:
        os.write(stop_w, b"x")
        thread.join(timeout=5)
        os.close(stop_r)
        os.close(stop_w)
        server.close()
    return stop


def vouched_by_someone(path: str) -> bool:
    """Whether a live process listens on the socket at path."""
    import socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(path)
        except OSError:
            return False
    return True


def _alive(pid: str) -> bool:
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
