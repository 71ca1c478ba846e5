"""What a command says about work it caused beyond its answer, as it ends; no click, nothing of cli
imported (the plain recall in cli/entry.py says it too)."""
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
