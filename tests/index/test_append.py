"""`zmem append` against the repository's state: merges, rebases, detached HEAD, ignored files,
a missing git, huge notes, CRLF files, file modes."""
from __future__ import annotations

import datetime as dt
import json
import os
import stat

import pytest

from helpers.workspace import commit_all, git, refused, run, write, zmem_proc
from zmem.index.append import insert_entry


def _today() -> str:
    return f"memory/{dt.date.today().isoformat()}.md"


def _refused(res, message: str) -> None:
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith("zmem: ") and message in res.stderr and "hint:" in res.stderr, res.stderr
    assert "Traceback" not in res.output


def _no_union(ws) -> None:
    """A workspace from before `zmem init` wrote .gitattributes: two edits of a log can conflict."""
    (ws / ".gitattributes").unlink()
    commit_all(ws, "no union merge")


def test_refuses_during_a_merge_with_the_log_in_conflict(ws):
    _no_union(ws)
    write(ws, _today(), f"# {dt.date.today()}\n\n## Notes\n\n- base\n")
    commit_all(ws, "base")
    git(ws, "switch", "-q", "-c", "other")
    write(ws, _today(), f"# {dt.date.today()}\n\n## Notes\n\n- theirs\n")
    commit_all(ws, "theirs")
    git(ws, "switch", "-q", "main")
    write(ws, _today(), f"# {dt.date.today()}\n\n## Notes\n\n- ours\n")
    commit_all(ws, "ours")
    git(ws, "merge", "other", check=False)
    conflicted = (ws / _today()).read_text()
    assert "<<<<<<<" in conflicted
    res = run(["-C", str(ws), "append", "during the merge"])
    _refused(res, "a merge is in progress")
    assert "git merge --abort" in res.stderr and "not written" in res.stderr
    assert (ws / _today()).read_text() == conflicted
    assert git(ws, "diff", "--name-only", "--diff-filter=U") == _today()  # still unresolved


def test_refuses_during_a_rebase_in_a_linked_worktree_only(ws, tmp_path):
    wt = tmp_path / "wt"
    git(ws, "worktree", "add", "-q", "-b", "side", str(wt))
    commit_all(wt, "one more")
    git(wt, "rebase", "-x", "false", "HEAD~1", check=False)  # stops with the rebase in progress
    head = git(wt, "rev-parse", "HEAD")
    _refused(run(["-C", str(wt), "append", "during the rebase"]), "a rebase is in progress")
    assert not (wt / _today()).exists() and git(wt, "rev-parse", "HEAD") == head
    # the rebase belongs to the other worktree: here appending works
    assert run(["-C", str(ws), "append", "in the main worktree"]).exit_code == 0


def test_refuses_a_log_left_in_conflict_by_stash_pop(ws):
    _no_union(ws)
    assert run(["-C", str(ws), "append", "first"]).exit_code == 0
    (ws / _today()).write_text((ws / _today()).read_text() + "- stashed\n")
    git(ws, "stash", "-q")
    assert run(["-C", str(ws), "append", "second"]).exit_code == 0
    git(ws, "stash", "pop", check=False)  # a conflict, and no MERGE_HEAD
    before = (ws / _today()).read_text()
    _refused(run(["-C", str(ws), "append", "third"]), f"{_today()} has unresolved conflicts")
    assert (ws / _today()).read_text() == before


def test_detached_head_commits_with_a_warning(ws):
    git(ws, "switch", "-q", "--detach")
    res = run(["-C", str(ws), "append", "on a detached head", "--json"])
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and out["committed"]
    assert f"committed at {out['commit'][:10]} on no branch" in res.stderr
    assert git(ws, "rev-parse", "HEAD") == out["commit"]


def test_git_missing_from_path_writes_nothing(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    _refused(run(["-C", str(ws), "append", "no git"]), "git is not on PATH")
    assert not (ws / _today()).exists()


@pytest.mark.slow
def test_a_huge_note_from_stdin_is_committed(ws):
    res = run(["-C", str(ws), "append", "-", "--json"], input="y" * 4_000_000)
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["committed"]
    assert git(ws, "log", "-1", "--format=%s") == f"zmem append: {_today()}"
    assert git(ws, "status", "--porcelain") == ""


def test_todays_log_as_a_directory_is_an_error(ws):
    (ws / _today()).mkdir(parents=True)
    _refused(run(["-C", str(ws), "append", "x"]), f"{_today()} is a directory")


def test_crlf_log_keeps_its_line_endings(ws):
    old = f"# {dt.date.today()}\r\n\r\n## Notes\r\n\r\n- one\r\n\r\n## Retain\r\n\r\n- W @Ana: likes tea\r\n"
    (ws / _today()).write_bytes(old.encode())
    commit_all(ws)
    assert run(["-C", str(ws), "append", "two\nlines"]).exit_code == 0
    assert (ws / _today()).read_bytes().decode() == old.replace("- one\r\n", "- one\r\n- two\r\n  lines\r\n")


@pytest.mark.parametrize("content, expected", [
    ("# d\r\n", "# d\r\n\r\n## Notes\r\n\r\n- x\r\n"),
    ("# d\r\n\r\n## Retain\r\n\r\n- W: y", "# d\r\n\r\n## Notes\r\n\r\n- x\r\n\r\n## Retain\r\n\r\n- W: y\r\n"),
    ("# d\n\n## Notes\r\n\n- a", "# d\n\n## Notes\r\n\n- a\n- x\n"),  # mixed: existing lines untouched
    ("", "# d\n\n## Notes\n\n- x\n"),
])
def test_insert_entry_line_endings(content, expected):
    new, line = insert_entry(content, "- x\n", "d", retain=False)
    assert new == expected and new.split("\n")[line - 1].rstrip("\r") == "- x"


def test_new_log_gets_the_umask_mode_and_an_existing_one_keeps_its_mode(ws):
    old = os.umask(0o027)
    try:
        assert run(["-C", str(ws), "append", "new file"]).exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((ws / _today()).stat().st_mode) == 0o640
    os.chmod(ws / _today(), 0o604)
    assert run(["-C", str(ws), "append", "again"]).exit_code == 0
    assert stat.S_IMODE((ws / _today()).stat().st_mode) == 0o604


def test_ignored_memory_dir_says_so(ws):
    write(ws, ".gitignore", "memory/\n")
    commit_all(ws, "ignore memory")
    res = run(["-C", str(ws), "append", "ignored note", "--json"])
    assert res.exit_code == 0 and not json.loads(res.stdout)["committed"]
    assert f"{_today()} is ignored by git (.gitignore), so it was written but neither committed nor indexed" in res.stderr
    assert "un-ignore memory/" in res.stderr and "advice.addIgnoredFile" not in res.stderr
    assert "- ignored note" in (ws / _today()).read_text()


def test_state_dir_that_is_a_file_is_a_clear_error(ws):
    import shutil
    shutil.rmtree(ws / ".zmem")
    (ws / ".zmem").write_text("not a directory\n")
    res = run(["-C", str(ws), "append", "a note"])
    assert res.exit_code == 1 and "is not a directory" in res.stderr and "hint:" in res.stderr


# -- a tracked log missing from the work tree (sparse checkout, deleted) is never recreated


def _committed_log(ws) -> str:
    return git(ws, "show", f"HEAD:{_today()}")


def test_sparse_checkout_leaving_out_todays_log_refuses_instead_of_dropping_lines(ws):
    assert run(["-C", str(ws), "append", "first"]).exit_code == 0
    assert run(["-C", str(ws), "append", "second"]).exit_code == 0
    committed = _committed_log(ws)
    git(ws, "sparse-checkout", "set", "--no-cone", "/bank/", "/*.md", "/zmem.toml")
    assert not (ws / _today()).exists()
    head = git(ws, "rev-parse", "HEAD")
    res = run(["-C", str(ws), "append", "third", "--json"])
    _refused(res, f"{_today()} is tracked by git but not in the work tree")
    assert "sparse checkout" in res.stderr and "git sparse-checkout add /memory/" in res.stderr
    assert "Disable this message" not in res.stderr and res.stderr.count("\n") == 2, res.stderr
    assert not (ws / _today()).exists() and git(ws, "rev-parse", "HEAD") == head
    _refused(run(["-C", str(ws), "append", "third", "--no-commit"]), "not in the work tree")
    assert not (ws / _today()).exists()
    git(ws, "sparse-checkout", "disable")
    assert (ws / _today()).read_text() == committed + "\n"  # git() strips the output
    assert run(["-C", str(ws), "append", "fourth"]).exit_code == 0
    bullets = [line for line in _committed_log(ws).splitlines() if line.startswith("- ")]
    assert bullets == ["- first", "- second", "- fourth"]


def test_a_deleted_log_git_still_tracks_is_not_recreated(ws):
    assert run(["-C", str(ws), "append", "first"]).exit_code == 0
    committed = _committed_log(ws)
    (ws / _today()).unlink()
    res = run(["-C", str(ws), "append", "second"])
    _refused(res, f"{_today()} is tracked by git but not in the work tree")
    assert f"git restore {_today()}" in res.stderr
    assert not (ws / _today()).exists()
    git(ws, "rm", "-q", "--", _today())  # a staged deletion: the lines are still in HEAD
    res = run(["-C", str(ws), "append", "second"])
    _refused(res, "its deletion is staged")
    assert not (ws / _today()).exists()
    git(ws, "restore", "--staged", "--worktree", "--", _today())
    assert (ws / _today()).read_text() == committed + "\n"  # git() strips the output
    git(ws, "rm", "-q", "--", _today())
    git(ws, "commit", "-q", "-m", "drop today's log")  # deleted for good: a fresh log is fine
    assert run(["-C", str(ws), "append", "again"]).exit_code == 0
    assert [line for line in _committed_log(ws).splitlines() if line.startswith("- ")] == ["- again"]


def test_git_error_is_the_message_not_its_advice():
    from zmem.git.gitcmd import git_error
    sparse = ("The following paths and/or pathspecs matched paths that exist\n"
              "outside of your sparse-checkout definition, so will not be\nupdated in the index:\n"
              "memory/2025-12-01.md\nhint: If you intend to update such entries, try one of the following:\n"
              "hint: * Use the --sparse option.\nhint: * Disable or modify the sparsity rules.\n"
              'hint: Disable this message with "git config advice.updateSparsePath false"\n')
    assert git_error(sparse) == ("The following paths and/or pathspecs matched paths that exist outside of your "
                                 "sparse-checkout definition, so will not be updated in the index: "
                                 "memory/2025-12-01.md")
    assert git_error("On branch main\nnothing to commit, working tree clean\n") == \
        "nothing to commit, working tree clean"
    assert git_error("hint: some advice\nfatal: the real problem\nhint: more advice\n") == "fatal: the real problem"
    assert git_error("hint: only advice\n") == "hint: only advice"


def test_a_present_log_outside_the_sparse_checkout_keeps_its_lines(ws):
    assert run(["-C", str(ws), "append", "first"]).exit_code == 0
    committed = _committed_log(ws)
    git(ws, "sparse-checkout", "set", "--no-cone", "/bank/", "/*.md", "/zmem.toml")
    (ws / _today()).parent.mkdir(exist_ok=True)
    (ws / _today()).write_text(committed + "\n")  # put back by hand: git may still mark it skip-worktree
    res = run(["-C", str(ws), "append", "second", "--json"])
    assert res.exit_code == 0, res.stderr
    assert "hint:" not in res.stderr and "Disable this message" not in res.stderr, res.stderr
    if not json.loads(res.stdout)["committed"]:
        assert "sparse-checkout definition" in res.stderr
    assert [line for line in (ws / _today()).read_text().splitlines() if line.startswith("- ")] == \
        ["- first", "- second"]


# -- appends racing other committers and other writers


@pytest.mark.slow
def test_appends_racing_a_committing_watcher_all_report_committed(ws, watch):
    import subprocess
    import time
    from helpers.workspace import zmem_exe
    w = watch(ws, "--commit", "--commit-after", "0", "--debounce", "0.1")
    w.ready()
    procs = [subprocess.Popen([zmem_exe(), "-C", str(ws), "append", f"wc {i}", "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(20)]
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        res = json.loads(out)
        # committed by this append or by the watcher first: either way it is in a commit on HEAD
        assert res["committed"] and not res["warnings"] and err == "", (res, err)
        assert f"- wc {i}\n" in git(ws, "show", f"{res['commit']}:{_today()}") + "\n"
        git(ws, "merge-base", "--is-ancestor", res["commit"], "HEAD")
    deadline = time.monotonic() + 3.0  # the watcher's last round: none of its files is "not committed"
    while time.monotonic() < deadline:
        try:
            w.seen.append(w.events.get(timeout=0.2))
        except Exception:  # queue.Empty
            pass
    errors = [e["message"] for e in w.seen if e["event"] == "error"]
    assert errors == [], errors
    assert git(ws, "status", "--porcelain") == ""
    assert all(f"- wc {i}" in _committed_log(ws).splitlines() for i in range(20))


WRITER = """
import os, sys, time
path, stop = sys.argv[1], sys.argv[2]
n = 0
while n < 300 or not os.path.exists(stop):
    with open(path, "a") as f:  # what `echo "- x" >> memory/today.md` does
        f.write(f"- direct {n}\\n")
    n += 1
    time.sleep(0.0005)  # a gap between writes: the appends run among them, not after one burst
print(n)
"""


@pytest.mark.slow
def test_direct_writes_during_appends_are_kept(ws, tmp_path):
    import subprocess
    import sys
    from helpers.workspace import zmem_exe
    # a long log: reading and rewriting it takes a while, as it does for a busy agent's day
    write(ws, _today(), f"# {dt.date.today()}\n\n## Notes\n\n" + "".join(f"- earlier {i}\n" for i in range(3000)))
    commit_all(ws, "a long day")
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(ws / _today()), str(stop)], stdout=subprocess.PIPE,
                              text=True)
    try:
        procs = [subprocess.Popen([zmem_exe(), "-C", str(ws), "append", f"zmem note {i}"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for i in range(10)]
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
    finally:
        stop.touch()
        written = int(writer.communicate(timeout=60)[0])
    lines = (ws / _today()).read_text().splitlines()
    assert sorted(line for line in lines if line.startswith("- direct ")) == sorted(
        f"- direct {n}" for n in range(written))
    assert sorted(line for line in lines if line.startswith("- zmem note ")) == sorted(
        f"- zmem note {i}" for i in range(10))
    assert sum(line.startswith("- earlier ") for line in lines) == 3000


# -- citations of multi-line entries


def test_a_multi_line_append_cites_all_its_lines(ws):
    res = run(["-C", str(ws), "append", "a\nb\nc", "--json"])
    out = json.loads(res.stdout)
    assert (out["line"], out["end_line"], out["citation"]) == (5, 7, f"{_today()}#L5-L7")
    assert (ws / _today()).read_text().splitlines()[4:7] == ["- a", "  b", "  c"]
    got = run(["-C", str(ws), "get", out["citation"], "--json"])
    assert json.loads(got.stdout)["text"] == "- a\n  b\n  c"
    one = json.loads(run(["-C", str(ws), "append", "d", "--json"]).stdout)
    assert (one["line"], one["end_line"], one["citation"]) == (8, 8, f"{_today()}#L8")
    fact = json.loads(run(["-C", str(ws), "append", "--retain", "W", "x\ny", "--json"]).stdout)  # one line
    assert fact["end_line"] == fact["line"] and fact["citation"] == f"{_today()}#L{fact['line']}"
    human = run(["-C", str(ws), "append", "e\nf"])
    assert human.stdout.startswith(f"{_today()}#L9-L10  - e\n  f"), human.stdout


@pytest.mark.slow
def test_mcp_append_cites_all_its_lines(ws):
    pytest.importorskip("mcp")
    import asyncio
    from helpers.mcp_client import call, session

    async def go():
        async with session(ws) as s:
            return await call(s, "memory_append", text="one\ntwo")
    out = asyncio.run(go())
    assert (out["line"], out["end_line"], out["citation"]) == (5, 6, f"{_today()}#L5-L6")


@pytest.mark.parametrize("text", ["a\0b", "bell\x07", "esc \x1b[31m red", "vt\x0bx"])
@pytest.mark.slow
def test_append_refuses_control_characters_and_writes_nothing(ws, text):
    assert zmem_proc("-C", str(ws), "append", "the aardvark digs at night").returncode == 0
    before = (ws / _today()).read_bytes()
    head = git(ws, "rev-parse", "HEAD")
    refused(zmem_proc("-C", str(ws), "append", "-", input=text), "control character")
    if "\0" not in text:  # argv cannot carry a NUL
        refused(zmem_proc("-C", str(ws), "append", text), "control character")
        refused(zmem_proc("-C", str(ws), "append", "ok", "--retain", "W", "--entity", text), "control character")
    assert (ws / _today()).read_bytes() == before
    assert git(ws, "rev-parse", "HEAD") == head and git(ws, "status", "--porcelain") == ""
    out = json.loads(zmem_proc("-C", str(ws), "recall", "aardvark", "--json").stdout)
    assert [r["path"] for r in out["results"]] == [_today()]  # the log is still a note


@pytest.mark.slow
def test_append_keeps_tabs_and_newlines(ws):
    proc = zmem_proc("-C", str(ws), "append", "-", "--json", input="col\tumn\r\nsecond line\n")
    assert proc.returncode == 0, proc.stderr
    assert "- col\tumn\n  second line\n" in (ws / _today()).read_text()


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
