"""A submodule is no note, whatever its name: the history index skips it as tree_files does. Its entry
at a note's path (`memory/shared.md`) was read as a blob of this repository: every later catch-up
warned "history not updated", and `zmem index --history`, which that warning suggests, failed with an
internal error (KeyError)."""
from __future__ import annotations

from helpers.workspace import commit_all, git, run, write

from zmem.git.gitstatus import open_command_repo
from zmem.git.repo import open_repo


def test_a_submodule_at_a_notes_path_is_no_note(ws, tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    commit_all(sub, "shared notes")
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- W @Peter: Lives in Lisbon.\n")
    base = commit_all(ws, "a fact")
    assert run(["-C", str(ws), "log", "@Peter"]).exit_code == 0  # the history index is on from here
    git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "memory/shared.md")
    added = commit_all(ws, "a submodule named like a note")
    changes = set(open_command_repo(ws).tree_changes(base, added))
    assert changes == set(open_repo(ws).tree_changes(base, added))
    assert [blob for rel, blob in changes if rel == "memory/shared.md"] == [None]  # no version of a note
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- W @Peter: Lives in Porto.\n")
    commit_all(ws, "moved")
    res = run(["-C", str(ws), "log", "@Peter"])
    assert res.exit_code == 0 and "history not updated" not in res.stderr, res.stderr
    assert "Lives in Porto." in res.stdout
    res = run(["-C", str(ws), "index", "--history"])
    assert res.exit_code == 0, res.output + res.stderr
