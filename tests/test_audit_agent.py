"""Defects found by the agent-workflow audit, reproduced with the real CLI, real git hooks and a
real `zmem watch` process on real repositories: deletions and renames under `watch --commit`,
control characters in appends, appends next to code fences and existing section headings,
subdirectory workspaces and their hooks, `watch`/`init` errors, symlinks in history."""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, indexed_paths, wait_for, write, zmem_exe, zmem_proc

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs inotify")


def _today() -> str:
    return f"memory/{dt.date.today().isoformat()}.md"


def _refused(proc: subprocess.CompletedProcess, message: str) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("zmem: ") and message in lines[0], proc.stderr
    assert any(line.startswith("hint: ") for line in lines[1:]), proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


def _tree(root: Path, rev: str = "HEAD") -> set[str]:
    return set(git(root, "ls-tree", "-r", "--name-only", rev).splitlines())


# ----------------------------------------------------------------------------- 1. watch --commit


@linux_only
@pytest.mark.slow
def test_watch_commits_git_rm_and_git_mv_and_keeps_committing(ws, watch):
    write(ws, "memory/2025-01-01.md", "# d\n\n- one\n")
    write(ws, "memory/2025-01-02.md", "# d\n\n- two\n")
    write(ws, "memory/2025-01-05.md", "# d\n\n- five\n")
    commit_all(ws, "three logs")
    w = watch(ws, "--commit", "--commit-after", "0.5", "--debounce", "0.2")
    w.ready()

    def committed(path):
        return lambda e: e["event"] == "committed" and path in e["files"]

    git(ws, "rm", "-q", "memory/2025-01-01.md")  # gone from the index and the work tree
    w.wait_for(committed("memory/2025-01-01.md"))
    assert "memory/2025-01-01.md" not in _tree(ws)

    git(ws, "mv", "memory/2025-01-02.md", "memory/2025-01-03.md")  # a staged rename
    w.wait_for(committed("memory/2025-01-03.md"))
    assert {"memory/2025-01-03.md"} <= _tree(ws) and "memory/2025-01-02.md" not in _tree(ws)

    os.rename(ws / "memory/2025-01-05.md", ws / "memory/2025-01-06.md")  # a plain mv
    w.wait_for(committed("memory/2025-01-06.md"))
    with open(ws / "memory/2025-01-06.md", "a") as f:  # and later changes are still committed
        f.write("- six\n")
    w.wait_for(lambda e: e["event"] == "committed" and e["files"] == ["memory/2025-01-06.md"])
    assert "- six" in git(ws, "show", "HEAD:memory/2025-01-06.md")
    assert git(ws, "status", "--porcelain", "--", "memory") == ""
    assert not [e for e in w.seen if e["event"] == "error"], w.seen


@linux_only
@pytest.mark.slow
def test_watch_commits_the_other_files_and_gives_up_on_one_git_keeps_refusing(ws, watch):
    # a pre-commit hook that refuses any commit touching bad.md: only that file is left behind
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ngit diff --cached --name-only | grep -q 'bad.md' && exit 1\nexit 0\n")
    hook.chmod(0o755)
    w = watch(ws, "--commit", "--commit-after", "0.3", "--debounce", "0.1")
    w.ready()
    write(ws, "bank/bad.md", "# bad\n\n- refused by the hook\n")
    write(ws, "bank/good.md", "# good\n\n- fine\n")
    w.wait_for(lambda e: e["event"] == "committed" and e["files"] == ["bank/good.md"])
    gave_up = w.wait_for(lambda e: e["event"] == "error" and "gave up" in e["message"])
    assert gave_up["files"] == ["bank/bad.md"]
    write(ws, "bank/good.md", "# good\n\n- fine\n- still committed after a failure\n")
    w.wait_for(lambda e: e["event"] == "committed" and e["files"] == ["bank/good.md"])  # the next one
    assert "still committed" in git(ws, "show", "HEAD:bank/good.md")
    assert "bank/bad.md" not in _tree(ws)


# ----------------------------------------------------------------------------- 2. control characters


@pytest.mark.parametrize("text", ["a\0b", "bell\x07", "esc \x1b[31m red", "vt\x0bx"])
@pytest.mark.slow
def test_append_refuses_control_characters_and_writes_nothing(ws, text):
    assert zmem_proc("-C", str(ws), "append", "the aardvark digs at night").returncode == 0
    before = (ws / _today()).read_bytes()
    head = git(ws, "rev-parse", "HEAD")
    _refused(zmem_proc("-C", str(ws), "append", "-", input=text), "control character")
    if "\0" not in text:  # argv cannot carry a NUL
        _refused(zmem_proc("-C", str(ws), "append", text), "control character")
        _refused(zmem_proc("-C", str(ws), "append", "ok", "--retain", "W", "--entity", text), "control character")
    assert (ws / _today()).read_bytes() == before
    assert git(ws, "rev-parse", "HEAD") == head and git(ws, "status", "--porcelain") == ""
    out = json.loads(zmem_proc("-C", str(ws), "recall", "aardvark", "--json").stdout)
    assert [r["path"] for r in out["results"]] == [_today()]  # the log is still a note


@pytest.mark.slow
def test_append_keeps_tabs_and_newlines(ws):
    proc = zmem_proc("-C", str(ws), "append", "-", "--json", input="col\tumn\r\nsecond line\n")
    assert proc.returncode == 0, proc.stderr
    assert "- col\tumn\n  second line\n" in (ws / _today()).read_text()


@pytest.mark.slow
def test_mcp_append_with_nul_is_an_error_result(ws):
    pytest.importorskip("mcp")
    from helpers.mcp_client import error, session

    async def go():
        async with session(ws) as s:
            return await error(s, "memory_append", text="null\u0000byte")
    assert "control character" in asyncio.run(go())
    assert not (ws / _today()).exists() and git(ws, "status", "--porcelain") == ""


# ----------------------------------------------------------------------------- 3. sections and fences


FENCED = """# {day}

## Notes

- set up the build

```sh
# install deps
pip install -e .
```

## Retain

- W @Bob: Lives in Porto.

~~~~
# comment
~~~
~~~~
"""


@pytest.mark.slow
def test_append_never_lands_inside_a_code_fence(ws):
    day = dt.date.today().isoformat()
    write(ws, _today(), FENCED.format(day=day))
    commit_all(ws, "fenced")
    note = json.loads(zmem_proc("-C", str(ws), "append", "new note", "--json").stdout)
    fact = json.loads(zmem_proc("-C", str(ws), "append", "Ana prefers coffee", "--retain", "O", "--entity", "Ana",
                                "--json").stdout)
    lines = (ws / _today()).read_text().split("\n")
    assert lines[note["line"] - 1] == "- new note" and lines[note["line"] - 2] == "```"  # after the fence
    assert lines.index("## Retain") > note["line"]
    assert lines[fact["line"] - 1] == "- O @Ana: Ana prefers coffee" and lines[fact["line"] - 2] == "~~~~"
    assert lines.count("## Notes") == 1 and lines.count("## Retain") == 1
    facts = json.loads(zmem_proc("-C", str(ws), "facts", "--entity", "Ana", "--json").stdout)
    assert [f["text"] for f in facts["facts"]] == ["Ana prefers coffee"]
    assert git(ws, "status", "--porcelain") == ""


@pytest.mark.parametrize("notes, retain", [("# Notes", "### Retain"), ("## notes:", "#### Reter"),
                                           ("Notes\n-----", "保留\n==")])
@pytest.mark.slow
def test_append_uses_existing_sections_of_any_level(ws, notes, retain):
    day = dt.date.today().isoformat()
    write(ws, _today(), f"# {day}\n\n{notes}\n\n- old note\n\n{retain}\n\n- W @Bob: Lives in Porto.\n")
    commit_all(ws, "levels")
    assert zmem_proc("-C", str(ws), "append", "a second note").returncode == 0
    assert zmem_proc("-C", str(ws), "append", "Likes walks", "--retain", "W", "--entity", "Bob").returncode == 0
    text = (ws / _today()).read_text()
    assert text == (f"# {day}\n\n{notes}\n\n- old note\n- a second note\n\n{retain}\n\n"
                    "- W @Bob: Lives in Porto.\n- W @Bob: Likes walks\n")
    facts = json.loads(zmem_proc("-C", str(ws), "facts", "--entity", "Bob", "--json").stdout)
    assert sorted(f["text"] for f in facts["facts"]) == ["Likes walks", "Lives in Porto."]


# ----------------------------------------------------------------------------- 4. subdirectory workspaces


@pytest.fixture
def bigrepo(tmp_path) -> Path:
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    return root


@pytest.mark.slow
def test_subdirectory_workspaces_are_indexed_by_the_hooks(bigrepo):
    for sub in ("notes/agent", "notes/agent2"):
        proc = zmem_proc("init", sub, cwd=bigrepo)
        assert proc.returncode == 0, proc.stderr
    assert git(bigrepo, "config", "--get-all", "zmem.workspace").splitlines() == ["notes/agent", "notes/agent2"]
    write(bigrepo, "notes/agent/memory/2025-02-01.md", "# x\n\n- the okapi lives in the forest\n")
    write(bigrepo, "notes/agent2/memory/2025-02-02.md", "# x\n\n- the quokka smiles\n")
    commit_all(bigrepo, "notes")  # the installed hooks catch up both, in the background
    assert wait_for(lambda: "memory/2025-02-01.md" in indexed_paths(bigrepo / "notes/agent")
                     and "memory/2025-02-02.md" in indexed_paths(bigrepo / "notes/agent2"))
    proc = zmem_proc("hook", "post-commit", cwd=bigrepo)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


@pytest.mark.slow
def test_with_core_hookspath_subdirectory_workspaces_are_registered_and_hooks_never_fail_git(bigrepo):
    git(bigrepo, "config", "core.hooksPath", ".hk")
    hk = bigrepo / ".hk"
    hk.mkdir()
    for name in ("post-checkout", "post-commit"):  # what the README tells husky users to add
        (hk / name).write_text(f"#!/bin/sh\n'{zmem_exe()}' hook {name} \"$@\"\n")
        (hk / name).chmod(0o755)
    proc = zmem_proc("init", "notes/agent", cwd=bigrepo)
    assert proc.returncode == 0 and "core.hooksPath" in proc.stderr, proc.stderr
    assert git(bigrepo, "config", "--get-all", "zmem.workspace") == "notes/agent"
    write(bigrepo, "notes/agent/memory/2025-02-01.md", "# x\n\n- the pangolin rolls up\n")
    git(bigrepo, "add", "-A")
    commit = subprocess.run(["git", "commit", "-q", "-m", "notes"], cwd=bigrepo, capture_output=True, text=True)
    assert commit.returncode == 0, commit.stderr
    assert "memory/2025-02-01.md" in indexed_paths(bigrepo / "notes/agent")  # `zmem hook` runs in the foreground
    checkout = subprocess.run(["git", "checkout", "-q", "-b", "y"], cwd=bigrepo, capture_output=True, text=True)
    assert checkout.returncode == 0 and checkout.stderr == "", checkout.stderr


@pytest.mark.slow
def test_a_broken_registered_workspace_does_not_fail_the_hook_or_hide_the_others(bigrepo):
    assert zmem_proc("init", "--no-hooks", "notes/agent", cwd=bigrepo).returncode == 0
    assert zmem_proc("init", "--no-hooks", "notes/gone", cwd=bigrepo).returncode == 0
    for sub in ("notes/gone", "notes/agent", "notes/agent", "notes/deleted"):  # by hand: twice, and a stale one
        git(bigrepo, "config", "--add", "zmem.workspace", sub)
    write(bigrepo, "notes/gone/zmem.toml", "this is [not toml\n")
    write(bigrepo, "notes/agent/memory/2025-02-01.md", "# x\n\n- the tapir swims\n")
    proc = zmem_proc("hook", "post-commit", cwd=bigrepo)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert "memory/2025-02-01.md" in indexed_paths(bigrepo / "notes/agent")
    assert "skipped:" in (bigrepo / "notes/gone/.zmem/hook.log").read_text()


def test_run_hook_never_raises_even_when_finding_workspaces_fails(tmp_path, monkeypatch, capsys):
    from zmem import hookrun

    def boom(_directory):
        raise RuntimeError("simulated failure")
    monkeypatch.setattr(hookrun, "_workspaces", boom)
    (tmp_path / ".zmem").mkdir()
    hookrun.run_hook(str(tmp_path), "post-commit", [])  # does not raise
    assert "simulated failure" in (tmp_path / ".zmem" / "hook.log").read_text()
    assert "hook post-commit failed" in capsys.readouterr().err


# ----------------------------------------------------------------------------- 5, 6. watch and init errors


def test_watch_outside_a_git_repository_fails_before_watching(tmp_path):
    (tmp_path / "memory").mkdir()
    proc = subprocess.run([zmem_exe(), "watch", "--json", "--exit-after", "5"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    _refused(proc, "not a git repository")
    assert "watching" not in proc.stdout


def test_init_under_a_regular_file_is_an_error_with_a_hint(tmp_path):
    (tmp_path / "FILE").write_text("x")
    _refused(zmem_proc("init", "FILE/sub", cwd=tmp_path), "cannot create the workspace")


# ----------------------------------------------------------------------------- 7. symlinks in history


@pytest.mark.slow
def test_committed_symlinks_are_not_notes_in_history(ws):
    write(ws, "memory/2025-06-01.md", "# 2025-06-01\n\n- the narwhal tusk is a tooth\n")
    write(ws, "memory/2025-06-04.md", "# 2025-06-04\n\n- a real note about the narwhal first\n")
    real = commit_all(ws, "real")
    (ws / "memory/2025-06-04.md").unlink()
    os.symlink("2025-06-01.md", ws / "memory/2025-06-04.md")
    commit_all(ws, "now a symlink")
    assert zmem_proc("-C", str(ws), "index", "--history").returncode == 0

    _refused(zmem_proc("-C", str(ws), "get", "memory/2025-06-04.md", "--rev", "HEAD"), "symlink")
    _refused(zmem_proc("-C", str(ws), "get", "memory/2025-06-04.md"), "symlink")
    assert "real note" in zmem_proc("-C", str(ws), "get", "memory/2025-06-04.md", "--rev", real).stdout

    def as_of(query, rev):
        proc = zmem_proc("-C", str(ws), "recall", query, "--as-of", rev, "--json")
        assert proc.returncode == 0, proc.stderr
        return {r["path"] for r in json.loads(proc.stdout)["results"]}
    assert as_of("narwhal", "HEAD") == {"memory/2025-06-01.md"}
    assert "memory/2025-06-04.md" not in as_of("2025-06-01.md", "HEAD")  # the link's target text
    assert as_of("narwhal", real) == {"memory/2025-06-01.md", "memory/2025-06-04.md"}

    (ws / "memory/2025-06-04.md").unlink()  # a real file again: back in history
    write(ws, "memory/2025-06-04.md", "# 2025-06-04\n\n- the narwhal is back as a file\n")
    commit_all(ws, "a file again")
    assert as_of("narwhal", "HEAD") == {"memory/2025-06-01.md", "memory/2025-06-04.md"}
