"""When git cannot blame a committed note (blame.ignoreRevsFile naming a file that is not there, as
a global setting does in every repository without one), zmem says so: its lines were shown as "not
committed", `facts --origin` as uncommitted and reflect found no new fact, all without a word."""
from __future__ import annotations

import subprocess

import pytest

from helpers.workspace import commit_all, git, run, write


def test_a_blame_git_cannot_make_is_an_error_not_uncommitted_lines(ws):
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- W @Peter: Moved to Porto.\n")
    commit_all(ws, "a fact")
    write(ws, "memory/2025-11-29.md", "# 2025-11-29\n\n- not committed yet\n")
    git(ws, "config", "blame.ignoreRevsFile", ".git-blame-ignore-revs")
    if not subprocess.run(["git", "blame", "--", "memory/2025-11-28.md"], cwd=ws, capture_output=True).returncode:
        pytest.skip("this git blames with a missing blame.ignoreRevsFile")
    for args in (["blame", "memory/2025-11-28.md"], ["facts", "--origin"]):
        res = run(["-C", str(ws), *args])
        assert res.exit_code == 1, res.output + res.stderr
        lines = res.stderr.strip().splitlines()
        assert lines[0].startswith("zmem: git blame failed on memory/2025-11-28.md: fatal: could not open"), lines
        assert lines[-1].startswith("hint: ")
    res = run(["-C", str(ws), "blame", "memory/2025-11-29.md"])  # untracked: not committed, as before
    assert res.exit_code == 0 and "not committed" in res.stdout, res.output + res.stderr
