"""Hybrid recall's snippet lines: the vector windows' bonus moves the cited lines only where the query's
words match incidentally. A line holding at least fusion.LINE_STRONG of the query's rarity is cited as
BM25 recall cites it (LoCoMo dev single-hop: the bonus moved the citation off the matching turn).
Real indexes, embedded through the loopback server's deterministic concept vectors (helpers.embed_server)."""
from __future__ import annotations

import pytest

from helpers.workspace import index_notes, recall_json, use_server
from zmem.index.catchup import open_index
from zmem.query.fusion import LINE_STRONG, Weights, query_rarity
from zmem.workspace.core import find_workspace

# one chunk, two 128-token vector windows: the first paragraph is all `host` words (close to a query
# saying `machine`), the second holds the line with the query's rare words among unrelated ones
HOSTS = "\n".join(f"- Billing server {i} runs on the studio machine host box computer server mac." for i in range(9))
OTHER = "\n".join(f"- Walked the dog {i} around the lake and watered the tomato plants in the yard." for i in range(6))
NOTE = f"# Infra\n\n{HOSTS}\n\n## Money\n\n{OTHER}\n- The billing ledger sits in the cellar archive.\n"
LEDGER_LINE = 2 + 9 + 3 + 6 + 1  # title and blank, host lines, blank heading blank, other lines, then it


@pytest.fixture
def ledger_ws(ws, server):
    return index_notes(ws, server, {"bank/infra.md": NOTE})


def test_a_line_holding_the_query_rare_words_is_cited_not_the_closest_window(ledger_ws, server):
    query = "billing ledger machine"
    bm25 = recall_json(ledger_ws, query, "--mode", "bm25")["results"][0]
    assert bm25["start_line"] <= LEDGER_LINE <= bm25["end_line"], bm25
    hybrid = recall_json(ledger_ws, query, "--mode", "hybrid")["results"][0]
    assert (hybrid["start_line"], hybrid["end_line"]) == (bm25["start_line"], bm25["end_line"])
    as_of = recall_json(ledger_ws, query, "--as-of", "HEAD", "--mode", "hybrid")["results"][0]
    assert (as_of["start_line"], as_of["end_line"]) == (bm25["start_line"], bm25["end_line"])
    # without the rule (the fixed weights keep every window's bonus) the host paragraph's window wins
    use_server(server, '\n[recall]\nfusion = "weighted"\n')
    weighted = recall_json(ledger_ws, query, "--mode", "hybrid")["results"][0]
    assert weighted["path"] == "bank/infra.md" and not weighted["start_line"] <= LEDGER_LINE <= weighted["end_line"]


def test_keyword_line_needs_the_share_of_the_query_rarity(ledger_ws):
    conn = open_index(find_workspace(ledger_ws))
    try:
        rarity = tuple(query_rarity(conn, "billing ledger cellar archive tomato"))
    finally:
        conn.close()
    w = Weights(0.7, 0.3, 1.0, rarity=rarity)
    assert LINE_STRONG == 0.4
    assert w.keyword_line("noise\n- The billing ledger sits in the cellar archive.")  # 4 of 5 rare words
    assert not w.keyword_line("- Walked the dog around the lake.\n- watered the tomato plants")  # 1 of 5: incidental
    assert not Weights(0.7, 0.3, 0.0).keyword_line("billing ledger")  # no rarity known: the bonus stays
