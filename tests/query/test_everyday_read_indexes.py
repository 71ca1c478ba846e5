"""Schema step everyday_read_indexes: all_entities (`zmem entity`, `graph`, recall naming an entity)
groups the facts by their list of names from facts_names, `zmem facts` reads its newest facts in the
order of facts_newest, and stored_warnings reads the files with a warning from files_warned, instead
of scanning (and sorting) every fact's or file's row."""
from __future__ import annotations

from helpers.workspace import commit_all, roll_back_schema, run, write

from zmem.memory import Memory
from zmem.store import db
from zmem.query.entities import all_entities, query_facts
from zmem.index.catchup import stored_warnings

FACTS = ("# 2025-11-24\n\n## Retain\n\n- W @Peter: Moved the gateway to the Mac Studio.\n"
         "- O(c=0.8) @Peter @Ana: Ana and Peter prefer short answers.\n- B @Ana: Had lunch with Ana.\n")


def _grouping_plans(ws) -> list[str]:
    """The query plan of each statement all_entities runs that groups the facts."""
    mem = Memory(ws)
    conn = mem.conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        entities = all_entities(mem.workspace, conn)
    finally:
        conn.set_trace_callback(None)
    assert set(entities) == {"peter", "ana"}
    return [" ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql))
            for sql in statements if "GROUP BY names" in sql]


def test_entities_are_grouped_from_the_names_index(ws):
    write(ws, "memory/2025-11-24.md", FACTS)
    commit_all(ws)
    assert run(["-C", str(ws), "index"]).exit_code == 0
    plans = _grouping_plans(ws)
    assert plans and all("COVERING INDEX facts_names" in plan for plan in plans)


def test_an_index_from_before_the_step_gains_it_and_entity_says_the_same(ws):
    write(ws, "memory/2025-11-24.md", FACTS)
    commit_all(ws)
    before = run(["-C", str(ws), "entity", "Peter"])
    assert before.exit_code == 0
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    with db.write_transaction(conn):
        conn.execute("DROP INDEX facts_names")
        conn.execute("DROP INDEX files_warned")
        conn.execute("DROP INDEX facts_newest")
        roll_back_schema(conn, "fact_ids_with_entities", recorded=True)
    conn.close()
    after = run(["-C", str(ws), "entity", "Peter"])
    assert (after.exit_code, after.output) == (0, before.output)
    assert all("COVERING INDEX facts_names" in plan for plan in _grouping_plans(ws))


def _plans(conn, read) -> list[str]:
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        read()
    finally:
        conn.set_trace_callback(None)
    return [" ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)) for sql in statements]


def test_the_warnings_of_files_come_from_the_warned_files_index(ws):
    write(ws, "memory/2025-11-24.md", FACTS + "- X @Peter: not a kind\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index"]).exit_code == 0
    conn = Memory(ws).conn
    warnings: list[str] = []
    plans = _plans(conn, lambda: warnings.extend(stored_warnings(conn)))
    assert len(warnings) == 1 and "unknown fact kind" in warnings[0]
    assert plans and all("INDEX files_warned" in plan for plan in plans)


def test_the_newest_facts_are_read_in_the_order_of_facts_newest(ws):
    write(ws, "memory/2025-11-24.md", FACTS)
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Retain\n\n- W @Ana: Ana moved to Porto.\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index"]).exit_code == 0
    conn = Memory(ws).conn
    rows = []
    plans = _plans(conn, lambda: rows.extend(query_facts(conn, limit=50)))
    assert [f.text for f in rows][:2] == ["Ana moved to Porto.", "Had lunch with Ana."]
    assert plans and all("INDEX facts_newest" in plan and "TEMP B-TREE" not in plan for plan in plans)
