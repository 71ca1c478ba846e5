"""Fact ids name the entities a fact is about: the same words about @Peter and about @Ana in one file
are two facts to reflect. Evidence an older zmem recorded in bank/opinions.md cites the old id
(retain.legacy_fact_id): schema step fact_ids_with_entities keeps it beside the new one, and reflect and blame resolve
it to the fact about the opinion's entities — also when a same-worded fact about someone else stays."""
from __future__ import annotations

import pytest

from helpers.workspace import commit_all, get_text, reflect_json, roll_back_schema, run, run_json, write

from zmem.store import db
from zmem.store import migrations
from zmem.text.retain import Fact, fact_id, legacy_fact_id

DAY = "memory/2025-11-24.md"
TEXT = "Prefers tea in the morning."
NOTE = ("# 2025-11-24\n\n## Retain\n"
        f"- O(c=0.9) @Peter: {TEXT}\n"   # L4
        f"- O(c=0.8) @Ana: {TEXT}\n"     # L5
        "- W: The office opens at nine.\n"  # L6, about no one: its id is the same in both schemes
        "- W @Peter: Lives in Lisbon.\n")  # L7
PETER, ANA = fact_id(DAY, "opinion", TEXT, ["Peter"]), fact_id(DAY, "opinion", TEXT, ["Ana"])
OLD = legacy_fact_id(DAY, "opinion", TEXT)


def _opinions(root) -> dict[str, dict]:
    """Opinions by their entities (one each here)."""
    ops = run_json(["-C", str(root), "opinions", "--json"])[0]["opinions"]
    return {" ".join(o["entities"]): o for o in ops}


def _evidence(op) -> list[tuple[str, str, bool]]:
    return [(e["fact"], e["source"], e["retracted"]) for e in op["evidence"]]


def _retract_peter(root) -> None:
    path = root / DAY
    path.write_text(path.read_text().replace(f"- O(c=0.9) @Peter: {TEXT}\n", ""))
    commit_all(root, "Peter changed his mind", date="2025-11-26T10:00:00+00:00")


def test_the_same_words_about_two_people_are_two_facts_with_their_own_evidence(ws):
    write(ws, DAY, NOTE)
    commit_all(ws, "day", date="2025-11-24T10:00:00+00:00")
    facts = run_json(["-C", str(ws), "facts", "--kind", "opinion", "--json"])[0]["facts"]
    ids = {" ".join(f["entities"]): f["id"] for f in facts}
    assert ids == {"Peter": PETER, "Ana": ANA} and PETER != ANA
    res, _ = reflect_json(ws)
    assert res["new_facts"] == 4 and res["commit"]
    ops = _opinions(ws)
    assert _evidence(ops["Peter"]) == [(PETER, f"{DAY}#L4", False)]
    assert _evidence(ops["Ana"]) == [(ANA, f"{DAY}#L5", False)]
    assert ops["Peter"]["confidence"] == 0.9 and ops["Ana"]["confidence"] == 0.8
    again, _ = reflect_json(ws, "--since", "all")
    assert again["files"] == [] and again["commit"] is None
    # Peter's fact goes: his evidence is retracted, Ana's (same words) is not taken for it
    _retract_peter(ws)
    reflect_json(ws)
    ops = _opinions(ws)
    ((fid, source, retracted),) = _evidence(ops["Peter"])
    assert (fid, retracted) == (PETER, True) and source.startswith(f"{DAY}@") and source.endswith("#L4"), source
    assert _evidence(ops["Ana"]) == [(ANA, f"{DAY}#L4", False)]  # moved up a line: re-cited by its id


def _as_the_previous_release(monkeypatch):
    """Facts get the ids the previous release gave them (no entities): for writing its index and
    its bank/opinions.md."""
    monkeypatch.setattr(Fact, "fact_id", lambda self, path: legacy_fact_id(path, self.kind, self.text))


def _index_back_before_fact_ids_with_entities(root) -> None:
    """The index as the previous release left it: facts without legacy_fid, the last step fts_form."""
    conn = db.connect(root / ".zmem" / "index.sqlite")
    with db.write_transaction(conn):
        conn.execute("DROP INDEX facts_legacy_fid")
        conn.execute("ALTER TABLE facts DROP COLUMN legacy_fid")
        roll_back_schema(conn, "fts_form")
    conn.close()


def _fids(root) -> set[tuple[str, str | None, int]]:
    conn = db.connect(root / ".zmem" / "index.sqlite")
    try:
        return set(conn.execute("SELECT fid, legacy_fid, start_line FROM facts"))
    finally:
        conn.close()


@pytest.mark.slow
def test_evidence_an_older_zmem_recorded_keeps_resolving_after_the_migration(ws, monkeypatch):
    write(ws, DAY, NOTE)
    commit_all(ws, "day", date="2025-11-24T10:00:00+00:00")
    with monkeypatch.context() as old:
        _as_the_previous_release(old)
        reflect_json(ws)
        # what the previous release wrote: one opinion, Ana's fact taken for Peter's (one id)
        ops = _opinions(ws)
        assert list(ops) == ["Peter"] and _evidence(ops["Peter"]) == [(OLD, f"{DAY}#L4", False)]
        assert {(f, line) for f, _, line in _fids(ws)} == {
            (OLD, 4), (OLD, 5), (fact_id(DAY, "world", "The office opens at nine."), 6),
            (legacy_fact_id(DAY, "world", "Lives in Lisbon."), 7)}
    _index_back_before_fact_ids_with_entities(ws)
    opinions_before = (ws / "bank/opinions.md").read_text()

    # this zmem: step fact_ids_with_entities maps the ids (no note is read again), the old id stays resolvable
    assert run(["-C", str(ws), "facts", "--json"]).exit_code == 0
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    assert db.schema_version(conn) == migrations.SCHEMA_VERSION
    conn.close()
    office = fact_id(DAY, "world", "The office opens at nine.")
    lisbon, old_lisbon = fact_id(DAY, "world", "Lives in Lisbon.", ["Peter"]), legacy_fact_id(DAY, "world", "Lives in Lisbon.")
    assert _fids(ws) == {(PETER, OLD, 4), (ANA, OLD, 5), (office, office, 6), (lisbon, old_lisbon, 7)}
    assert lisbon != old_lisbon
    for fid in (lisbon, old_lisbon):  # `zmem blame ID` takes either
        (blamed,) = run_json(["-C", str(ws), "blame", fid, "--json"])[0]["ranges"]
        assert (blamed["path"], blamed["start_line"]) == (DAY, 7), fid
    # blame follows the old id in the opinion's evidence line to Peter's line (not Ana's)
    line = opinions_before.splitlines().index(next(s for s in opinions_before.splitlines() if f"(fact {OLD}" in s)) + 1
    (blamed,) = run_json(["-C", str(ws), "blame", f"bank/opinions.md#L{line}", "--json"])[0]["ranges"]
    assert [(e["path"], e["start_line"]) for e in blamed["evidence"]] == [(DAY, 4)]

    # reflect over everything: Peter's evidence is his fact (nothing re-cited or retracted, the file
    # keeps its old id); Ana's fact, skipped before, is an opinion of its own now
    res, _ = reflect_json(ws, "--since", "all")
    ops = _opinions(ws)
    assert _evidence(ops["Peter"]) == [(OLD, f"{DAY}#L4", False)]
    assert _evidence(ops["Ana"]) == [(ANA, f"{DAY}#L5", False)]
    text = (ws / "bank/opinions.md").read_text()
    assert text.startswith(opinions_before.rstrip("\n")), res["diff"]
    again, _ = reflect_json(ws, "--since", "all")
    assert again["files"] == []

    # Peter's fact goes: the old id is not taken for Ana's fact, which still has it as its old id
    _retract_peter(ws)
    reflect_json(ws)
    ops = _opinions(ws)
    ((fid, source, retracted),) = _evidence(ops["Peter"])
    assert retracted and fid == OLD and source.endswith("#L4") and source.startswith(f"{DAY}@"), source
    assert "Prefers tea" in get_text(ws, source)
    assert ops["Peter"]["confidence"] == 0.0
    assert _evidence(ops["Ana"]) == [(ANA, f"{DAY}#L4", False)]
