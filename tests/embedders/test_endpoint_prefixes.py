"""An e5-style model behind an OpenAI-compatible endpoint: the endpoint sees only text, so zmem puts
`document_prefix` before every note it embeds and `query_prefix` before every query (e5 wants
`passage: ` / `query: `; without them it embeds notes as it embeds questions)."""
from __future__ import annotations

from helpers.workspace import commit_all, recall_json, run, use_server, write


def sent(server) -> list[str]:
    return [text for call in server.embedding_calls() for text in call["body"]["input"]]


def test_notes_go_with_the_document_prefix_and_queries_with_the_query_prefix(ws, server):
    write(ws, "bank/world.md", "# World\n\n- The gateway lives on the Mac Studio in the office.\n")
    commit_all(ws)
    use_server(server, 'query_prefix = "query: "\ndocument_prefix = "passage: "\n')
    res = run(["-C", str(ws), "index", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    notes = sent(server)
    assert notes and all(t.startswith("passage: ") and not t.startswith("passage: query: ") for t in notes)
    assert any("Mac Studio" in t for t in notes)
    before = len(notes)
    out = recall_json(ws, "which computer runs the relay", "--mode", "hybrid")
    assert out["mode"] == "hybrid" and out["results"][0]["path"] == "bank/world.md"
    assert sent(server)[before:] == ["query: which computer runs the relay"]


def test_changing_a_prefix_reembeds_the_notes(ws, server):
    use_server(server, 'query_prefix = "query: "\n')
    assert run(["-C", str(ws), "index"]).exit_code == 0
    assert not any(t.startswith("passage: ") for t in sent(server))  # no document_prefix: notes as written
    use_server(server, 'query_prefix = "query: "\ndocument_prefix = "passage: "\n')
    before = len(sent(server))
    res = run(["-C", str(ws), "embed", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    again = sent(server)[before:]
    assert again and all(t.startswith("passage: ") for t in again)
