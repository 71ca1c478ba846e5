"""`zmem facts` prints the newest 50 facts by default (a terminal and a pipe alike), says on stderr how
many more pass its filters, and prints more with --limit N or every one with --all; --json is bounded
the same way and carries `total`."""
from __future__ import annotations

import json

from helpers.workspace import commit_all, run, write


def _sixty_facts(ws) -> None:
    """60 facts about Peter, one a day from 2025-01-01 (the newest last), and one about Ana."""
    for day in range(1, 61):
        date = f"2025-{1 + (day - 1) // 30:02d}-{1 + (day - 1) % 30:02d}"
        write(ws, f"memory/{date}.md", f"# {date}\n\n## Retain\n\n- W @Peter: Fact number {day}.\n")
    write(ws, "memory/2024-12-31.md", "# 2024-12-31\n\n## Retain\n\n- W @Ana: Ana's fact.\n")
    commit_all(ws)


def _table_rows(out: str) -> list[str]:
    return out.splitlines()[2:]  # below the header and its rule


def test_the_newest_fifty_then_a_note_of_how_many_more(ws):
    _sixty_facts(ws)
    res = run(["-C", str(ws), "facts", "--entity", "Peter"])
    assert res.exit_code == 0
    rows = _table_rows(res.stdout)
    assert len(rows) == 50 and "Fact number 60." in rows[0] and "Fact number 11." in rows[-1]
    assert res.stderr == "10 more facts (the newest 50 of 60 shown): --limit N or --all shows more\n"
    res = run(["-C", str(ws), "facts"])  # every entity: 61 pass
    assert len(_table_rows(res.stdout)) == 50 and "11 more facts (the newest 50 of 61 shown)" in res.stderr


def test_limit_and_all_print_more(ws):
    _sixty_facts(ws)
    res = run(["-C", str(ws), "facts", "--entity", "Peter", "--limit", "55"])
    assert len(_table_rows(res.stdout)) == 55 and "5 more facts (the newest 55 of 60 shown)" in res.stderr
    res = run(["-C", str(ws), "facts", "--all", "--format", "md"])
    assert res.exit_code == 0 and len(res.stdout.splitlines()) == 61 and res.stderr == ""
    res = run(["-C", str(ws), "facts", "--entity", "Peter", "--since", "2025-02-25"])  # 6 pass: no note
    assert len(_table_rows(res.stdout)) == 6 and res.stderr == ""


def test_json_is_bounded_alike_and_says_the_total(ws):
    _sixty_facts(ws)
    res = run(["-C", str(ws), "facts", "--entity", "Peter", "--json"])
    out = json.loads(res.stdout)
    assert (len(out["facts"]), out["total"]) == (50, 60)
    assert out["facts"][0]["text"] == "Fact number 60."
    out = json.loads(run(["-C", str(ws), "facts", "--entity", "Peter", "--json", "--all"]).stdout)
    assert (len(out["facts"]), out["total"]) == (60, 60)
    out = json.loads(run(["-C", str(ws), "facts", "--entity", "Ana", "--json"]).stdout)
    assert (len(out["facts"]), out["total"]) == (1, 1)


def test_all_and_limit_together_is_a_usage_error(ws):
    res = run(["-C", str(ws), "facts", "--all", "--limit", "3"])
    assert res.exit_code == 2 and "--all and --limit exclude each other" in res.stderr
