"""Vector windows along the notes a person wrote (notes of ~40 tokens: a window each), through a real
loopback embeddings server."""
from __future__ import annotations

import json

from helpers.workspace import commit_all, recall_json, run, use_server, write
from zmem.store import db
from zmem.text.chunking import WINDOW_FINGERPRINT

LOG = """# 2025-03-09

## Notes

- Dentist appointment moved to the third of May in the afternoon, with Dr. Okafor at the clinic on the corner of the square, and the reminder card is on the fridge.
- The kids' school closes early on Wednesdays this term, so somebody has to be at the gate at one o'clock, with snacks and the spare jackets in the bag.
- The gateway lives on the Mac Studio in the office, next to the printer, and it must stay switched on at all times, even during the holidays.
- Ana drinks espresso every morning before the standup, and a second one right after lunch most days, always from the small bar downstairs.
- Lucas is learning the cello after dinner and practises for half an hour with his teacher on Saturdays, who says he is ready for the spring concert.
"""

def _index(ws) -> dict:
    res = run(["-C", str(ws), "index", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    return res


def _vectors(ws) -> tuple[list[tuple[int, int]], str]:
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    try:
        rows = conn.execute("SELECT v.start_line, v.end_line FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id "
                            "WHERE c.path = 'memory/2025-03-09.md' ORDER BY v.start_line").fetchall()
        return rows, db.get_meta(conn, "vec_fingerprint")
    finally:
        conn.close()


def test_each_note_gets_its_own_vector_with_its_heading(ws, server):
    write(ws, "memory/2025-03-09.md", LOG)
    commit_all(ws)
    use_server(server)
    _index(ws)
    rows, fingerprint = _vectors(ws)
    assert rows == [(5, 5), (6, 6), (7, 7), (8, 8), (9, 9)]
    assert fingerprint.endswith(f"|windows={WINDOW_FINGERPRINT}")
    sent = [t for call in server.embedding_calls() for t in call["body"]["input"]]
    assert "2025-03-09 > Notes\n\n" + LOG.split("\n")[6] in sent


def test_a_paraphrase_cites_the_one_note_it_is_about(ws, server):
    write(ws, "memory/2025-03-09.md", LOG)
    commit_all(ws)
    use_server(server)
    _index(ws)
    out = recall_json(ws, "which computer runs the relay", "--mode", "vector")
    top = out["results"][0]
    assert (top["path"], top["start_line"], top["end_line"]) == ("memory/2025-03-09.md", 7, 7)


def test_vectors_cut_the_old_way_are_re_embedded_once(ws, server):
    write(ws, "memory/2025-03-09.md", LOG)
    commit_all(ws)
    use_server(server)
    _index(ws)
    rows, fingerprint = _vectors(ws)
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    try:  # an index embedded before windows followed the notes: one window of lines for this chunk
        with db.write_transaction(conn):
            old = fingerprint.replace(f"|windows={WINDOW_FINGERPRINT}", "|windows=128")
            db.set_meta(conn, "vec_fingerprint", old)
    finally:
        conn.close()
    from zmem import Memory
    with Memory.open(ws) as memory:  # the warning says what changed: the windows, not the model
        res = memory.recall("which computer runs the relay", mode="hybrid", background_embed=False)
    assert any("cut into windows another way" in w for w in res.warnings), res.warnings
    assert not any("different embedding model" in w for w in res.warnings)
    first = json.loads(run(["-C", str(ws), "embed", "--json"]).output)
    assert first["reembedded_all"] is True and first["pending"] == 0
    assert _vectors(ws) == (rows, fingerprint)
    again = json.loads(run(["-C", str(ws), "embed", "--json"]).output)
    assert again["reembedded_all"] is False and again["embedded"] == again["from_cache"] == 0
