"""Adaptive fusion's clear vector first: unless the keyword evidence is strong, the candidate whose cosine
leads every other's by fusion.VECTOR_LEAD standard deviations of all the candidates' cosines ranks first (after exact identifiers), instead of losing first
place to a keyword share on incidental words (paraphrase set, MiniLM: hybrid hit@1 0.42 -> 0.64 in
English, bench/README.md). Real indexes, embedded through the loopback server's deterministic concept
vectors (helpers.embed_server: `computer`, `box` and `hosts` share a concept, `relay` and `proxy` another)."""
from __future__ import annotations

import pytest

from helpers.workspace import index_notes, recall_json, write
from zmem.query import fusion
from zmem.query.fusion import STRONG, VECTOR_LEAD, Weights, adaptive_fuse, vector_lead

KEYWORD = [(1, 0.8)]  # candidate 1: the best keyword match (as recall shows BM25: s / (1 + s))
OTHERS = [(5, 0.30), (6, 0.30), (7, 0.29), (8, 0.29), (9, 0.28), (10, 0.28), (11, 0.27), (12, 0.27)]  # the rest


def order(bm25, vec, weights) -> list[int]:
    return [cid for cid, _ in adaptive_fuse(bm25, vec, weights)][:2]


def lead_of(vec) -> float:
    """How many standard deviations of all the candidates' cosines the closest leads the second by."""
    sims = sorted((s for _, s in vec), reverse=True)
    mean = sum(sims) / len(sims)
    return (sims[0] - sims[1]) / (sum((s - mean) ** 2 for s in sims) / len(sims)) ** 0.5


CLEAR = [(2, 0.50), (1, 0.38), *OTHERS]
CLOSE = [(2, 0.50), (1, 0.47), *OTHERS]


def test_the_lists_here_are_on_either_side_of_the_lead():
    assert lead_of(CLEAR) > VECTOR_LEAD > lead_of(CLOSE)


def test_a_clear_vector_first_outranks_a_keyword_share_on_weak_evidence():
    weak = Weights(0.4, 0.6, 0.4)
    assert dict(adaptive_fuse(KEYWORD, CLEAR, weak))[1] > dict(adaptive_fuse(KEYWORD, CLEAR, weak))[2]  # the sum's order
    assert order(KEYWORD, CLEAR, weak) == [2, 1]
    assert order(KEYWORD, CLEAR, Weights(0.6, 0.4, STRONG - 0.01)) == [2, 1]  # still below STRONG


def test_a_lead_under_vector_lead_or_strong_evidence_keeps_the_fused_order():
    assert order(KEYWORD, CLOSE, Weights(0.4, 0.6, 0.4)) == [1, 2]
    assert order(KEYWORD, CLEAR, Weights(0.7, 0.3, STRONG)) == [1, 2]  # the keywords hold the query


def test_an_exact_identifier_still_ranks_before_the_clear_vector_first():
    bm25 = [(3, 0.5), (1, 0.8)]
    vec = [(2, 0.6), (1, 0.3), (3, 0.3), *OTHERS]
    weights = Weights(0.4, 0.6, 0.4, exact=frozenset({3}))
    assert [cid for cid, _ in adaptive_fuse(bm25, vec, weights)][:3] == [3, 2, 1]
    assert [weights.explain(cid).get("ranked_first") for cid in (3, 2, 1)] == ["identifier", "vector_lead", None]


def test_the_lead_is_measured_in_the_spread_of_the_querys_cosines():
    """The same first place for a model whose cosines crowd together (multilingual-e5-small's top ten
    within ~0.01 of ~0.85) as for one whose cosines spread (all-MiniLM-L6-v2): a lead of 0.012 stands out
    among e5's cosines, one of 0.05 does not among cosines spread over 0.4."""
    crowded = [(7, 0.862), *[(i, 0.850 - i * 0.001) for i in range(10)]]
    spread = [(7, 0.60), (1, 0.55), (2, 0.45), (3, 0.35), (4, 0.25), (5, 0.20)]
    assert vector_lead(crowded) == 7 and vector_lead(spread) is None


def test_vector_lead_needs_a_spread_to_measure():
    assert vector_lead([]) is None and vector_lead([(7, 0.9)]) is None
    assert vector_lead([(4, 0.30), (7, 0.90)]) is None  # two cosines have no spread to lead it by
    assert vector_lead([(4, 0.5), (7, 0.5), (8, 0.5)]) is None  # all alike
    assert vector_lead([(4, 0.30), (7, 0.50), (8, 0.29), (9, 0.30)]) == 7  # the closest, wherever it is listed


@pytest.fixture
def billing_ws(ws, server):
    # notes holding `billing` only in passing; the answer says none of the question's words
    for i, line in enumerate(["- Billing desk moved next to the window.", "- Paid the billing fee for the lake house.",
                              "- Billing letters go in the blue folder.", "- Weekly billing report for the nightly meeting."]):
        write(ws, f"bank/misc-{i}.md", f"# Misc {i}\n\n{line}\n")
    return index_notes(ws, server, {"bank/setup.md": "# Setup\n\n- The relay daemon runs on the old box.\n"})


def test_hybrid_recall_puts_the_vectors_clear_answer_first(billing_ws, monkeypatch):
    query = "Where does the nightly billing proxy run?"  # `nightly billing`: the report note's words
    # the loopback server's hashed vectors spread this query's cosines over -0.4 .. 0.46 (a model's crowd
    # within a few hundredths), so the setup note leads the next by ~0.34 standard deviations here: the
    # rule at such a lead (the unit tests above hold it to VECTOR_LEAD)
    monkeypatch.setattr(fusion, "VECTOR_LEAD", 0.25)
    out = recall_json(billing_ws, query, "--mode", "hybrid", "--explain")
    why = out["results"][0]["explain"]
    assert out["results"][0]["path"] == "bank/setup.md"
    assert why["bm25_rank"] != 1 and why["vector_rank"] == 1 and why["keyword_evidence"] < STRONG
    # --explain says why it is first although a lower fused score than the next one may show
    assert why["ranked_first"] == "vector_lead" and "ranked_first" not in out["results"][1]["explain"]
    monkeypatch.setattr(fusion, "VECTOR_LEAD", float("inf"))  # without the rule: the sum of weights
    assert recall_json(billing_ws, query, "--mode", "hybrid")["results"][0]["path"] == "bank/misc-3.md"
