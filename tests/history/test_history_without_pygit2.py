"""With the history index on, the catch-up after a commit extends it from the git command
(gitstatus.CommandRepo: first_parent_chain, tree_changes, read_blob), so `zmem append` imports no
pygit2 then either (it cost the append ~60 ms); the answers are pygit2's (zmem.git.repo)."""
from __future__ import annotations

import os

from helpers.fresh import fresh
from helpers.workspace import commit_all, git, run, write

from zmem.git.gitstatus import CHAIN_BATCH, open_command_repo
from zmem.git.repo import open_repo


def _commits_of_every_kind(ws) -> None:
    """Edits, a new and a deleted note, a note turned symlink and back, a file outside the memory
    paths, a message of several lines and an author's name in UTF-8."""
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- edited\n")
    write(ws, "memory/new.md", "# new\n")
    commit_all(ws, "edit and add\n\nwith a body\nof lines")
    (ws / "memory/new.md").unlink()
    os.symlink("2025-11-24.md", ws / "memory/link.md")
    write(ws, "notes.txt", "not a note\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "délete, link", env={"GIT_AUTHOR_NAME": "João Müller"})
    (ws / "memory/link.md").unlink()
    write(ws, "memory/link.md", "# now a file\n")
    (ws / "memory/2025-11-27.md").unlink()
    os.symlink("link.md", ws / "memory/2025-11-27.md")
    commit_all(ws, "symlink to file, file to symlink")


def test_the_command_repo_walks_and_diffs_as_pygit2(ws):
    base = git(ws, "rev-parse", "HEAD")
    _commits_of_every_kind(ws)
    command, pygit = open_command_repo(ws), open_repo(ws)
    assert type(command).__name__ == "CommandRepo"
    for known in ({base}, {git(ws, "rev-parse", "HEAD~1")}, {git(ws, "rev-parse", "HEAD")}):
        chain = command.first_parent_chain(known)
        assert chain == pygit.first_parent_chain(known) and chain[-1].sha in known
    for c in pygit.first_parent_chain({base}):
        if c.parent:
            # as a set: pygit2 names a note turned symlink twice (deleted, then added as a link), git once
            assert set(command.tree_changes(c.parent, c.sha)) == set(pygit.tree_changes(c.parent, c.sha))
            for _, blob in command.tree_changes(c.parent, c.sha):
                if blob:
                    assert command.read_blob(blob) == pygit.read_blob(blob)
    assert command._repo is None  # pygit2 was never opened for these
    assert command.first_parent_chain(set()) == pygit.first_parent_chain(set())  # pygit2's own walk


def test_more_new_commits_than_one_batch_are_walked_by_pygit2(ws):
    base = git(ws, "rev-parse", "HEAD")
    for n in range(CHAIN_BATCH + 2):
        write(ws, "memory/2025-11-24.md", f"# 2025-11-24\n\n- edit {n}\n")
        commit_all(ws, f"edit {n}")
    command = open_command_repo(ws)
    chain = command.first_parent_chain({base})
    assert chain == open_repo(ws).first_parent_chain({base}) and len(chain) == CHAIN_BATCH + 3


def test_append_with_the_history_index_on_imports_no_pygit2_and_history_follows(ws):
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- W @Peter: Moved to Porto.\n")
    commit_all(ws, "a fact")
    assert run(["-C", str(ws), "log", "@Peter"]).exit_code == 0  # builds the history index: on from now
    _commits_of_every_kind(ws)
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    report, proc = fresh("-C", str(ws), "append", "The okapi moved to the north enclosure")
    assert report["code"] in (None, 0), proc.stderr
    assert "pygit2" not in report["modules"] and "zmem.git.repo" not in report["modules"]
    assert git(ws, "log", "-1", "--format=%s").startswith("zmem append")
    # the history index as a first build by pygit2 makes it, in a clone of the same commits
    clone = ws.parent / "clone"
    git(ws.parent, "clone", "-q", str(ws), str(clone))
    assert run(["-C", str(clone), "log", "@Peter"]).exit_code == 0
    assert _history(ws) == _history(clone)


def _history(root) -> list:
    from zmem.store import db
    conn = db.connect(root / ".zmem" / "index.sqlite")
    try:
        return [conn.execute("SELECT seq, sha, time, author, summary FROM hist_commits ORDER BY seq").fetchall(),
                conn.execute("SELECT path, blob, from_seq, to_seq FROM hist_versions ORDER BY path, from_seq").fetchall(),
                conn.execute("SELECT blob, start_line, kind, text FROM hist_facts ORDER BY blob, start_line").fetchall()]
    finally:
        conn.close()
