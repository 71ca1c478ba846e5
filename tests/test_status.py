"""`zmem status` (zmem/status.py, top level): in a repository with no commits it says so, and that the
files are indexed from the working tree, instead of "(never indexed) [up to date]"; --json agrees
(`indexed`); after an uncommitted delete, status and doctor agree on what is stale."""
from __future__ import annotations

import json
import shutil

import pytest

from helpers.workspace import commit_all, git, run, run_json, write, zmem_proc

NOTE = "# d\n\n- secretword\n"


def test_status_without_commits_says_the_working_tree_is_indexed(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")  # a repository that was there: init commits nothing in it
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    write(root, "memory/2025-12-01.md", "# 2025-12-01\n\n- the quince orchard\n")
    assert run(["-C", str(root), "recall", "quince"]).exit_code == 0

    text = run(["-C", str(root), "status"]).stdout
    assert "HEAD:           (no commits yet)\n" in text
    assert ("indexed commit: none: no commits yet, the files are indexed from the working tree  [up to date]\n"
            in text), text
    assert "never indexed" not in text
    st, _ = run_json(["-C", str(root), "status", "--json"])
    assert (st["head"], st["indexed_commit"], st["indexed"], st["stale"]) == (None, None, True, False)

    shutil.rmtree(root / ".zmem")  # an index that never caught up: that is "never indexed", and stale
    text = run(["-C", str(root), "status"]).stdout
    assert "indexed commit: (never indexed)  [stale: the next command catches up]" in text, text
    st, _ = run_json(["-C", str(root), "status", "--json"])
    assert (st["indexed"], st["stale"]) == (False, True)

    head = commit_all(root)
    assert run(["-C", str(root), "recall", "quince"]).exit_code == 0
    st, _ = run_json(["-C", str(root), "status", "--json"])
    assert (st["head"], st["indexed_commit"], st["indexed"], st["stale"]) == (head, head, True, False)
    assert f"indexed commit: {head}  [up to date]" in run(["-C", str(root), "status"]).stdout


@pytest.mark.slow
def test_status_and_doctor_after_an_uncommitted_delete(ws):
    write(ws, "memory/2025-01-01.md", NOTE)
    commit_all(ws, "note")
    (ws / "memory/2025-01-01.md").unlink()
    st = json.loads(zmem_proc("-C", str(ws), "status", "--json").stdout)
    assert st["stale"] is True  # not indexed yet: the index still has it
    assert zmem_proc("-C", str(ws), "index").returncode == 0
    st = json.loads(zmem_proc("-C", str(ws), "status", "--json").stdout)
    assert st["stale"] is False and "memory/2025-01-01.md" in st["dirty"]
    doctor = zmem_proc("-C", str(ws), "doctor")
    assert "[ok  ] index:" in doctor.stdout and "up to date" in doctor.stdout
