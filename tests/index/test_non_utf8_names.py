"""A memory file whose name is not UTF-8 (bytes from another system's encoding) is not a memory file:
the index and every recall go on without it, on the full scan, the stat snapshot and the git diff
alike. Such a name crashed every catch-up (exit 3) since neither git's library nor SQLite takes it."""
from __future__ import annotations

import os

import pytest

from helpers.workspace import commit_all, recall_json, run


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
