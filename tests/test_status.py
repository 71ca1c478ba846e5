"""`zmem status` in a repository with no commits says so, and that the files are indexed from the
working tree, instead of "(never indexed) [up to date]"; --json agrees (`indexed`)."""
from __future__ import annotations

import shutil

from helpers.workspace import commit_all, run, run_json, write


def test_status_without_commits_says_the_working_tree_is_indexed(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
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
