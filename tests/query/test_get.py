"""`zmem get` refuses what is not a memory file with one clear line and a hint: paths that escape the
workspace, symlinks, other files, names too long for the file system, an empty path, bad line ranges."""
from __future__ import annotations

import os

from helpers.workspace import run, user_error, write

LONG = "a" * 300


def test_get_and_blame_of_a_name_too_long_for_the_file_system_are_no_such_file(ws):
    for args in (["get", f"memory/{LONG}.md"], ["get", f"memory/{LONG}/x.md"], ["blame", f"memory/{LONG}.md#L1"],
                 ["get", f"memory/{LONG}.md@HEAD"], ["get", f"{ws}/memory/{LONG}.md"]):
        err = user_error(run(["-C", str(ws), *args]))
        assert "no such memory file" in err or "does not exist at" in err, (args, err)
    assert "too long" in user_error(run(["-C", str(ws), "get", f"memory/{LONG}.md"]))
    assert "workspace directory does not exist" in user_error(run(["-C", str(ws / LONG), "status"]))


def test_get_of_an_empty_path_or_the_workspace_itself_says_so(ws):
    err = user_error(run(["-C", str(ws), "get", ""]))
    assert "the path is empty" in err and "escapes" not in err
    for path in (".", "./", str(ws), "memory/.."):
        err = user_error(run(["-C", str(ws), "get", path]))
        assert "is the workspace directory" in err or "escapes" in err and path == "memory/..", (path, err)
    assert "is the workspace directory" in user_error(run(["-C", str(ws), "get", "."]))
    assert "escapes the workspace" in user_error(run(["-C", str(ws), "get", "../x.md"]))


def test_get_refusals_are_clear(ws, tmp_path):
    write(tmp_path, "outside.md", "x\n")
    write(ws, "README.md", "x\n")
    write(ws, "memory/x.txt", "x\n")
    os.symlink(ws / "memory/2025-11-24.md", ws / "memory/link.md")
    for path, word in [("../outside.md", "escapes"), (str(tmp_path / "outside.md"), "outside"),
                       ("memory/link.md", "symlink"), ("memory/x.txt", "Markdown"), ("README.md", "not a memory file"),
                       ("memory/nope.md", "no such"), ("memory/2025-11-24.md#Lx", "bad line range")]:
        res = run(["-C", str(ws), "get", path])
        assert res.exit_code == 1 and word in res.stderr and "hint:" in res.stderr, (path, res.stderr)
        assert "Traceback" not in res.output
    res = run(["-C", str(ws), "get", "memory/2025-11-24.md", "--from", "999"])
    assert res.exit_code == 1 and "hint:" in res.stderr
    assert run(["-C", str(ws), "get", "memory/2025-11-24.md#L3-L5"]).stdout == \
        "## Notes\n\n- Set up the gateway on the Mac Studio.\n"


def test_get_refuses_a_git_ignored_memory_file_as_recall_leaves_it_out(ws):
    """A note the person keeps out of git (.gitignore) is not memory: recall never shows it, so get
    (and the MCP server's memory_get, through Memory.get) must not serve it either."""
    from zmem import Memory, ZmemError
    write(ws, "memory/private.md", "- the vault code is tangerine\n")
    write(ws, "memory/secret/notes.md", "- tangerine again\n")
    with open(ws / ".gitignore", "a") as f:
        f.write("memory/private.md\nmemory/secret/\n")
    assert "tangerine" not in run(["-C", str(ws), "recall", "tangerine"]).stdout
    for path in ("memory/private.md", "memory/secret/notes.md", "memory/private.md#L1-L1"):
        res = run(["-C", str(ws), "get", path])
        assert res.exit_code == 1 and "is ignored by git" in res.stderr and "git check-ignore -v" in res.stderr, res.stderr
        assert "tangerine" not in res.output and "Traceback" not in res.output
    with Memory.open(ws) as memory:
        try:
            memory.get("memory/private.md")
            raise AssertionError("Memory.get served an ignored file")
        except ZmemError as e:
            assert "ignored by git" in str(e)
        assert "Set up the gateway" in memory.get("memory/2025-11-24.md").text


def test_a_note_whose_name_holds_md_at_or_a_newline_is_read_back_from_its_citation(ws):
    """`memory/a.md@x.md` is one file: its citation was read as a.md at revision x.md (a line of
    another file, when a branch of that name exists); a newline in a name made it a bad line range."""
    from helpers.workspace import commit_all, git, recall_json
    write(ws, "memory/a.md", "- decoy one\n- decoy two\n")
    write(ws, "memory/a.md@x.md", "- title\n- the zanzibar ferry leaves at nine\n")
    write(ws, "memory/new\nline.md", "- title\n- the okapi eats leaves\n")
    commit_all(ws)
    git(ws, "branch", "x.md")
    for query, line in (("zanzibar", "- the zanzibar ferry leaves at nine"), ("okapi", "- the okapi eats leaves")):
        hit = recall_json(ws, query)["results"][0]
        res = run(["-C", str(ws), "get", hit["citation"]])
        assert res.exit_code == 0 and res.stdout == line + "\n", (hit["citation"], res.stdout, res.stderr)


def test_a_citation_that_runs_past_the_end_is_refused_not_cut_short(ws):
    """`#L4-L5` of a 4-line file printed one line, exit 0, as if that were what was cited; a window
    (--from/--lines) still stops at the end as before."""
    write(ws, "memory/2025-12-01.md", "# 2025-12-01\n\n- one\n- two\n")
    res = run(["-C", str(ws), "get", "memory/2025-12-01.md#L4-L5"])
    assert res.exit_code == 1 and res.stderr.splitlines()[0] == \
        "zmem: memory/2025-12-01.md has 4 lines; the citation's lines 4-5 run past the end"
    assert res.stderr.splitlines()[1].startswith("hint: the file changed since it was cited")
    res = run(["-C", str(ws), "get", "memory/2025-12-01.md", "--from", "4", "--lines", "5"])
    assert res.exit_code == 0 and res.stdout == "- two\n"
