"""What a hostile pass over reflect found. A page that quotes reflect's markers, in its prose or in a
fenced example, keeps that text: only a marker on a line of its own, outside code fences, opens or closes
reflect's block (reflect took a quote for its block and wrote over the hand-written lines between, for
good). `--since DATE` sees every commit committed after DATE, whatever the commits on top say."""
from __future__ import annotations

from helpers.workspace import commit_all, git, run, write

PAGE = ("# Peter\n\nNote to self: reflect writes between `<!-- zmem:begin -->` and\n"
        "the line `<!-- zmem:end -->`, so keep my notes outside.\n\n"
        "```\n<!-- zmem:begin (written by `zmem reflect`; edits inside this block are replaced on the next run) -->\n"
        "example block\n<!-- zmem:end -->\n```\n\n"
        "Peter's birthday is 3 March (hand-written, must survive).\n")


def test_quoted_and_fenced_markers_are_a_persons_text(ws):
    write(ws, "memory/2025-11-01.md", "# 2025-11-01\n\n## Retain\n\n- W @Peter: Lives in Lisbon.\n")
    write(ws, "bank/entities/Peter.md", PAGE)
    commit_all(ws, "a page that quotes the markers")
    res = run(["-C", str(ws), "reflect"])
    assert res.exit_code == 0, res.stderr
    page = (ws / "bank/entities/Peter.md").read_text()
    assert page.startswith(PAGE) and "- 2025-11-01 · world: Lives in Lisbon." in page[len(PAGE):]
    head = git(ws, "rev-parse", "HEAD")
    assert run(["-C", str(ws), "reflect", "--since", "all"]).exit_code == 0  # nothing new: nothing changes
    assert git(ws, "rev-parse", "HEAD") == head and (ws / "bank/entities/Peter.md").read_text() == page
    status = run(["-C", str(ws), "doctor"])
    assert "markers are unbalanced" not in status.stdout + status.stderr
    hit = run(["-C", str(ws), "entity", "Peter"]).stdout
    assert "keep my notes outside" in hit and "example block" in hit  # the page's own text, as written


def test_reflect_since_a_date_sees_a_fact_committed_before_a_backdated_commit(ws):
    """git log --since stops walking at the first older commits: a backdated commit on top (a rebase, a
    clock set back) hid the newer commit behind it, and reflect --since said "no new facts"."""
    from helpers.workspace import reflect_json
    for day, fact in (("2025-11-01", "First fact"), ("2025-11-10", "Tenth fact"), ("2025-11-07", "Backdated fact")):
        write(ws, f"memory/{day}.md", f"# {day}\n\n## Retain\n\n- W @Peter: {fact}.\n")
        commit_all(ws, day, date=f"{day}T09:00:00+00:00")
    res, _ = reflect_json(ws, "--since", "2025-11-08", "--dry-run")
    assert res["new_facts"] == 1 and res["evidence"] == ["memory/2025-11-10.md#L5"], res
