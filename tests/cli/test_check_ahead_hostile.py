"""Hostile timings around a fresh recall's forked freshness check (catchup.check_ahead): the child's
"nothing to do" must be about the index state this process searched, not a later one another
process wrote meanwhile. Real repositories, real forks, real catch-ups."""
from __future__ import annotations

import os
import time

import pytest

from zmem.index import catchup
from zmem.memory import Memory
from zmem.workspace.snapshot import RACY_NS

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the check runs in a forked child")


def _indexed(ws) -> None:
    with Memory.open(ws) as mem:
        mem.catch_up()
    time.sleep(RACY_NS / 1e9 + 0.1)
    with Memory.open(ws) as mem:
        mem.catch_up()


@pytest.mark.slow
def test_a_catch_up_by_another_process_between_search_and_check_is_not_confirmed(ws, monkeypatch, tmp_path):
    """An edit, then two recalls at once: this one searches the old index, the other catches up, and
    only then does this one's child sweep (and finds nothing left to do). The answer read before the
    other's catch-up is stale: it must not be confirmed."""
    _indexed(ws)
    with open(ws / "memory/2025-11-27.md", "a") as f:
        f.write("- The zebrafish tank needs a new filter.\n")
    time.sleep(RACY_NS / 1e9 + 0.1)  # an edit old enough to be trusted by its stat once indexed
    go = tmp_path / "go"
    sweep = catchup._nothing_to_do

    def later(w, **kw):  # the child's sweep waits (a slow disk, a stopped child) until the other has caught up
        while not go.exists():
            time.sleep(0.01)
        return sweep(w, **kw)

    monkeypatch.setattr(catchup, "_idle_core", lambda: True)
    monkeypatch.setattr(catchup, "_nothing_to_do", later)
    with Memory.open(ws) as mem:
        mem.check_ahead()
        assert not mem.recall("zebrafish").results  # the index as it was
        with Memory.open(ws) as other:  # the other recall catches up
            other.catch_up()
        go.touch()
        assert not mem.confirmed()
        assert [h.path for h in mem.recall("zebrafish").results] == ["memory/2025-11-27.md"]
