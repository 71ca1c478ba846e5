"""A memory file whose name is not UTF-8 (bytes from another system's encoding) is not a memory file:
the index and every recall go on without it, on the full scan, the stat snapshot and the git diff
alike, and a full scan names it in a warning. Such a name crashed every catch-up (exit 3) since neither git's library nor SQLite takes it."""
from __future__ import annotations

import json
import os

import pytest

from helpers.workspace import commit_all, git, recall_json, run


def _write_latin1_name(root, name: bytes, text: str) -> None:
    try:
        with open(os.path.join(os.fsencode(root), b"memory", name), "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:  # a file system that takes only UTF-8 names (APFS)
        pytest.skip(f"no non-UTF-8 file names here: {e}")


def test_a_name_that_is_not_utf8_is_left_out_and_nothing_else_breaks(ws):
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    _write_latin1_name(ws, b"caf\xe9.md", "# x\n\n- zebrafish in a latin-1 name\n")
    commit_all(ws, "a latin-1 name")  # the git diff since the indexed commit names it
    for args in (["index", "-q"], ["index", "--full", "-q"]):
        res = run(["-C", str(ws), *args])
        assert res.exit_code == 0, res.output + res.stderr
    _write_latin1_name(ws, b"qu\xf6kka.md", "# y\n\n- zebrafish again\n")  # the stat snapshot sees it
    assert recall_json(ws, "gateway")["results"]
    assert recall_json(ws, "zebrafish")["results"] == []


def test_a_full_scan_says_which_file_it_left_out_for_its_name(ws):
    """Left out, not lost silently: the full scan names the file (its other bytes as \\xNN) and says why."""
    _write_latin1_name(ws, b"caf\xe9.md", "# x\n\n- zebrafish in a latin-1 name\n")
    res = run(["-C", str(ws), "index", "--full", "--json"])
    assert res.exit_code == 0, res.stderr
    warning = "memory/caf\\xe9.md: skipped: its name is not UTF-8"
    assert any(w.startswith(warning) and "rename it" in w for w in json.loads(res.stdout)["warnings"])
    assert f"warning: {warning}" in run(["-C", str(ws), "index", "--full"]).stderr


def test_index_without_commits_says_so_in_full(tmp_path):
    git(tmp_path, "init", "-q")  # a repository that was there: init commits nothing in it
    assert run(["init", "--no-hooks", str(tmp_path)]).exit_code == 0
    res = run(["-C", str(tmp_path), "index", "--full"])
    assert res.exit_code == 0 and res.stdout.startswith("index rebuilt at (no commits): "), res.stdout


def test_a_name_with_a_backslash_is_left_out_with_a_warning(ws):
    """A citation of `memory/back\\slash.md` was read by `zmem get` as memory/back/slash.md: a hit
    whose lines nobody could read back. Left out like a name that is not UTF-8, and said so."""
    (ws / "memory" / "back\\slash.md").write_text("# x\n\n- the wombat burrow\n")
    commit_all(ws, "a backslash")
    res = run(["-C", str(ws), "index", "--full", "--json"])
    assert res.exit_code == 0, res.stderr
    assert "memory/back\\slash.md: skipped: its name has a backslash, which a citation reads as `/`; " \
           "rename it to index it" in json.loads(res.stdout)["warnings"]
    assert recall_json(ws, "wombat")["results"] == [] and recall_json(ws, "gateway")["results"]
