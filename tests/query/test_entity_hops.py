"""A question that names an entity and a relation of it ("Where does Ana's sister live?") is answered by a
fact about the entity at the other end of the relation: entity_first follows a fact of the named entity that
names another entity and holds a word of the question (`R @Bea sister_of @Ana`) to that entity's facts
holding the question's other words (`W @Bea: Lives in Braga.`). Real workspace, git and index; the people
live and work in each other's notes' shape, so words alone cannot tell whose fact answers."""
from __future__ import annotations

import pytest

from helpers.workspace import commit_all, recall_json, run, use_server, write

DAYS = {
    "memory/2025-11-01.md": ["- R @Bea sister_of @Ana", "- W @Ana: Dinner with @Carl on Friday."],
    "memory/2025-11-02.md": ["- W @Ana: Lives in Lisbon.", "- W @Ana: Works at the museum."],
    "memory/2025-11-03.md": ["- W @Bea: Lives in Braga.", "- W @Bea: Plays tennis on Sundays."],
    "memory/2025-11-04.md": ["- W @Carl: Lives in Faro.", "- W @Carl: Works at the bakery."],
    "memory/2025-11-05.md": ["- R @[José Silva] brother_of @Ana"],
    "memory/2025-11-06.md": ["- W @[José Silva]: Works at the harbour in Setúbal."],
    "memory/2025-11-07.md": ["- W @Dora: Lives in Porto.", "- W @Dora: Works at the hospital."],
}


@pytest.fixture
def family(tmp_path):
    assert run(["init", "--no-hooks", str(tmp_path)]).exit_code == 0
    for rel, lines in DAYS.items():
        write(tmp_path, rel, f"# {rel[7:17]}\n\n## Retain\n\n" + "\n".join(lines) + "\n")
    write(tmp_path, "memory/2025-11-08.md", "# 2025-11-08\n\n- Where everyone lives changes often.\n")
    commit_all(tmp_path)
    assert run(["-C", str(tmp_path), "index", "-q"]).exit_code == 0
    return tmp_path


def _cited(hit) -> str:
    """The lines a hit cites, without the commit an as-of hit names."""
    return f"{hit['path'].split('@')[0]}#L{hit['start_line']}-L{hit['end_line']}"


@pytest.mark.parametrize("question, answer", [
    ("Where does Ana's sister live?", "memory/2025-11-03.md#L5-L5"),    # Bea's, not Ana's own Lisbon
    ("Where does Ana's brother work?", "memory/2025-11-06.md#L5-L5"),  # José Silva's: a name with accents
    ("What does the sister of Ana play?", "memory/2025-11-03.md#L6-L6"),
])
def test_a_relation_in_the_question_leads_to_the_fact_about_the_other_end(family, question, answer):
    hits = recall_json(family, question, "--k", "4")["results"]
    assert _cited(hits[0]) == answer, [_cited(h) for h in hits]
    # the link is cited too: the answer can be checked against the relation it came through
    assert any("_of @Ana" in h["snippet"] for h in hits[1:]), [h["snippet"] for h in hits]


def test_a_relation_said_with_another_word_lists_the_relatives_after_the_entity_own_fact(family):
    # "sibling" is in no fact of Ana's: her relations are followed without a word, a step below what holds it
    hits = recall_json(family, "Where does Ana's sibling live?", "--k", "5")["results"]
    assert _cited(hits[0]).startswith("memory/2025-11-02.md#L5-")  # Ana's own home: it holds the words
    assert any("Braga" in h["snippet"] for h in hits[1:4]), [h["snippet"] for h in hits]
    assert not any("Faro" in h["snippet"] for h in hits)  # Carl is no relation of hers, only co-mentioned


def test_hybrid_recall_follows_the_link_too(family, server):
    use_server(server)
    assert run(["-C", str(family), "index", "-q"]).exit_code == 0
    out = recall_json(family, "Where does Ana's sister live?", "--k", "3", "--mode", "hybrid", "--explain")
    assert out["mode"] == "hybrid" and _cited(out["results"][0]) == "memory/2025-11-03.md#L5-L5"


def test_without_a_relation_word_the_named_entity_answers_for_itself(family):
    hits = recall_json(family, "Where does Ana live?", "--k", "4")["results"]
    assert _cited(hits[0]).startswith("memory/2025-11-02.md#L5-")
    # Carl is linked to Ana only by a fact holding no word of the question: his home is not an answer
    assert not any("Faro" in h["snippet"] for h in hits)
    assert not any("Braga" in h["snippet"] for h in hits)


def test_the_past_follows_the_same_links(family):
    now = recall_json(family, "Where does Ana's sister live?", "--k", "3")["results"]
    then = recall_json(family, "Where does Ana's sister live?", "--k", "3", "--as-of", "HEAD")["results"]
    assert [_cited(h) for h in now] == [_cited(h) for h in then]
    # and as the links stood: before Bea's fact existed, Ana's own is first
    write(family, "memory/2025-11-03.md", "# 2025-11-03\n\n## Retain\n\n- W @Bea: Lives in Coimbra now.\n")
    commit_all(family, "Bea moved")
    assert run(["-C", str(family), "index", "-q"]).exit_code == 0
    moved = recall_json(family, "Where does Ana's sister live?", "--k", "3")["results"]
    assert "Coimbra" in moved[0]["snippet"]
    before = recall_json(family, "Where does Ana's sister live?", "--k", "3", "--as-of", "HEAD~1")["results"]
    assert "Braga" in before[0]["snippet"]
