"""`zmem sync` says exactly what stopped it (hostile pass, issue 26): the files a merge would overwrite are
named (git's one-line error leaves them out), a failing `--json` sync prints a JSON error on stdout, and
an unreachable extra remote never claims commits go out that it cannot count. A real bare hub, real
clones, real processes."""
from __future__ import annotations

import json
import re

import pytest

from helpers.hub import make_hub, sync, zmem
from helpers.workspace import git, write

pytestmark = pytest.mark.slow  # every test here syncs real clones through a hub (~1-3 s each)


def _blocked(tmp_path):
    """Clone b, with a local change to a file the hub changed and an untracked file the hub added."""
    a, b = make_hub(tmp_path, 2)
    write(a, "tools/run.sh", "echo one\n")
    git(a, "add", "tools/run.sh")
    git(a, "commit", "-q", "-m", "a script")
    sync(a)
    sync(b)
    write(a, "tools/run.sh", "echo two\n")
    write(a, "todo.txt", "from a\n")
    git(a, "add", "-A")
    git(a, "commit", "-q", "-m", "a changes the script, adds a todo")
    sync(a)
    write(b, "tools/run.sh", "echo mine\n")  # not memory: sync does not commit it
    write(b, "todo.txt", "mine\n")
    return b


def test_a_merge_blocked_by_local_changes_names_the_files(tmp_path):
    b = _blocked(tmp_path)
    head = git(b, "rev-parse", "HEAD")
    proc = zmem("-C", str(b), "sync", ok=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, proc.stderr
    assert lines[0].startswith("zmem: cannot merge origin/main: ")
    assert "your uncommitted changes to tools/run.sh would be overwritten by the merge" in lines[0]
    assert "untracked file todo.txt would be overwritten by the merge" in lines[0]
    assert lines[1] == ("hint: commit those files or move them aside (git stash --include-untracked), then: "
                        "zmem sync")
    assert git(b, "rev-parse", "HEAD") == head and (b / "todo.txt").read_text() == "mine\n"


def test_a_failing_sync_json_prints_a_json_error_on_stdout(tmp_path):
    b = _blocked(tmp_path)
    proc = zmem("-C", str(b), "sync", "--json", ok=False)
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert set(out) == {"error", "hint", "exit_code"} and out["exit_code"] == 1
    assert "tools/run.sh" in out["error"] and out["hint"].startswith("commit those files")
    assert proc.stderr.strip().splitlines()[0] == f"zmem: {out['error']}"  # stderr says it as before


def test_an_unreachable_extra_remote_does_not_count_commits_it_never_saw(tmp_path):
    a, = make_hub(tmp_path, 1)  # in step with origin: nothing to go out
    git(a, "remote", "add", "backup", str(tmp_path / "gone.git"))
    proc = zmem("-C", str(a), "sync", "backup", ok=False)
    assert proc.returncode == 1
    first = proc.stderr.splitlines()[0]
    assert first.startswith("zmem: cannot reach the remote backup:") and not re.search(r"\d+ commits? ", first), first
    assert first.endswith("nothing was lost: your notes stay committed here")
    out = json.loads(zmem("-C", str(a), "sync", "backup", "--json", ok=False).stdout)
    assert out["error"] == first.removeprefix("zmem: ")


def test_an_unreachable_named_remote_is_retried_by_name_and_git_says_it_once(tmp_path):
    (a,) = make_hub(tmp_path, 1)
    git(a, "remote", "add", "backup", "ssh://nonexistent.invalid/memory.git")
    proc = zmem("-C", str(a), "sync", "backup", ok=False)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("zmem: cannot reach the remote backup:") and ".;" not in lines[0], lines
    # a bare `zmem sync` would sync with origin, the upstream, not with the remote that failed
    assert lines[1].endswith("(git fetch backup should work), then: zmem sync backup"), lines


def test_a_push_that_starts_a_second_memory_beside_the_remotes_says_so(tmp_path):
    # a `git init --bare` hub names master as HEAD; zmem pushed main, so a clone is empty, on master
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "master", str(hub))
    first, second = tmp_path / "first", tmp_path / "second"
    zmem("init", str(first))
    git(first, "remote", "add", "origin", str(hub))
    zmem("-C", str(first), "sync", "origin")
    git(tmp_path, "clone", "-q", str(hub), str(second))
    write(second, "memory/2025-11-24.md", "- a note of a memory of its own\n")  # (what an old zmem init did)
    git(second, "add", "-A")
    git(second, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "own")
    proc = zmem("-C", str(second), "sync")
    warned = [line for line in proc.stderr.splitlines() if "sharing no history" in line]
    assert warned == ["warning: origin also has origin/main, sharing no history with master: this push started a "
                      "second memory beside it, which other clones never see; to join them: git merge "
                      "--allow-unrelated-histories origin/main, then zmem sync"], proc.stderr
    proc = zmem("-C", str(first), "sync")  # a first push of a related branch says nothing of the kind
    assert "sharing no history" not in proc.stderr
