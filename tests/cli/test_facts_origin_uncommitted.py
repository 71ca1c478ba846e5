"""`zmem facts --origin` names a fact not committed yet "uncommitted" in its table's commit column
(the commit id's first ten characters were cut from the word too: "uncommitte")."""
from __future__ import annotations

from helpers.workspace import run, write


def test_an_uncommitted_fact_is_uncommitted(ws):
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- W @Peter: Moved to Porto.\n")
    res = run(["-C", str(ws), "facts", "--origin"])
    assert res.exit_code == 0, res.output + res.stderr
    row = next(line for line in res.stdout.splitlines() if "Moved to Porto." in line)
    assert " uncommitted " in row
