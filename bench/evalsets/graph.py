"""A generated evaluation set of questions that cross a relation (bench/eval.py set "graph"): people with
Retain facts about where they live, work and what they play, and relation facts between them, written into
daily logs; the question names one person and a relation of theirs, the answer is a fact about the other.

Made by another method than the other sets: an entity graph (zmem's `R @B sister_of @A` relations and `W`
facts) drawn at random, every person with the same three kinds of fact, so a question's words other than the
name match 24 people's facts and only the graph says whose one answers. Deterministic (seed 29).

Categories:
- two-hop: "Where does Amara's sister live?" -> `W @Bruno: Lives in Tartu.`, through `R @Bruno sister_of
  @Amara` (the question says the relation with the relation fact's own word).
- two-hop-reworded: the same with another word for the relation ("Amara's sibling" for sister_of): the
  relation fact shares no word with the question.
- one-hop: "Where does Bruno live?" (the named person's own fact: what the graph must not disturb).
"""
from __future__ import annotations

import random

PEOPLE = ["Amara", "Bruno", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kenji", "Leila",
          "Mateo", "Nadia", "Oskar", "Priti", "Quentin", "Rosa", "Samir", "Tove", "Ulla", "Viktor", "Wanda", "Yusuf"]
# (predicate word, another word for it)
RELATIONS = [("sister", "sibling"), ("boss", "manager"), ("neighbour", "person next door"), ("cousin", "aunt's child"),
             ("partner", "spouse"), ("mentor", "coach")]
CITIES = ["Tartu", "Ghent", "Bergen", "Cork", "Graz", "Lyon", "Split", "Turku", "Aarhus", "Porto", "Bilbao", "Kraków"]
EMPLOYERS = ["bakery", "harbour office", "city library", "dental clinic", "bike shop", "observatory", "ferry company",
             "florist", "print shop", "brewery"]
SPORTS = ["tennis", "handball", "rowing", "fencing", "curling", "badminton", "squash", "water polo"]
# fact template, question template (X: who the question asks about)
KINDS = [("Lives in {v}.", "Where does {x} live?", CITIES), ("Works at the {v}.", "Where does {x} work?", EMPLOYERS),
         ("Plays {v} on weekends.", "Which sport does {x} play?", SPORTS)]
FILLER = ["- Watered the plants and sorted the post.", "- Long call about the holiday plans; nothing decided.",
          "- Paid the electricity bill.", "- Cleaned out the fridge."]


def generate(seed: int = 29) -> tuple[dict[str, str], list[dict]]:
    """({path: text}, questions) with questions as {id, category, question, path, line, lang}."""
    r = random.Random(seed)
    facts = {(p, k): f"- W @{p}: " + KINDS[k][0].format(v=r.choice(KINDS[k][2])) for p in PEOPLE for k in range(3)}
    links = []  # (person, relation index, the other person): the other is the person's <relation>
    for p in PEOPLE:
        for rel in r.sample(range(len(RELATIONS)), 2):
            links.append((p, rel, r.choice([q for q in PEOPLE if q != p])))
    entries = [("fact", key, line) for key, line in facts.items()]
    entries += [("link", i, f"- R @{b} {RELATIONS[rel][0]}_of @{a}") for i, (a, rel, b) in enumerate(links)]
    r.shuffle(entries)
    files: dict[str, str] = {}
    where: dict[tuple, tuple[str, int]] = {}
    per_day = 4
    for d in range(0, len(entries), per_day):
        day = f"2024-{1 + (d // per_day) // 28:02d}-{1 + (d // per_day) % 28:02d}"
        path = f"memory/{day}.md"
        lines = [f"# {day}", "", "## Notes", "", r.choice(FILLER), "", "## Retain", ""]
        for kind, key, line in entries[d:d + per_day]:
            lines.append(line)
            where[(kind, key)] = (path, len(lines))
        files[path] = "\n".join(lines) + "\n"
    questions: list[dict] = []

    def ask(category: str, question: str, answer: tuple) -> None:
        path, line = where[answer]
        questions.append({"id": f"g{len(questions) + 1:03d}", "category": category, "question": question,
                          "path": path, "line": line, "lang": "en"})

    for a, rel, b in links:
        k = r.randrange(3)
        said, other = RELATIONS[rel]
        ask("two-hop", KINDS[k][1].format(x=f"{a}'s {said}"), ("fact", (b, k)))
        ask("two-hop-reworded", KINDS[k][1].format(x=f"{a}'s {other}"), ("fact", (b, k)))
    for p in r.sample(PEOPLE, 16):
        k = r.randrange(3)
        ask("one-hop", KINDS[k][1].format(x=p), ("fact", (p, k)))
    return files, questions
