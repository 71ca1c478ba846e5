"""Recall ranking on a realistic workspace: a common name in most notes, its entity page, its facts,
and notes about someone else in the same city (issue 17: `recall Peter` scored every hit ~1e-6 and
missed the page; "Peter Porto" ranked `W @Peter: Moved to Porto` 5th)."""
from __future__ import annotations

import datetime as dt

import pytest

from helpers.workspace import commit_all, get_text, recall_json, run, write

ROUTINE = [
    "- Call with Peter about the warelay release; he wants it before Friday.",
    "- Peter reviewed the gateway config and asked for fewer log lines.",
    "- Sent Peter the weekly summary of the relay errors.",
    "- Peter and I went through the backlog of the notes repository.",
    "- Peter asked for shorter answers on WhatsApp again.",
    "- Lunch with Peter; talked about the trip planning tool.",
    "- Peter's laptop needed a new SSH key for the Mac Studio.",
]
OTHER = [
    "- Rebuilt the search index after the schema change.",
    "- The nightly backup now runs at 03:00.",
    "- Fixed a flaky test in the relay reconnect logic.",
    "- Cleaned up old branches in the gateway repository.",
]
PORTO = {  # notes about someone else in Porto (Peter is in some of these files too, elsewhere)
    7: ["- Marta moved to Porto in the spring; she loves the river.", "- Ana visited Marta in Porto."],
    15: ["- Marta says Porto is cheaper than Lisbon for the office.", "- Booked Marta's train to Porto."],
    22: ["- Porto: Marta found a flat near Bolhão."],
    30: ["- Ana is back from Porto with wine for everyone."],
}
PETER_PORTO_DAY = 26  # the day of the fact `- W @Peter: Moved to Porto.`, in a long note


def realistic_workspace(root):
    """39 files: 38 daily logs over two months (Peter in 27 of them) and bank/entities/Peter.md."""
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    start = dt.date(2025, 9, 1)
    with_peter = 0
    for i in range(38):
        day = (start + dt.timedelta(days=i * 3 // 2)).isoformat()
        lines = [f"# {day}", "", "## Notes", ""]
        if i % 7 not in (3, 6):  # Peter in most notes
            lines += [ROUTINE[i % len(ROUTINE)], ROUTINE[(i + 3) % len(ROUTINE)]]
            with_peter += 1
        lines += [OTHER[i % len(OTHER)], *PORTO.get(i, [])]
        retain = []
        if i == PETER_PORTO_DAY:  # a long, busy day: BM25's length normalization buries it
            lines += [OTHER[(i + k) % len(OTHER)].replace("- ", f"- ({k}) ") for k in range(12)]
            retain = ["- B @warelay: Shipped the relay reconnect fix.", "- W @Peter: Moved to Porto.",
                      "- O(c=0.7) @Peter: Prefers calls in the morning."]
        elif i % 5 == 0:
            retain = [f"- O(c=0.8) @Peter: Likes the weekly summary ({day})."]
        elif i in (7, 22):
            retain = ["- W @Marta: Lives in Porto."]
        elif i == 11:
            retain = ["- W @[José Silva]: Runs the Lisbon office."]
        if retain:
            lines += ["", "## Retain", "", *retain]
        write(root, f"memory/{day}.md", "\n".join(lines) + "\n")
    write(root, "bank/entities/Peter.md",
          "# Peter\n\nThe human I work for. Runs the warelay project; based in Lisbon until the autumn.\n\n"
          "## Working with him\n\n- Short answers on WhatsApp.\n- Calls in the morning.\n")
    commit_all(root, "two months of notes")
    assert with_peter >= 26
    return root


@pytest.fixture
def people(tmp_path):
    return realistic_workspace(tmp_path / "ws")


def test_a_common_name_puts_its_entity_page_then_its_facts_first(people):
    out = recall_json(people, "Peter", "--k", "6")
    hits = out["results"]
    assert hits[0]["path"] == "bank/entities/Peter.md", [h["citation"] for h in hits]
    for h in hits[1:]:  # then the notes' Retain facts about Peter, their lines cited
        assert "@Peter" in h["snippet"] and h["heading"].endswith("> Retain"), h
    # scores say something: the page and the facts well above a plain mention (~1e-6 before)
    assert all(h["score"] >= 0.5 for h in hits), [h["score"] for h in hits]
    assert hits[0]["score"] > hits[1]["score"]
    # equal scores: the newest fact first
    days = [h["day"] for h in hits[1:] if h["score"] == hits[1]["score"]]
    assert days == sorted(days, reverse=True)
    for h in hits:
        assert get_text(people, h["citation"]).rstrip("\n") == h["snippet"]


def test_a_name_and_another_word_put_the_fact_with_both_first(people):
    hits = recall_json(people, "Peter Porto")["results"]
    top = hits[0]
    assert top["snippet"].startswith("- W @Peter: Moved to Porto."), [h["citation"] for h in hits]
    fact_line = next(n for n, line in enumerate((people / top["path"]).read_text().split("\n"), 1)
                     if "Moved to Porto" in line)
    assert top["start_line"] == fact_line and top["citation"].startswith(f"{top['path']}#L{fact_line}-")
    # then Peter's page, before the notes about Marta in Porto
    assert hits[1]["path"] == "bank/entities/Peter.md"
    assert top["score"] > hits[1]["score"] > max(h["score"] for h in hits[2:])


@pytest.mark.parametrize("query", ["peter", "PETER", "@Peter", "Peter's"])
def test_the_name_in_any_case_or_form(people, query):
    assert recall_json(people, query)["results"][0]["path"] == "bank/entities/Peter.md"


def test_a_multiword_name_without_accents(people):
    top = recall_json(people, "jose silva office")["results"][0]
    assert "@[José Silva]: Runs the Lisbon office." in top["snippet"]
    assert top["score"] >= 0.9


def test_entity_hits_respect_the_filters(people):
    hits = recall_json(people, "Peter", "--path", "memory/**", "--since", "2025-10-01")["results"]
    assert hits and all(h["path"].startswith("memory/") and h["day"] >= "2025-10-01" for h in hits)
    assert all(h["path"] != "bank/entities/Peter.md" for h in recall_json(people, "Peter", "--since", "7d")["results"])


def test_a_query_naming_no_entity_ranks_as_before(people):
    hits = recall_json(people, "the river", "--explain")["results"]
    assert hits[0]["snippet"] == "- Marta moved to Porto in the spring; she loves the river.", hits[0]
    assert hits[0]["score"] == hits[0]["explain"]["bm25_score"] and "entity" not in hits[0]["explain"]


def test_explain_says_which_hits_are_about_the_entity(people):
    hits = recall_json(people, "Peter Porto", "--explain", "--k", "20")["results"]
    assert hits[0]["explain"]["entity"] == 0.9  # the fact holds both query units
    assert hits[1]["explain"]["entity"] == 0.8  # the page: Peter, not Porto
    facts = [h for h in hits[2:] if h["snippet"].startswith(("- W @", "- O(", "- B @"))]
    notes = [h for h in hits[2:] if h not in facts]  # Marta's Porto notes: after every entity hit
    assert facts and notes and min(h["score"] for h in facts) > max(h["score"] for h in notes)
    # a note naming Peter on one line and Porto on another scores as a line holding one unit of two
    assert all(h["explain"]["entity"] in (None, 0.65) for h in notes), [h["explain"] for h in notes]
    plain = [h for h in notes if h["explain"]["entity"] is None]  # not naming Peter at all: last
    assert all(h["score"] < 0.5 for h in plain) and hits[len(hits) - len(plain):] == plain


def test_a_note_line_naming_the_entity_and_the_other_words_beats_a_fact_naming_only_the_entity(people):
    hits = recall_json(people, "Peter backlog", "--explain", "--k", "30")["results"]
    assert "- Peter and I went through the backlog of the notes repository." in hits[0]["snippet"].split("\n"), hits
    assert hits[0]["explain"]["entity"] == 0.85  # a note line holding both units, below a fact holding both (0.9)
    assert hits[0]["score"] > max(h["score"] for h in hits[1:] if h["snippet"].startswith("- O("))
