"""At most watch.auto_max automatic watchers of a user run at once, over all workspaces: past it a reading
command starts none (its workspace's .zmem/watch.log and `zmem status` say why) until one exits."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from helpers.autowatch import ON, WAIT, _kill, alive, log, recall, root, served, settings, watchers  # noqa: F401
from helpers.workspace import run, wait_for, zmem_proc
from zmem.index import autowatch

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")


@pytest.mark.slow
def test_no_more_automatic_watchers_than_auto_max(root, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(root, other, ignore=shutil.ignore_patterns(".zmem"))
    assert run(["-C", str(other), "index", "-q"]).exit_code == 0
    settings(auto_max=len(autowatch.automatic_watchers()) + 1)  # room for one more than run already
    try:
        recall(root)
        assert wait_for(lambda: served(root) is not None, WAIT)
        recall(other)
        assert wait_for(lambda: "watch.auto_max" in log(other), WAIT)
        assert served(other) is None and not watchers(other)
        status = json.loads(zmem_proc("-C", str(other), "status", "--json", env=ON).stdout)
        assert status["auto_watch"]["on"] is False and "watch.auto_max" in status["auto_watch"]["why"]
        assert zmem_proc("-C", str(root), "watch", "--stop").returncode == 0
        stamp = other / ".zmem" / autowatch.STAMP
        old = stamp.stat().st_mtime - autowatch.RETRY - 1
        os.utime(stamp, (old, old))  # as if its minute had passed
        recall(other)
        assert wait_for(lambda: served(other) is not None, WAIT)  # one exited: room again
    finally:
        for pid in watchers(other):
            _kill(pid)
