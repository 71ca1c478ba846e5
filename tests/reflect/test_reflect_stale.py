"""`zmem reflect` after facts move, are retracted or are not committed yet, in real git repositories:
entity pages and bank/opinions.md must cite only lines that hold the fact in a commit, and retracted
evidence must stop counting."""
from __future__ import annotations

import re

import pytest

from helpers.workspace import RETAIN, commit_all, get_text, git, reflect_json, run, run_json, write

from zmem.text import opinions as op_mod


def _opinion(root) -> dict:
    (op,) = run_json(["-C", str(root), "opinions", "--json"])[0]["opinions"]
    return op


def _unchanged(root):
    """A second run and a from-scratch preview change nothing."""
    again, _ = reflect_json(root)
    assert again["files"] == [] and again["commit"] is None
    dry = run(["-C", str(root), "reflect", "--since", "all", "--dry-run"])
    assert dry.exit_code == 0 and dry.stdout == "nothing to change\n", dry.stdout


def _edit(root, rel, fn, message, date):
    path = root / rel
    path.write_text(fn(path.read_text()))
    commit_all(root, message, date=date)


DAY = ("# 2025-11-24\n\n## Retain\n"
       "- W @Peter: Lives in Lisbon and works on warelay.\n"      # L4
       "- O(c=0.9) @Peter: Prefers concise replies on WhatsApp.\n"  # L5
       "- W @Ana: Sings fado.\n")                                 # L6


def test_a_shift_and_a_retraction_redo_pages_and_re_cite_opinions(ws):
    write(ws, "memory/2025-11-24.md", DAY)
    commit_all(ws, "day", date="2025-11-24T10:00:00+00:00")
    reflect_json(ws)
    peter = (ws / "bank/entities/Peter.md").read_text()
    assert "Lives in Lisbon and works on warelay. — memory/2025-11-24.md#L4" in peter
    assert "Sings fado." in (ws / "bank/entities/Ana.md").read_text()

    # two lines inserted above (every fact moves down by 2), then two facts retracted
    _edit(ws, "memory/2025-11-24.md", lambda t: t.replace("## Retain\n", "Met at the office.\n\n## Retain\n"),
          "shift", "2025-11-25T10:00:00+00:00")
    _edit(ws, "memory/2025-11-24.md", lambda t: t.replace("- W @Peter: Lives in Lisbon and works on warelay.\n", "")
          .replace("- W @Ana: Sings fado.\n", ""), "retract", "2025-11-26T10:00:00+00:00")
    res, _ = reflect_json(ws)
    assert res["new_facts"] == 0 and res["commit"]
    assert res["files"] == ["bank/entities/Ana.md", "bank/entities/Peter.md", "bank/opinions.md"]

    peter = (ws / "bank/entities/Peter.md").read_text()
    assert "Lisbon" not in peter
    assert "Prefers concise replies on WhatsApp. — memory/2025-11-24.md#L6" in peter
    assert "O(c=0.9) @Peter: Prefers concise replies on WhatsApp." in get_text(ws, "memory/2025-11-24.md#L6")
    # an entity whose only fact was retracted looks like any page with no facts
    ana = (ws / "bank/entities/Ana.md").read_text()
    assert "### Facts\n- (none)\n" in ana and "fado" not in ana

    op = _opinion(ws)
    assert op["confidence"] == 0.9
    assert [(e["source"], e["retracted"]) for e in op["evidence"]] == [("memory/2025-11-24.md#L6", False)]

    hits = run_json(["-C", str(ws), "recall", "Lisbon warelay", "--json"])[0]["results"]
    assert not any("Lives in Lisbon" in (h.get("snippet") or h.get("text") or "") for h in hits)
    _unchanged(ws)


@pytest.mark.slow
def test_retracted_evidence_stops_counting_and_counts_again_when_restored(ws):
    for day, body in (("2025-11-24", "- O(c=0.6) @Peter: Prefers concise replies on WhatsApp.\n"),
                      ("2025-11-25", "- O(c=0.9) @Peter: prefers concise replies on WhatsApp!\n"),
                      ("2025-11-26", "- O(c=0.9) @Peter: No longer prefers concise replies on WhatsApp.\n")):
        write(ws, f"memory/{day}.md", f"# {day}\n\n## Retain\n{body}")
        commit_all(ws, f"log {day}", date=f"{day}T10:00:00+00:00")
        reflect_json(ws)
    assert _opinion(ws)["confidence"] == 0.49  # 0.60 -> 0.67 -> 0.49 (README's worked example)
    support_commit = git(ws, "log", "--format=%H", "-1", "--", "memory/2025-11-25.md")

    support = "- O(c=0.9) @Peter: prefers concise replies on WhatsApp!\n"
    _edit(ws, "memory/2025-11-25.md", lambda t: t.replace(support, ""), "retract the support",
          "2025-11-27T10:00:00+00:00")
    res, _ = reflect_json(ws)
    (o,) = res["opinions"]
    without = op_mod.update(0.6, 0.9, contradicts=True)  # as if the support had never been applied
    assert (o["before"], o["after"]) == (0.49, without) and without == 0.44
    op = _opinion(ws)
    assert op["confidence"] == without
    retracted = op["evidence"][1]
    assert retracted["retracted"] and retracted["relation"] == "supports"
    # kept for the record, cited where it last was in a commit: that citation still reads the fact
    assert retracted["source"] == f"memory/2025-11-25.md@{support_commit[:10]}#L4"
    assert "prefers concise replies on WhatsApp!" in get_text(ws, retracted["source"])
    assert [e["retracted"] for e in op["evidence"]] == [False, True, False]
    assert "retracted memory/2025-11-25.md@" in git(ws, "log", "-1", "--format=%B")
    _unchanged(ws)

    # the same line back: the evidence counts again, cited where it is now
    git(ws, "revert", "--no-edit", "HEAD~1")  # HEAD is the reflect commit; HEAD~1 the retraction
    res, _ = reflect_json(ws)
    assert res["opinions"][0]["after"] == 0.49
    op = _opinion(ws)
    assert [(e["source"], e["retracted"]) for e in op["evidence"]][1] == ("memory/2025-11-25.md#L4", False)
    _unchanged(ws)

    # every fact behind it retracted: it stays for the record at 0.00, and the entity page drops it
    for day in ("2025-11-24", "2025-11-25", "2025-11-26"):
        write(ws, f"memory/{day}.md", f"# {day}\n")
    commit_all(ws, "retract all", date="2025-11-28T10:00:00+00:00")
    reflect_json(ws)
    op = _opinion(ws)
    assert op["confidence"] == 0.0 and all(e["retracted"] for e in op["evidence"])
    page = (ws / "bank/entities/Peter.md").read_text()
    assert "### Opinions" not in page and "### Facts\n- (none)\n" in page
    _unchanged(ws)


def test_a_confidence_set_by_hand_is_kept_with_a_warning(ws):
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n## Retain\n- O(c=0.6) @Peter: Prefers tea.\n")
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Retain\n- O(c=0.9) @Peter: Prefers tea!\n")
    held = commit_all(ws, "logs", date="2025-11-25T10:00:00+00:00")
    reflect_json(ws)
    text = (ws / "bank/opinions.md").read_text()
    assert "- confidence: 0.67\n" in text
    write(ws, "bank/opinions.md", text.replace("- confidence: 0.67\n", "- confidence: 0.95\n"))
    commit_all(ws, "I am sure", date="2025-11-26T10:00:00+00:00")
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n")
    commit_all(ws, "retract", date="2025-11-27T10:00:00+00:00")
    res, err = reflect_json(ws)
    assert "confidence 0.95 was set by hand, so reflect kept it" in err and "gives 0.60" in err
    # the person's number stays; only the evidence line changed: marked retracted, cited where it was
    expected = text.replace("- confidence: 0.67\n", "- confidence: 0.95\n").replace(
        "memory/2025-11-25.md#L4", f"memory/2025-11-25.md@{held[:10]}#L4").replace(
        "c=0.90): Prefers tea!", "c=0.90, retracted): Prefers tea!")
    assert (ws / "bank/opinions.md").read_text() == expected and expected != text
    _unchanged(ws)


def test_uncommitted_facts_are_never_cited(ws):
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n## Retain\n- W @Peter: Lives in Lisbon.\n")  # L4
    commit_all(ws, "day 1", date="2025-11-24T10:00:00+00:00")
    reflect_json(ws)
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Retain\n- W @Peter: Visited Porto.\n")   # L4
    commit_all(ws, "day 2", date="2025-11-25T10:00:00+00:00")
    # not committed: a line inserted above Peter's committed fact (it moves in the working tree only),
    # and two staged facts
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\nA draft note.\n\n## Retain\n- W @Peter: Lives in Lisbon.\n")
    with open(ws / "memory/2025-11-25.md", "a") as f:
        f.write("- W @A1: staged fact.\n- W @Peter: Not committed yet.\n")
    git(ws, "add", "memory/2025-11-25.md")

    dry = run(["-C", str(ws), "reflect", "--dry-run"])
    warning = ("3 uncommitted fact changes in 2 files (memory/2025-11-24.md, memory/2025-11-25.md) left for a "
               "later run: reflect cites committed lines only; commit, then run reflect again")
    assert dry.exit_code == 0 and warning in dry.stderr and "A1" not in dry.stdout
    res, err = reflect_json(ws)
    assert warning in err and res["new_facts"] == 1 and res["files"] == ["bank/entities/Peter.md"]
    assert not (ws / "bank/entities/A1.md").exists()
    page = (ws / "bank/entities/Peter.md").read_text()
    assert "Not committed yet" not in page
    cited = re.findall(r"(memory/[\d-]+\.md)#L(\d+)", page)
    assert sorted(set(cited)) == [("memory/2025-11-24.md", "4"), ("memory/2025-11-25.md", "4")]
    for rel, line in cited:  # each cited line holds its fact in the commit reflect made
        committed = git(ws, "show", f"HEAD:{rel}").splitlines()[int(line) - 1]
        assert committed.startswith("- W @Peter: ") and committed[len("- W @Peter: "):] in page

    # once committed they are used, at the lines they have then
    commit_all(ws, "commit the rest", date="2025-11-26T10:00:00+00:00")
    res, err = reflect_json(ws)
    assert "uncommitted" not in err and res["new_facts"] == 2
    assert "staged fact. — memory/2025-11-25.md#L5" in (ws / "bank/entities/A1.md").read_text()
    page = (ws / "bank/entities/Peter.md").read_text()
    assert "Lives in Lisbon. — memory/2025-11-24.md#L6" in page
    assert "Not committed yet. — memory/2025-11-25.md#L6" in page
    assert "Not committed yet." in get_text(ws, "memory/2025-11-25.md#L6")
    _unchanged(ws)


def test_opinions_parse_and_render_retracted_evidence():
    text = ("# Opinions\n\n## Likes tea.\n- entities: @Ana\n- confidence: 0.60\n- evidence:\n"
            "  - supports memory/a.md@1a2b3c4d5e#L4 (fact 0123456789, c=0.90, retracted): Likes tea.\n"
            "  - supports memory/b.md#L3 (fact abcdef0123, c=0.60): likes tea\n")
    parsed = op_mod.parse(text)
    (o,) = parsed.opinions
    assert parsed.warnings == [] and [e.retracted for e in o.evidence] == [True, False]
    assert op_mod.derive(o.evidence) == 0.6 and o.follows_evidence and not o.retracted
    assert parsed.render({0}) == text and parsed.render(set(), {0}) == text  # round trip
    o.evidence[1].retracted = True
    o.confidence = op_mod.derive(o.evidence)
    assert o.retracted and o.confidence == 0.0
    assert parsed.render(set(), {0}) == text.replace("0.60\n", "0.00\n").replace("c=0.60)", "c=0.60, retracted)")


def test_reflect_says_evidence_was_re_cited_when_only_a_line_moved(ws):
    write(ws, "memory/2025-11-26.md", RETAIN.format(day="2025-11-26", facts="- O(c=0.8) @Peter: Prefers tea."))
    commit_all(ws, "opinion")
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    write(ws, "memory/2025-11-26.md", "# 2025-11-26\n\n- a note above\n\n## Retain\n\n- O(c=0.8) @Peter: Prefers tea.\n")
    commit_all(ws, "shift")
    res = run(["-C", str(ws), "reflect"])
    assert res.exit_code == 0 and "opinion c 0.80, evidence re-cited: Prefers tea." in res.stdout, res.stdout
