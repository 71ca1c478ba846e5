"""The once-per-workspace note that an automatic watcher was started: said by the click command line
and by the plain recall of zmem.cli.entry alike, so it lives apart from both (and imports neither click
nor the watcher's module unless there is something to say)."""
from __future__ import annotations

import os


def watcher_note(mem) -> str | None:
    """(A reading command, as it ends.) The once-per-workspace note that an automatic watcher was started
    in the background (zmem.index.autowatch.announcement), or None: background work is never silent."""
    try:
        ws = mem.workspace
        if not os.path.exists(os.path.join(ws.state_dir, "watch-auto-new")):  # autowatch.NEW, unimported:
            return None  # what most commands find (importing it would cost ~3 ms)
        from zmem.index.autowatch import announcement
        return announcement(ws)
    except Exception:  # noqa: BLE001 - a note: it never turns a command that worked into a failure
        return None
