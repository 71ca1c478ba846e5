"""A committed `.zmem` symlink (which .gitignore's `.zmem/` does not cover) makes every command refuse
the workspace; the hooks must not write through it either: their log went wherever the link pointed."""
from __future__ import annotations

import shutil

from zmem import hookrun


def test_a_hook_writes_no_log_through_a_symlinked_state_dir(ws, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(ws / ".zmem")
    (ws / ".zmem").symlink_to(elsewhere)
    hookrun.run_hook(str(ws), "post-commit", [])
    assert list(elsewhere.iterdir()) == []
    assert (ws / ".zmem").is_symlink()
