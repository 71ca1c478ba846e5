"""The shortcuts `zmem entity` takes give the answers of the long way: every entity's fact count and
days from its names' lists as from its mentions, the edges of some entities as all edges touching
them, and the suspected duplicates of one name as the whole list filtered to it."""
from __future__ import annotations

import random

import pytest

from helpers.workspace import RETAIN, commit_all, run, write

NAMES = ["Peter", "peter", "PETER", "Ana", "José", "Jose", "Lucía", "[The Castle]", "the_castle", "warelay", "warelai"]


def _facts(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 6)):
        a, b, c = rng.sample(NAMES, 3)
        lines.append(rng.choice([f"- W @{a}: met @{b} and @{c} on 2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}.",
                                 f"- B @{a}: fixed item {rng.randint(1, 9)}.",
                                 f"- O(c=0.{rng.randint(1, 9)}) @{a} @{b}: likes tea.",
                                 f"- R @{a} knows @{b}: since {rng.randint(2020, 2025)}",
                                 f"- S: @{a} and @{a.lower()} are one."]))
    return "\n".join(lines)


def _workspace(ws):
    rng = random.Random(11)
    for i in range(30):
        write(ws, f"memory/2025-10-{i + 1:02d}.md", RETAIN.format(day=f"2025-10-{i + 1:02d}", facts=_facts(rng)))
    write(ws, "bank/world.md", RETAIN.format(day="World", facts=_facts(rng)))  # facts without a day
    write(ws, "bank/entities/Peter.md", "# Peter Parker\n\nA person.\n")
    write(ws, "bank/entities/Zed.md", "# Zed\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0


def test_entity_counts_days_edges_and_duplicates_are_those_of_the_long_way(ws):
    from zmem import Memory
    from zmem.query.entities import all_entities, edges, suspected_duplicates
    _workspace(ws)
    with Memory.open(ws) as mem:
        conn = mem.conn
        entities = all_entities(mem.workspace, conn)
        mentions = {key: (n, first, last) for key, n, first, last in conn.execute(
            "SELECT e.entity, count(*), min(f.day), max(f.day) FROM fact_entities e JOIN facts f ON f.id = e.fact_id "
            "GROUP BY e.entity")}
        assert len(mentions) >= 8
        assert {k: (e.facts, e.first_day, e.last_day) for k, e in entities.items() if k in mentions} == mentions
        assert entities["peter"].name == "Peter Parker" and entities["peter"].spellings == ["PETER", "Peter", "peter"]
        every = edges(conn)
        assert {e.type for e in every} >= {"co-mentioned", "knows"}
        for keys in ({"peter"}, {"ana", "jose"}, {"zed"}):
            some = edges(conn, keys)
            assert [vars(e) for e in some] == [vars(e) for e in every if e.source in keys or e.target in keys]
        whole = suspected_duplicates(entities)
        assert whole
        for name in {e.name for e in entities.values()}:
            assert suspected_duplicates(entities, name=name) == [d for d in whole if name in d[:2]], name


@pytest.mark.slow
def test_duplicates_of_one_name_are_those_of_the_whole_list_on_random_names():
    from zmem.query.entities import Entity, suspected_duplicates
    from zmem.text.retain import entity_key
    rng = random.Random(5)
    found = 0
    for _ in range(60):
        base = ["".join(rng.choice("abcdeéjos ") for _ in range(rng.randint(2, 12))).strip() or "x" for _ in range(30)]
        entities = {}
        for name in base + [b[:-1] + rng.choice("aeiou") for b in base[:12]] + [b.upper() for b in base[:4]]:
            if entity_key(name) not in entities:  # some entities share a name (a page's title, a spelling)
                entities[entity_key(name)] = Entity(entity_key(name), rng.choice([name, name, base[0]]), None)
        whole = suspected_duplicates(entities)
        found += len(whole)
        for name in {e.name for e in entities.values()}:
            assert suspected_duplicates(entities, name=name) == [d for d in whole if name in d[:2]]
    assert found > 100
