"""Adaptive fusion: the keyword evidence of a query sets how much its keyword list counts in hybrid
recall. Real indexes, embedded through the loopback server's deterministic concept vectors
(helpers.embed_server: `computer`, `box` and `hosts` share a concept, `relay` and `proxy` another)."""
from __future__ import annotations

import re

import pytest

from helpers.fusion import DISTRACTORS
from helpers.workspace import commit_all, recall_json, run, use_server, write
from zmem.store.fts import match_keys
from zmem.query import fusion
from zmem.query.fusion import Weights, adaptive_fuse, coverage, query_rarity, query_weights
from zmem.index.catchup import open_index
from zmem.workspace.core import find_workspace



def paths(out: dict) -> list[str]:
    return [h["path"] for h in out["results"]]


def test_a_paraphrase_only_the_vectors_find_ranks_first_in_hybrid(fusion_ws, server):
    query = "Which computer hosts the proxy?"  # shares no word with the answer; `computer` is incidental
    assert "bank/setup.md" not in paths(recall_json(fusion_ws, query, "--mode", "bm25"))
    adaptive = recall_json(fusion_ws, query, "--mode", "hybrid", "--explain")
    assert paths(adaptive)[0] == "bank/setup.md"
    # the fixed weights (recall.fusion = "weighted") bury it under the notes holding `computer`
    use_server(server, '\n[recall]\nfusion = "weighted"\n')
    weighted = recall_json(fusion_ws, query, "--mode", "hybrid")
    assert paths(weighted)[0] != "bank/setup.md"
    why = adaptive["results"][0]["explain"]
    assert why["bm25_rank"] is None and why["vector_rank"] == 1
    assert why["vector_weight"] > why["text_weight"] and why["keyword_evidence"] < 0.5


def test_an_exact_rare_token_stays_first(fusion_ws):
    for query in ("E4021", "E4021 on the computer", "what does error E4021 mean on the computer"):
        out = recall_json(fusion_ws, query, "--mode", "hybrid", "--explain")
        assert paths(out)[0] == "bank/errors.md", query
        why = out["results"][0]["explain"]
        assert why["bm25_rank"] == 1 and why["text_weight"] > why["vector_weight"], query


def test_explain_shows_the_weights_the_query_got_in_json_and_text(fusion_ws):
    out = recall_json(fusion_ws, "E4021", "--mode", "hybrid", "--explain")
    why = out["results"][0]["explain"]
    assert (why["text_weight"], why["vector_weight"], why["keyword_evidence"]) == (0.7, 0.3, 1.0)
    res = run(["-C", str(fusion_ws), "recall", "Which computer hosts the proxy?", "--mode", "hybrid", "--explain"])
    assert res.exit_code == 0, res.output
    # the fused score as the weighted sum it is
    assert re.search(r"fused -?[\d.]+ = text 0\.\d+ x [\d.]+ \+ vector 0\.\d+ x -?[\d.]+ \(keyword evidence 0\.\d+\) · "
                     r"answer probability [\d.]+"
                     r"( · covers 0\.\d+ of the query)? · chunk L\d+-L\d+\]", res.stdout), res.stdout
    # a hit the keywords found also says how much of the query it covers (its text score's measure)
    assert re.search(r"\(keyword evidence 0\.\d+\) · answer probability [\d.]+ · covers 0\.\d+ of the query · "
                     r"chunk L\d+-L\d+\]", res.stdout), res.stdout


def test_keyword_evidence_is_the_share_of_the_query_rarity_a_candidate_holds(fusion_ws):
    conn = open_index(find_workspace(fusion_ws))
    try:
        rarity = query_rarity(conn, "computer proxy hosts")
        idf = {t.key: t.idf for t in rarity}
        computer, proxy, _ = match_keys("computer proxy hosts")
        assert idf[proxy] > idf[computer]  # no chunk holds `proxy`, six hold `computer`
        assert coverage("Computers!", rarity) == (pytest.approx(idf[computer] / sum(idf.values())), False)
        assert coverage("computer proxy hosting", rarity) == (1.0, False)  # stems and case, as recall matches lines
        weak = query_weights(rarity, dict(enumerate(DISTRACTORS)), 0.7, 0.3)
        # a rare identifier held is an exact match: full evidence, and that candidate first
        rarity = query_rarity(conn, "computer error E4021")
        assert [t.key for t in rarity if t.exact] == ["e4021"]
        strong = query_weights(rarity, {1: DISTRACTORS[0], 2: "- Error E4021 here"}, 0.7, 0.3)
    finally:
        conn.close()
    assert weak.evidence < 0.5 and (weak.text, weak.vector) == pytest.approx((weak.evidence, 1 - weak.evidence))
    assert (strong.text, strong.vector, strong.evidence, strong.exact) == (0.7, pytest.approx(0.3), 1.0, {2})
    assert adaptive_fuse([(1, 0.9), (2, 0.2)], [(1, 0.9), (2, 0.1)], strong)[0][0] == 2


def test_chinese_bigrams_count_as_rare_words_and_absent_ones_say_nothing(ws):
    assert run(["-C", str(ws), "index"]).exit_code == 0
    conn = open_index(find_workspace(ws))
    try:
        rarity = query_rarity(conn, "北京出差了吗")
    finally:
        conn.close()
    assert {t.key for t in rarity if t.gram} == {"北京", "京出", "出差"}  # 差了, 了吗: in no chunk
    assert coverage("- 王伟下周去北京出差。", rarity) == (1.0, False)
    assert coverage("- 去上海。", rarity) == (0.0, False)


def test_adaptive_fuse_follows_the_weights_the_query_got():
    bm25 = [(1, 0.8), (2, 0.4)]  # as recall shows BM25: s / (1 + s), so FTS5's 4.0 and 0.67
    vec = [(2, 0.6), (1, 0.3)]
    ranked = adaptive_fuse(bm25, vec, Weights(0.7, 0.3, 1.0))  # no coverages given: each covers everything
    half = fusion.RANK_SHARE  # the text score: coverage x (RANK_SHARE + the rest x BM25 / best BM25)
    assert ranked == [(1, pytest.approx(0.7 + 0.09)), (2, pytest.approx(0.7 * (half + (1 - half) / 6) + 0.18))]
    assert [cid for cid, _ in adaptive_fuse(bm25, vec, Weights(0.1, 0.9, 0.0))] == [2, 1]


def test_facts_and_as_of_recall_take_the_weights_of_their_own_keyword_evidence(fusion_ws):
    write(fusion_ws, "memory/2025-12-01.md", "# 2025-12-01\n\n## Retain\n\n- W @Ana: Error E4021 came back after the deploy.\n"
          "- W @Ana: The relay daemon runs on the old box.\n")
    commit_all(fusion_ws)
    facts = recall_json(fusion_ws, "E4021", "--kind", "world", "--mode", "hybrid", "--explain")
    assert "E4021" in facts["results"][0]["snippet"]
    assert facts["results"][0]["explain"]["keyword_evidence"] == 1.0
    head = recall_json(fusion_ws, "Which computer hosts the proxy?", "--as-of", "HEAD", "--mode", "hybrid", "--explain")
    assert head["mode"] == "hybrid" and head["results"][0]["path"] in ("bank/setup.md", "memory/2025-12-01.md")
    why = head["results"][0]["explain"]
    assert why["vector_weight"] > why["text_weight"] and why["keyword_evidence"] < 0.5
