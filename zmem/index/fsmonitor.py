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

The same socket embeds queries: a fresh hybrid recall whose model runs in-process (onnx, local)
sends "embed [vector fingerprint, query]" and gets the vector the watcher's copy of that model
makes, instead of importing the runtime and loading the model itself (~0.5 s); and "cover
[fingerprint, query, [passage…]]", how much of the query each of its first hits' lines holds, token
by token (zmem.query.tokencover). The watcher builds its providers from the workspace's own
settings (the asker only names a fingerprint, never a file)
and loads the model at the first such question, answering "no" to that one (a watcher that starts
with such a model's vectors stored starts loading it at once: QueryEmbedding.preload). Any doubt (no watcher,
another fingerprint, not loaded yet, busy, an error, no answer in time) and the asker embeds as before.
And it answers keyword searches: a fresh recall whose words include common ones sends "bm25 KEY K
TOKEN…" (KEY: zmem.store.impact's key of the index state the asker reads) and gets the rows impact's
top_k gives for exactly that state, from the lists this process keeps (KeywordSearches); any doubt
and the asker searches with FTS5 itself.
"who" (`zmem status`, `zmem watch --stop`) gets what the watcher says of itself: its command, whether a
reading command started it (zmem.index.autowatch), since when; its pid comes from the socket (SO_PEERCRED).
The socket is protected as the vouching is: it lives in the workspace's state directory and is made
with the process's umask, so only those who may write there can connect.
"""
from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

SOCKET = "fsmonitor.sock"
COOKIES = "fsmonitor"  # the directory of cookie files (watched by the watcher, inside the state directory)
ASK_TIMEOUT = 0.05  # seconds a fresh process waits for an answer before it does the sweep itself
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes; a longer path: no vouching, the sweep as before
EMBED_TIMEOUT = 0.25  # seconds a fresh process waits for its query's vector (a served one takes ~1-30 ms)
# seconds it waits for its first hits' token coverage (asked for: rerank = "embedding"; ~20-120 ms with MiniLM,
# more on a busy machine: without an answer the hits keep their fused order)
COVER_TIMEOUT = 1.0
MAX_REQUEST = 1 << 16  # bytes; a longer query is embedded by the asking process itself
EMBED_QUEUE = 4  # questions waiting for the embedding thread; one more is answered "no busy"
SEARCH_TIMEOUT = 0.1  # seconds a fresh process waits for a watcher's keyword search (a served one: ~1-10 ms)
SEARCH_WORDS = 64  # words in a keyword search a watcher answers; more: the asking process searches itself
_serving = False  # this process is the watcher: its own catch-ups never ask it (it would wait on itself)


def vouched(state_dir: Path, snapshot: str, timeout: float = ASK_TIMEOUT) -> bool | None:
    """Whether a watcher vouches that no memory file changed since the index's snapshot was taken:
    True; False when one serves this workspace but cannot vouch (or gave no answer in time); None
    when nobody serves it (no socket, or one nobody listens on: its watcher died)."""
    reply = _ask(state_dir, f"vouch {snapshot}\n".encode(), timeout)
    return None if reply is None else reply == b"yes\n"


def embedded(state_dir: Path, fingerprint: str, text: str, timeout: float = EMBED_TIMEOUT) -> list[float] | None:
    """The query vector a watcher made for text with the model whose vectors have this fingerprint
    (zmem.index.embedding.vector_fingerprint), or None: the caller embeds it itself."""
    vector = _asked_json(state_dir, b"embed", [fingerprint, text], b"vector", timeout)
    ok = isinstance(vector, list) and vector and all(isinstance(x, float) for x in vector)
    return vector if ok else None


def covered(state_dir: Path, fingerprint: str, query: str, passages: list[str],
            timeout: float = COVER_TIMEOUT) -> list[float] | None:
    """How much of query each passage holds, as the watcher's copy of the model with this fingerprint reads
    them (Embedder.cover), or None: no watcher, no answer in time, or a model that does not read the query's
    language; the caller then leaves its hits in the order they have."""
    got = _asked_json(state_dir, b"cover", [fingerprint, query, passages], b"cover", timeout)
    ok = isinstance(got, list) and len(got) == len(passages) and all(isinstance(x, float) for x in got)
    return got if ok else None


def _asked_json(state_dir: Path, word: bytes, payload: list, answer: bytes, timeout: float):
    """The JSON of a watcher's `ANSWER JSON` reply to `WORD JSON(payload)`, or None."""
    request = word + b" " + json.dumps(payload).encode() + b"\n"
    if len(request) > MAX_REQUEST:
        return None
    reply = _ask(state_dir, request, timeout)
    if not reply or not reply.startswith(answer + b" "):
        return None
    try:
        return json.loads(reply[len(answer) + 1:])
    except ValueError:
        return None


def ranked(state_dir: Path, key: str, tokens: list[str], k: int,
           timeout: float = SEARCH_TIMEOUT) -> list[tuple[int, float]] | None:
    """A watcher's top k (chunk id, FTS5 rank) for tokens in the index state whose key is key
    (zmem.store.impact.key_text), exactly what impact.top_k gives there; None: FTS5 answers."""
    request = f"bm25 {key} {k} {' '.join(tokens)}\n".encode()
    if len(request) > MAX_REQUEST or any(" " in t or "\n" in t for t in tokens):
        return None
    reply = _ask(state_dir, request, timeout)
    if not reply or not reply.startswith(b"rows") or not reply.endswith(b"\n"):
        return None
    try:  # "rows ID:RANK ID:RANK…": each rank written by repr, read back as the same double
        rows = [(int(cid), float(rank)) for cid, _, rank in (row.partition(b":") for row in reply.split()[1:])]
    except ValueError:
        return None
    return rows if len(rows) <= k else None


def _ask(state_dir: Path, request: bytes, timeout: float) -> bytes | None:
    """The watcher's one-line reply to a one-line request; b"" when it gave none in time; None when
    there is no watcher (no socket, or nobody listening on it)."""
    path = os.path.join(state_dir, SOCKET)
    if _serving or len(os.fsencode(path)) > MAX_SOCKET_PATH or not os.path.exists(path):  # no watcher: no socket import
        return None
    import _socket  # not `socket`: its enums cost a fresh process a few ms
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    deadline = time.monotonic() + timeout
    try:
        s.settimeout(timeout)
        try:
            s.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):  # a watcher that died, or went meanwhile
            return None
        s.sendall(request)
        reply = b""
        while not reply.endswith(b"\n"):
            s.settimeout(max(deadline - time.monotonic(), 1e-3))
            part = s.recv(1 << 16)
            if not part:
                break
            reply += part
    except OSError:  # timed out (a busy watcher), …
        return b""
    finally:
        s.close()
    return reply


def serving(state_dir: Path, timeout: float = 1.0) -> dict | None:
    """The process serving this workspace's socket, as it describes itself ("who"): {"pid", "command"
    (watch or mcp), "auto" (started by a reading command), "started" (ISO 8601), "idle_exit" (seconds or
    None)}; only the pid when it does not say (busy, or a zmem from before "who"); None when nobody serves."""
    import socket
    import struct
    path = os.path.join(state_dir, SOCKET)
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(path)
        except OSError:
            return None
        about: dict = {}
        try:  # the pid from the kernel: whoever may write the state directory could make the reply say anything
            about["pid"] = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                            struct.calcsize("3i")))[0]
        except (AttributeError, OSError):  # not Linux
            about["pid"] = None
        reply = b""
        try:
            s.sendall(b"who\n")
            while not reply.endswith(b"\n") and len(reply) <= MAX_REQUEST:
                part = s.recv(4096)
                if not part:
                    break
                reply += part
        except OSError:
            pass
    if reply.startswith(b"who "):
        try:
            said = json.loads(reply[4:])
        except ValueError:
            said = None
        if isinstance(said, dict):
            about.update({k: said.get(k) for k in ("command", "auto", "started", "idle_exit")})
            about["pid"] = about["pid"] or said.get("pid")
    return about


class VouchServer:
    """The watcher's end of the socket: answer(snapshot) -> bool decides each question; with
    embedder_for (see QueryEmbedding), query embedding questions go to a thread of their own."""

    def __init__(self, state_dir: Path, embedder_for: Callable[[str], object] | None = None,
                 about: dict | None = None):
        import socket
        global _serving
        _serving = True
        self.queries = QueryEmbedding(embedder_for) if embedder_for is not None else None
        self.about = json.dumps({"pid": os.getpid(), **(about or {})}).encode()  # the reply to "who"
        self.last_question = time.monotonic()  # of another process (vouch, embed, bm25; not "who")
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

    def still_bound(self) -> bool:
        """Whether the socket file is still this server's (not removed, not replaced by another's)."""
        try:
            return os.stat(self.path).st_ino == self.ino
        except OSError:
            return False

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
            try:
                deadline = time.monotonic() + ASK_TIMEOUT  # for the whole question: a trickle must not hold the loop
                request = b""
                while not request.endswith(b"\n") and len(request) <= MAX_REQUEST:
                    conn.settimeout(max(deadline - time.monotonic(), 1e-3))
                    part = conn.recv(1 << 16)
                    if not part:
                        break
                    request += part
                word, _, rest = request.strip().partition(b" ")
                if word == b"who":
                    conn.sendall(b"who " + self.about + b"\n")
                    continue
                if word in (b"vouch", b"embed", b"bm25", b"cover"):  # (not a bare connect: another watcher looking)
                    self.last_question = time.monotonic()
                if word == b"bm25" and self.searches is not None:
                    self.searches.submit(conn, rest)  # the connection is the search thread's now
                    conn = None
                    continue
                if word in (b"embed", b"cover") and self.queries is not None:
                    self.queries.submit(conn, rest)  # the connection is the embedding thread's now
                    conn = None
                    continue
                snapshot = rest.decode("ascii", "replace")
                ok = word == b"vouch" and snapshot.isdigit() and answer(snapshot)
                conn.sendall(b"yes\n" if ok else b"no\n")
            except OSError:
                pass  # the client gave up waiting
            finally:
                if conn is not None:
                    conn.close()

    searches = None  # KeywordSearches, once serve_searches is called

    def serve_searches(self, index_path: Path) -> None:
        """Answer fresh processes' keyword searches too (`bm25 …`), from lists this process keeps."""
        self.searches = KeywordSearches(index_path)

    def close(self) -> None:
        global _serving
        _serving = False
        self.sock.close()
        if self.searches is not None:
            self.searches.close()
        if self.queries is not None:
            self.queries.close()
        try:
            if os.stat(self.path).st_ino == self.ino:  # ours, not a newer watcher's
                os.unlink(self.path)
        except OSError:
            pass


def serve_in_thread(server: VouchServer, answer: Callable[[str], bool],
                    between: Callable[[], tuple[int | None, float | None]] | None = None) -> Callable[[], None]:
    """Answer questions on a thread of its own (`zmem mcp`, whose main thread waits on stdin);
    returns the function that stops it and closes the server (from any thread, this one included).
    between (a long-lived Memory keeping its index caught up): called before each wait, it does what is
    due and returns (a descriptor whose events also wake the thread, the longest wait), each or None."""
    import select
    import threading
    stop_r, stop_w = os.pipe()
    stopped = threading.Event()
    finished, finishing = [], threading.Lock()

    def done_with_pipe(who: str) -> None:  # closed once both the loop and stop() are done with it
        with finishing:
            finished.append(who)
            if len(finished) == 2:
                os.close(stop_r)
                os.close(stop_w)

    def loop() -> None:
        try:
            while True:
                fd, timeout = between() if between is not None else (None, None)
                if stopped.is_set():  # between() may have stopped this thread (a settings change rebuilds all)
                    return
                try:
                    ready, _, _ = select.select([server.fileno(), stop_r, *([fd] if fd is not None else [])], [], [],
                                                timeout)
                except InterruptedError:
                    continue
                except (OSError, ValueError):  # closed meanwhile by stop()
                    return
                if stop_r in ready:
                    return
                if server.fileno() in ready:
                    server.serve(answer)
        finally:
            done_with_pipe("loop")

    thread = threading.Thread(target=loop, name="zmem-fsmonitor", daemon=True)
    thread.start()

    def stop() -> None:
        stopped.set()
        os.write(stop_w, b"x")
        done_with_pipe("stop")
        if threading.current_thread() is not thread:
            thread.join(timeout=5)
        server.close()  # now, even from this thread: a new server may bind the same socket next
    return stop


class QueryEmbedding:
    """Embeds fresh processes' queries on a thread of its own, with a model this process keeps loaded.
    embedder_for(vector fingerprint) -> the embedder making such vectors, or None; called on that thread.
    A model that is not loaded yet is loaded after answering "no loading"; one that failed to load is
    not tried again (its process says why when it embeds itself)."""

    def __init__(self, embedder_for: Callable[[str], object]):
        import queue
        import weakref
        self.embedder_for = embedder_for
        self.waiting: queue.Queue = queue.Queue()
        self.failed: weakref.WeakSet = weakref.WeakSet()
        self.thread = None

    def submit(self, conn, payload: bytes) -> None:
        """Take over conn, whose request was `embed [fingerprint, text]` or `cover [fingerprint, query,
        [passage…]]`: queued, or answered "no" at once."""
        try:
            request = json.loads(payload)
        except (ValueError, RecursionError):  # garbage, or arrays nested deeper than the parser goes
            request = None
        if isinstance(request, list) and len(request) == 3 and isinstance(request[2], list) and \
                all(isinstance(x, str) for x in (*request[:2], *request[2])):
            fingerprint, text = request[0], (request[1], request[2])  # cover: (query, passages)
        elif isinstance(request, list) and len(request) == 2 and all(isinstance(x, str) for x in request):
            fingerprint, text = request
        else:
            return _reply(conn, b"no request\n")
        if self.waiting.qsize() >= EMBED_QUEUE or not self._start():
            return _reply(conn, b"no busy\n")
        self.waiting.put((conn, fingerprint, text))

    def preload(self, fingerprint: str) -> None:
        """Load the model making vectors with this fingerprint now, on the embedding thread (a watcher
        that just started), so that the first question is answered with a vector, not "no loading"."""
        if self._start():
            self.waiting.put((None, fingerprint, None))

    def _start(self) -> bool:
        """Whether the embedding thread runs (started now if need be)."""
        if self.thread is None:
            self.thread = _started(self._run, "zmem-query-embedding")
        return self.thread is not None

    def _run(self) -> None:
        while (item := self.waiting.get()) is not None:
            conn, fingerprint, text = item
            to_load = None
            try:
                embedder = self.embedder_for(fingerprint)
                if embedder is None or not embedder.in_process:
                    reply = b"no model\n"
                elif embedder in self.failed:
                    reply = b"no error\n"
                elif not embedder.loaded:
                    reply, to_load = b"no loading\n", embedder
                elif text is None:  # a preload of a model already loaded
                    reply = b""
                elif isinstance(text, tuple):
                    reply = b"cover " + json.dumps(embedder.cover(*text)).encode() + b"\n"
                else:
                    reply = b"vector " + json.dumps(embedder.embed([text], "query")[0]).encode() + b"\n"
            except Exception:  # noqa: BLE001 - whatever failed, the asking process embeds itself and says why
                reply = b"no error\n"
            if conn is not None:
                _reply(conn, reply)
            if to_load is not None:
                try:
                    to_load.load()
                except Exception:  # noqa: BLE001
                    self.failed.add(to_load)

    def close(self) -> None:
        if self.thread is not None:
            self.waiting.put(None)
            self.thread.join(timeout=5)
            self.thread = None


class KeywordSearches:
    """Answers fresh processes' keyword searches on a thread of its own: `bm25 KEY K TOKEN…`, the
    top k of those one-token words for the index state KEY (zmem.store.impact: what its top_k gives
    there, from the impact-ordered lists this process keeps), read from the index through a
    connection of this thread. It answers only for exactly that state and only from lists already
    made, else "no" at once and then makes them; while it makes lists, questions get "no busy".
    Between questions it makes ahead the lists of the words asked lately for the index's newest
    state (once that state has held for a poll), as far as impact.MAX_ENTRIES allows."""

    POLL = 0.5  # seconds between looks at the index's state, while words were asked
    WORDS = 64  # common words remembered (the latest asked)

    def __init__(self, index_path: Path):
        import queue
        self.index_path = index_path
        self.waiting: queue.Queue = queue.Queue()
        self.words: dict[str, None] = {}  # asked common words, oldest first
        self.building = False
        self.thread = None
        self.index, self.stamp = None, None  # the thread's connection, and the file's (device, inode) then

    def submit(self, conn, payload: bytes) -> None:
        """Take over conn, whose request was `bm25 PAYLOAD`: queued, or answered "no" at once."""
        try:
            key, k, *tokens = payload.decode("utf-8").split(" ")
            k = int(k) if k.isascii() and k.isdigit() and len(k) <= 6 else 0
        except (UnicodeDecodeError, ValueError):
            key, k, tokens = "", 0, []
        if not (key and 0 < k and 0 < len(tokens) <= SEARCH_WORDS and all(tokens)):
            return _reply(conn, b"no request\n")
        if self.building or self.waiting.qsize() >= EMBED_QUEUE:
            return _reply(conn, b"no busy\n")
        if self.thread is None:
            self.thread = _started(self._run, "zmem-keyword-search")
            if self.thread is None:
                return _reply(conn, b"no busy\n")
        self.waiting.put((conn, key, k, tokens))

    def _run(self) -> None:
        import queue
        from zmem.store import impact
        seen = made = None  # the state key at the last look; the one the remembered words have lists for
        while True:
            try:
                item = self.waiting.get(timeout=self.POLL if self.words else None)
            except queue.Empty:
                item = False
            if item is None:
                break
            try:
                index = self._open()
                if item is False:  # a quiet moment: the newest state's lists, once it held for a poll
                    now = impact.state_key(index) if index is not None else None
                    if now is not None and now == seen and now != made:
                        made = self._build(index, impact, list(reversed(self.words)), evict=False)
                    seen = now
                    continue
                conn, key, k, tokens = item
                rows, missing = impact.served_top_k(index, key, tokens, k) if index is not None else (None, False)
                if rows is None:
                    _reply(conn, b"no lists\n" if missing else b"no state\n")
                else:
                    _reply(conn, ("rows" + "".join(f" {cid}:{rank!r}" for cid, rank in rows) + "\n").encode())
                if missing or rows is not None:
                    for t in tokens:  # latest last; build() skips the rare ones
                        self.words.pop(t, None)
                        self.words[t] = None
                    while len(self.words) > self.WORDS:
                        del self.words[next(iter(self.words))]
                if missing:
                    made = None
                    self._build(index, impact, tokens, evict=True)
            except Exception:  # noqa: BLE001 - a failed search or build: the asking processes use FTS5
                if item:
                    _reply(item[0], b"no error\n")
        self._close_index()

    def _open(self):
        """This thread's read-only connection to the index, opened again when the file was replaced
        (`zmem index --full`); None without one."""
        from zmem.store import db
        try:
            st = os.stat(self.index_path)
        except OSError:
            self._close_index()
            return None
        if self.index is None or self.stamp != (st.st_dev, st.st_ino):
            self._close_index()
            self.index, self.stamp = db.connect(self.index_path, readonly=True), (st.st_dev, st.st_ino)
        return self.index

    def _close_index(self) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None

    def _build(self, index, impact, tokens: list[str], evict: bool) -> str | None:
        self.building = True
        try:
            return impact.build(index, tokens, evict)
        finally:
            self.building = False

    def close(self) -> None:
        if self.thread is not None:
            self.waiting.put(None)
            self.thread.join(timeout=5)
            self.thread = None


def _started(target: Callable[[], None], name: str):
    """A daemon thread running target, or None when none can start now (a pids cgroup or `ulimit -u`
    reached): the asking process then does the work itself, and the watcher goes on."""
    import threading
    thread = threading.Thread(target=target, name=name, daemon=True)
    try:
        thread.start()
    except RuntimeError:
        return None
    return thread


def _reply(conn, reply: bytes) -> None:
    try:
        conn.settimeout(ASK_TIMEOUT)
        conn.sendall(reply)
    except OSError:
        pass  # the asker gave up waiting
    finally:
        conn.close()


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
