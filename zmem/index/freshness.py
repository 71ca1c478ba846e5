"""The freshness check of a zmem.Memory and the serving of fresh processes that a long-lived one does
(the Freshness methods Memory inherits): the index caught up once per Memory, or checked ahead in a
child process (check_ahead, confirmed); with watch=True, caught up before every call in which something
changed (inotify) and, after watch_in_background(), kept caught up on a thread while it answers other
zmem processes (vouching that nothing changed, embedding their queries: zmem.index.fsmonitor), as
`zmem watch` does. The state these methods keep is set up in Memory.__init__ (zmem/memory.py)."""
from __future__ import annotations

import time

TYPE_CHECKING = False  # as typing's, without importing typing (~3 ms of a fresh recall); checkers know the name

if TYPE_CHECKING:
    from zmem.index.catchup import CatchUp
    from zmem.workspace.core import Workspace

BUSY_RETRY = 0.1  # seconds the watch thread waits before looking again while a call holds the lock
# seconds between a watching Memory's attempts to serve fresh processes while it does not (another process
# served when it tried: a zmem watch started by hand, an automatic watcher slow to stop; the next call tries)
SERVE_RETRY = 30.0
BACKGROUND_LOCK_WAIT = 0.5  # seconds a background catch-up waits for the index lock; then it tries again later


class Freshness:
    """What zmem.Memory inherits: its freshness check, and its watching and vouching (see above)."""

    def fresh(self) -> CatchUp:
        """The freshness check: the index caught up once per Memory (with watch, whenever a memory
        file, an ignore rule or HEAD changed since the last time). Its warnings say what it could not do."""
        if self.watch:
            return self._caught_up_live()
        if self._fresh is None and self._ahead is not None:
            self._fresh = self._assumed_fresh()
        if self._fresh is None:
            from zmem.index.catchup import catch_up
            self._fresh = catch_up(self.workspace, conn=self.conn, reading=self.start_watcher)
        return self._fresh

    def check_ahead(self) -> None:
        """(A fresh process that reads once, such as `zmem recall`.) Start the freshness check in a
        child process now, and until confirmed() let fresh() take the index as caught up: what is read
        meanwhile counts only once confirmed() says so. Does nothing once the index is open (a
        connection must not cross a fork), with watch, or where it cannot fork."""
        if self._conn is None and self._fresh is None and self._ahead is None and not self.watch:
            from zmem.index.catchup import check_ahead
            self._ahead = check_ahead(self.workspace, reading=self.start_watcher)

    def confirmed(self) -> bool:
        """Whether the check that check_ahead started found the index caught up, with nothing to do (so
        what was read since holds); True when none was started. When not, fresh() checks and catches up
        again, and whatever was read must be read again."""
        if self._ahead is None:
            return True
        ahead, self._ahead = self._ahead, None
        assumed = self._fresh
        if assumed is not None and ahead.indexed() == self._assumed_state:
            return True
        self._fresh = None
        return False

    def _assumed_fresh(self) -> CatchUp | None:
        """What catch_up returns when nothing changed, taken from the index while the check runs;
        None (and the check stopped) when the index was never caught up: catch_up decides at once."""
        from zmem.store import db
        from zmem.index.catchup import CatchUp, index_state
        indexed = db.get_meta(self.conn, "indexed_commit")
        if not indexed:
            self._abandon_ahead()
            return None
        self._assumed_state = index_state(self.conn)  # what the child's check must have found fresh
        return CatchUp(head=indexed, previous=indexed, warnings=list(self.workspace.config.warnings))

    def _abandon_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead.abandon()
            self._ahead = None
            self._fresh = None

    def watch_in_background(self) -> None:
        """(A long-lived Memory(watch=True), such as `zmem mcp` as it starts.) Start watching now, on a
        thread, as `zmem watch` does: catch up, answer fresh zmem processes (vouching, query vectors,
        keyword searches: zmem.index.fsmonitor), load the query model hybrid recall needs, and from then
        on catch up in the background once changed memory files settle (watch.debounce), so that fresh
        processes are vouched for between calls too. Callers must hold `lock` around every call."""
        import threading
        threading.Thread(target=self._start_watching, name="zmem-watch-start", daemon=True).start()

    def _start_watching(self) -> None:
        from zmem.index.watch import Settling
        with self.lock:
            try:
                ws = self.workspace
                self._settling = Settling(ws.config.watch_debounce)
                self.fresh()
                self._preload_query_model(ws)
            except Exception:  # noqa: BLE001 - no workspace, a broken index: the calls say so
                return

    def _preload_query_model(self, ws: Workspace) -> None:
        """(Serving fresh processes since watch_in_background().) Have the query embedding thread load the
        model hybrid recall embeds queries with (autowatch.query_model_to_preload), queued before any
        question can be answered."""
        from zmem.index.autowatch import query_model_to_preload
        server = self._server
        if server is not None and server.queries is not None:
            fingerprint = query_model_to_preload(ws, self.conn)
            if fingerprint:
                server.queries.preload(fingerprint)

    def _keep_caught_up(self) -> tuple[int | None, float | None]:
        """(The fsmonitor thread, between questions, once watch_in_background() was called.) Read the
        memory directories' events and catch up once they settled, as `zmem watch` does; returns the
        inotify descriptor to wait on and the seconds until the next catch-up is due."""
        if self._settling is None:
            return None, None
        if not self.lock.acquire(blocking=False):
            return None, BUSY_RETRY  # a call is running (and catches up itself): look again shortly
        try:
            source, now = self._source, time.monotonic()
            if not source:
                return None, None
            if source.read() or source.needs_sync:  # (a root gone or replaced: the next call sees to it)
                self._clean_head = self._vouch = None
                self._settling.changed(now)
            if self._settling.due(now):
                try:
                    self._caught_up_live(lock_timeout=BACKGROUND_LOCK_WAIT)
                except Exception:  # noqa: BLE001 - the next call says what is wrong; try again later
                    self._settling.changed(now)
                if self._source is not source:  # the settings changed: a new watch (and thread) took over
                    return None, None
            return source.fileno(), self._settling.wait(time.monotonic())
        finally:
            self.lock.release()

    def _caught_up_live(self, lock_timeout: float = 5.0) -> CatchUp:
        """The index brought up to date — or known to be, without the stat sweep: no memory file
        changed (inotify) and HEAD is where it was after the last complete catch-up."""
        from zmem.store import db
        from zmem.index.catchup import CatchUp, catch_up
        from zmem.workspace.snapshot import ignore_rules_changed, read_head, stored_ignore_record
        ws, conn = self.workspace, self.conn
        source = self._watch_source(ws)
        if source and self._server is None and time.monotonic() >= self._serve_again:
            self._start_vouching(ws)  # whoever served when it last tried may be gone
            if self._server is not None and self._settling is not None:
                self._preload_query_model(ws)
        if source:
            if source.read() or source.needs_sync or source.root_gone:
                self._clean_head = self._vouch = None
                if source.needs_sync and not source.root_gone:
                    source.sync()
        git_dir, common = db.get_meta(conn, "git_dir"), db.get_meta(conn, "git_common_dir")
        head = read_head(git_dir, common) if git_dir and common else None
        # ignore rules live partly outside the watched directories (info/exclude, core.excludesFile): ~0.2 ms
        if source and head is not None and head == self._clean_head \
                and not ignore_rules_changed(stored_ignore_record(conn)):
            return CatchUp(head=head, previous=head)
        result = self._fresh = catch_up(ws, conn=conn, lock_timeout=lock_timeout)
        if self._settling is not None:
            self._settling.caught_up()
            if result.stale:  # another process held the index lock: the watch thread tries again
                self._settling.changed(time.monotonic())
        clean = source and not (result.stale or result.deferred) and result.head == head
        self._clean_head = head if clean else None
        self._vouch = db.get_meta(conn, "snapshot_ns") if clean and source.watches_all(conn) else None
        return result

    def _watch_source(self, ws: Workspace):
        if self._source is None:
            from zmem.index.watch import InotifySource, InotifyUnavailable, Settling
            if self._settling is not None:  # keeping caught up: with the settings' debounce (maybe reloaded)
                self._settling = Settling(ws.config.watch_debounce)
            try:
                self._source = InotifySource(ws)
            except (InotifyUnavailable, OSError):
                self._source = False  # catch up before every call instead
            else:
                self._start_vouching(ws)
        return self._source

    def _start_vouching(self, ws: Workspace) -> None:
        """Answer fresh zmem processes' "did anything change?" (zmem.index.fsmonitor), as `zmem watch` does."""
        import functools
        from zmem.index import fsmonitor
        from zmem.index.watch import serve_fresh_processes
        server = serve_fresh_processes(ws, self._source, self._query_embedder,
                                       {"command": "mcp", "auto": False, "idle_exit": None})
        if server is None:  # another watcher answers, or the socket cannot be made: processes do the sweep
            self._serve_again = time.monotonic() + SERVE_RETRY
            return
        self._server = server
        self._stop_vouching = fsmonitor.serve_in_thread(server, functools.partial(self._answer, server),
                                                        between=self._keep_caught_up)

    def _query_embedder(self, fingerprint: str):
        """(On fsmonitor's query embedding thread.) This Memory's provider making vectors with this
        fingerprint (the model it loads for its own recalls), or None, also while a tool call holds the lock."""
        from zmem.index import fsmonitor
        if not self.lock.acquire(timeout=fsmonitor.EMBED_TIMEOUT):
            return None
        try:
            provs = self.providers
        finally:
            self.lock.release()
        return provs.for_fingerprint(fingerprint)

    def _answer(self, server, snapshot: str) -> bool:
        """Yes when no event came in since the catch-up that left this snapshot (events read up to a
        cookie first). Waits for a tool call in progress only as long as the asking process waits."""
        from zmem.index import fsmonitor
        if not self.lock.acquire(timeout=fsmonitor.ASK_TIMEOUT):
            return False
        try:
            source = self._source
            if not source or self._vouch is None:
                if source and self._clean_head is None:
                    self._catch_up_soon()  # the last catch-up was not complete: try again
                return False
            paths, seen = source.read_to_now(server)
            if paths or not seen or source.needs_sync or source.root_gone:
                self._clean_head = self._vouch = None
                if self._settling is not None:
                    self._settling.changed(time.monotonic())
                return False
            if self._vouch != snapshot:
                # another process moved the snapshot (a commit's hook): a catch-up checks it, and the
                # next question can be vouched for
                self._clean_head = None
                self._catch_up_soon()
                return False
            return True
        except OSError:
            return False
        finally:
            self.lock.release()

    def _catch_up_soon(self) -> None:
        """(Keeping caught up.) A catch-up after the debounce, unless one is already waiting (a question
        after each change must not put it off)."""
        if self._settling is not None and self._settling.first is None:
            self._settling.changed(time.monotonic())
