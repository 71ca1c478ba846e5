"""Fusion by coverage: a keyword hit scores what it holds of the question, not where it stands in its own
list (the floor that empties the list of a question no note answers: test_floor.py).
Real indexes, embedded through the loopback server's deterministic concept vectors
(helpers.embed_server: `computer`, `box` and `hosts` share a concept, `relay` and `proxy` another)."""
from __future__ import annotations

import pytest

from helpers.workspace import recall_json
from zmem.query import fusion
from zmem.query.fusion import Weights, adaptive_fuse



def paths(out: dict) -> list[str]:
    return [h["path"] for h in out["results"]]


def test_a_keyword_hit_on_one_incidental_word_scores_its_coverage_not_the_top_of_its_list():
    # the mechanism: the keyword list's best (id 1) holds a quarter of the question's rarity; the
    # note that answers (id 2) shares no word with it and is the vectors' first
    weights = Weights(text=0.275, vector=0.725, evidence=0.25, cover={1: 0.25})
    ranked = adaptive_fuse([(1, 0.9)], [(2, 0.31), (1, 0.10), (3, 0.05)], weights)
    assert [cid for cid, _ in ranked][:2] == [2, 1]
    # normalised against its own list's best, id 1 got the whole text weight and ranked first (0.35 > 0.22);
    # now its text score is scaled by its coverage
    text = 0.25 ** fusion.COVER_POWER * (fusion.RANK_SHARE + (1 - fusion.RANK_SHARE) * 1.0)
    assert dict(ranked)[1] == pytest.approx(0.275 * text + 0.725 * 0.10)
    assert dict(ranked)[1] < 0.275 + 0.725 * 0.10


def test_bm25_still_orders_the_hits_holding_as_much_of_the_question():
    # 1 and 2 hold the whole question, 3 a tenth of it with the best BM25 score (a long note repeating one word)
    weights = Weights(text=0.7, vector=0.3, evidence=1.0, cover={1: 1.0, 2: 1.0, 3: 0.1})
    ranked = [cid for cid, _ in adaptive_fuse([(1, 0.5), (2, 0.8), (3, 0.9)], [(1, 0.2), (2, 0.2), (3, 0.2)], weights)]
    assert ranked.index(2) < ranked.index(1) and ranked[0] == 2


def test_a_reworded_question_ranks_the_note_the_vectors_found_first(fusion_ws):
    query = "Which computer hosts the proxy?"  # shares no word with the answer; `computer` is incidental
    assert "bank/setup.md" not in paths(recall_json(fusion_ws, query, "--mode", "bm25"))
    out = recall_json(fusion_ws, query, "--mode", "hybrid", "--explain")
    assert paths(out)[0] == "bank/setup.md"
    why = out["results"][0]["explain"]
    assert why["bm25_rank"] is None and why["vector_rank"] == 1
    # the notes holding `computer` are below it, each scored by the share of the question it covers
    below = [h["explain"] for h in out["results"][1:]]
    assert below and all(0 < w["keyword_coverage"] < 0.5 for w in below if w.get("bm25_rank"))


def test_an_exact_token_still_ranks_its_note_first_above_the_floor(fusion_ws):
    for query in ("E4021", "what does error E4021 mean on the computer"):
        out = recall_json(fusion_ws, query, "--mode", "hybrid", "--explain")
        assert paths(out)[0] == "bank/errors.md", query
        assert out["results"][0]["explain"]["keyword_coverage"] == 1.0


def _hit(path, score, snippet, source="memory"):
    from zmem.query.search import Hit
    return Hit(path, 1, 1, score, snippet, None, "", 1, 1, source=source)


def test_sessions_and_notes_merge_by_a_comparable_score_not_by_rank(fusion_ws):
    from zmem.index.catchup import open_index
    from zmem.query.sessions import merge_scored
    from zmem.workspace.core import find_workspace
    conn = open_index(find_workspace(fusion_ws))
    try:
        query = "zebrafish tank Lisbon office heater brand"
        note = _hit("bank/misc-0.md", 0.156, "- Bought a computer desk for the office.")  # the notes' best: weak
        exact = _hit("s.jsonl", 0.591, "The zebrafish tank heater is in the Lisbon office", "sessions")
        incidental = _hit("s.jsonl", 0.2, "Cleaned the office kitchen", "sessions")
        merged = merge_scored(conn, query, [note], [exact, incidental], 5, mode="hybrid", text_weight=0.7,
                              vector_weight=0.3)
        # by rank the weak note came first; by score the message holding the whole question does, and the
        # message holding one incidental word of it is no answer
        assert merged[0] is exact and merged[0].score > note.score
        assert incidental not in merged and note in merged
        # keyword recall: both lists carry BM25 as s / (1 + s), merged as they are
        merged = merge_scored(conn, query, [_hit("a.md", 0.3, "x")], [_hit("s.jsonl", 0.5, "y", "sessions")], 5,
                              mode="bm25", text_weight=0.7, vector_weight=0.3)
        assert [h.score for h in merged] == [0.5, 0.3]
    finally:
        conn.close()
