"""The state directory's check that its files are files takes one look at each: SQLite deletes the WAL
when its last connection closes, which another zmem process (a hook, a background embed) may do at any
moment. Looking twice (exists, then is_file) read a WAL gone in between as "not a regular file", exit 1
(seen once in CI: `zmem facts` beside the demo's background work)."""
from __future__ import annotations

import os

from zmem.index import catchup
from zmem.workspace.core import find_workspace


def test_a_wal_removed_while_it_is_checked_is_not_an_error(ws, monkeypatch):
    state = ws / ".zmem"
    wal = state / "index.sqlite-wal"
    wal.write_bytes(b"")
    real_stat = os.stat

    def stat_then_close(path, *args, **kwargs):  # the last connection elsewhere closes just after our look
        st = real_stat(path, *args, **kwargs)
        if os.fspath(path) == os.fspath(wal) and os.path.lexists(wal):
            os.unlink(wal)
        return st

    monkeypatch.setattr(os, "stat", stat_then_close)
    catchup.ensure_state_dir(find_workspace(ws))  # raised IndexUnusable before
