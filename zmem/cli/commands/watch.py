"""`zmem watch`: the index kept fresh (and memory committed and synced) while agents write."""
from __future__ import annotations

import functools
import json
import os
import sys

import click

from zmem.errors import ZmemError
from zmem.cli.common import Count, Interval, Seconds, _memory, json_option, warn


@click.command("watch")
@click.option("--debounce", type=Seconds(0, None), default=None, metavar="SECONDS",
              help="Reindex after this many seconds without a change (default 1.5, `watch.debounce`).")
@click.option("--commit", "do_commit", is_flag=True,
              help="Also commit the changed memory files (only those, including those already uncommitted at "
                   "start) once they have been quiet for --commit-after seconds; never while a merge or rebase "
                   "is in progress.")
@click.option("--commit-after", type=Seconds(0, None), default=30.0, show_default=True, metavar="SECONDS",
              help="With --commit: seconds without a change before committing.")
@click.option("--poll", is_flag=True,
              help="Stat the memory files every second instead of using inotify (e.g. network file systems).")
@click.option("--max-events", type=Count(1, None), default=None, metavar="N",
              help="Exit 0 after N indexed/committed events (for scripts and tests).")
@click.option("--exit-after", type=Seconds(0, None), default=None, metavar="SECONDS",
              help="Exit 0 after this many seconds (for scripts and tests).")
@click.option("--sync", "sync_every", type=Interval(), default=None, metavar="INTERVAL",
              help="Also run `zmem sync` (commit, fetch, merge, push) every INTERVAL (60s, 5m, 1h). A failure "
                   "(offline, a conflict) is a warning and a line in .zmem/watch.log, retried at the interval, then "
                   "twice as late each time (up to 10 minutes); never fatal. Writes never wait for it.")
@click.option("--idle-exit", type=Seconds(0, None, min_open=True), default=None, metavar="SECONDS",
              help="Exit 0 after SECONDS without a question from another zmem process (a freshness check, a "
                   "query to embed, a keyword search; not file changes).")
@click.option("--unless-watched", is_flag=True,
              help="Exit 0 at once when another process (zmem watch, zmem mcp) already serves this workspace.")
@click.option("--auto", is_flag=True,
              help="Run as the automatic watcher that reading commands start (`watch.auto`): --unless-watched, "
                   "--idle-exit `watch.idle_exit` (900) unless given, no polling (exits 1 without inotify), exits 0 "
                   "when its socket is removed or taken over; status shows it as started automatically. Not with "
                   "--commit or --sync.")
@click.option("--stop", is_flag=True,
              help="Stop the zmem watch serving this workspace (SIGTERM, then wait up to 5 s) and exit 0; with none "
                   "running, say so and exit 0. A zmem mcp serving it is not stopped (exit 1).")
@click.option("--verbose", "-v", is_flag=True, help="One line per reindex or commit on stderr even when it is not a terminal.")
@json_option('One JSON line per event on stdout: {"event": "watching"|"indexed"|"committed"|"synced"|"error", '
             '"files": [...], "commit": ..., "seconds": ...}; "synced" has the files that came in, the new '
             'HEAD as commit, and a message.')
@click.pass_context
def watch_cmd(ctx, debounce, do_commit, commit_after, poll, max_events, exit_after, sync_every, idle_exit,
              unless_watched, auto, stop, verbose, as_json):
    """Keep the index fresh while agents write memory files without committing.

    Watches the memory directories (inotify on Linux, one descriptor however many files; elsewhere
    it stats the files every second) and, after DEBOUNCE seconds without a change, reindexes what
    changed. With --commit, memory files that stay unchanged for --commit-after seconds are
    committed (`zmem watch: N memory files`), never other files. With --sync, it also shares them
    through the git remote on an interval, like `zmem sync`. While it watches with inotify, other
    zmem processes on this workspace ask it whether anything changed instead of checking every
    file, and with an in-process model (provider onnx or local) have it embed their queries.
    Stops cleanly on Ctrl-C (exit 130) or SIGTERM (exit 0); exits 1 if the workspace is moved or deleted.
    Reading commands start one by themselves (--auto) where it pays: see `watch.auto`.
    """
    from zmem.index.watch import Watcher
    ws = _memory(ctx).workspace
    if stop:
        _stop_watcher(ws)
        return
    if auto and (do_commit or sync_every):
        raise click.UsageError("--auto never commits or syncs: leave out --commit and --sync.")
    if auto and idle_exit is None:
        idle_exit = ws.config.watch_idle_exit
    loud = verbose or sys.stderr.isatty()

    def emit(e) -> None:
        if as_json:
            click.echo(json.dumps(e.to_json(), ensure_ascii=False))
        if not loud:
            return
        names = ", ".join(e.files[:3]) + (f" and {len(e.files) - 3} more" if len(e.files) > 3 else "")
        if e.event == "watching":
            click.echo(f"watching {ws.root} ({e.watched} {'directories' if e.backend == 'inotify' else 'files'}, "
                       f"{e.backend}); Ctrl-C stops", err=True)
        elif e.event == "indexed":
            click.echo(f"indexed {len(e.files)} file{'s' if len(e.files) != 1 else ''} in {e.seconds * 1000:.0f} ms: "
                       f"{names}", err=True)
        elif e.event == "committed":
            click.echo(f"committed {len(e.files)} memory file{'s' if len(e.files) != 1 else ''} as {e.commit[:10]}: "
                       f"{names}", err=True)
        elif e.event == "synced":
            click.echo(f"synced: {e.message}" + (f": {names}" if e.files else ""), err=True)

    syncer = None
    if sync_every:
        from zmem import sync
        sync.upstream(ws.root)  # no remote or no upstream: said now, not at the first interval
        syncer = functools.partial(sync.sync, ws)
    watcher = Watcher(ws, debounce=ws.config.watch_debounce if debounce is None else debounce, commit=do_commit,
                      commit_after=commit_after, poll=poll, max_events=max_events, exit_after=exit_after,
                      emit=emit, notice=warn, sync_every=sync_every, syncer=syncer, idle_exit=idle_exit,
                      unless_watched=unless_watched, auto=auto)
    try:
        code = watcher.run()
    except ZmemError as e:
        if as_json:
            click.echo(json.dumps({"event": "error", "files": [], "commit": None, "seconds": 0, "message": e.message}))
        raise
    if watcher.commit and watcher.pending:
        warn(f"{len(watcher.pending)} changed memory files were left uncommitted (stopped before --commit-after)")
    if watcher.finished and loud:
        click.echo(f"stopped: {watcher.finished}", err=True)
    raise click.exceptions.Exit(code)


def _stop_watcher(ws) -> None:
    """`zmem watch --stop`: SIGTERM to the zmem watch serving the workspace, then wait for its socket to go."""
    from zmem.index import autowatch, fsmonitor
    from zmem.status import watcher_line
    who = fsmonitor.serving(ws.state_dir)
    if who is None:
        click.echo(f"no watcher serves {ws.root}", err=True)
        return
    pid = who.get("pid")
    if who.get("command") == "mcp":
        raise ZmemError(f"{ws.root} is served by zmem mcp (pid {pid}), not by a zmem watch",
                        hint="it stops with its MCP client (or kill it); zmem watch --stop stops only zmem watch")
    if not pid:
        raise ZmemError(f"cannot tell which process serves {ws.root}",
                        hint=f"find it with: fuser {ws.state_dir / fsmonitor.SOCKET}")
    try:
        stopped = autowatch.stop(ws.state_dir, pid, wait=5.0,  # an automatic one's log says who stopped it
                                 why=f"zmem watch --stop (pid {os.getpid()})" if who.get("auto") else None)
    except PermissionError:
        raise ZmemError(f"no permission to stop the watcher (pid {pid}) of {ws.root}",
                        hint="run zmem watch --stop as the user who started it") from None
    if not stopped:
        raise ZmemError(f"the watcher (pid {pid}) did not stop within 5 s", hint=f"kill -9 {pid}")
    click.echo(f"stopped {watcher_line(who)}")
