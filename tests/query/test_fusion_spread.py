"""Crowded cosines: a model whose candidates' cosines sit close together (multilingual-e5-small: ~0.85
± 0.007) has them stretched to fusion.VECTOR_SPREAD before the weighted sum, so its vector weight moves
the order as much as a model whose cosines spread (all-MiniLM-L6-v2: ~0.026) does."""
from __future__ import annotations

import statistics

import pytest

from zmem.query import fusion
from zmem.query.fusion import VECTOR_SPREAD, Weights, adaptive_fuse, spread_out, vector_lead


def test_crowded_cosines_are_stretched_around_their_mean_and_keep_their_order():
    crowded = [(1, 0.861), (2, 0.855), (3, 0.852), (4, 0.850), (5, 0.846)]
    out = spread_out(crowded)
    assert [cid for cid, _ in sorted(out, key=lambda x: -x[1])] == [1, 2, 3, 4, 5]
    assert statistics.pstdev(s for _, s in out) == pytest.approx(VECTOR_SPREAD)
    assert statistics.fmean(s for _, s in out) == pytest.approx(statistics.fmean(s for _, s in crowded))
    assert vector_lead(out) == vector_lead(crowded)  # a lead is measured in the candidates' own spread


def test_spread_out_cosines_and_ties_are_left_alone():
    spread = [(1, 0.62), (2, 0.55), (3, 0.50), (4, 0.47), (5, 0.41)]
    assert spread_out(spread) == spread
    assert spread_out([(1, 0.8), (2, 0.8)]) == [(1, 0.8), (2, 0.8)]
    assert spread_out([(1, 0.8)]) == [(1, 0.8)]


def test_crowded_vectors_outweigh_a_small_keyword_edge_as_spread_ones_do(monkeypatch):
    weights = Weights(text=0.4, vector=0.6, evidence=0.4)
    bm25 = [(2, 0.500), (1, 0.495)]  # the keywords prefer 2, barely
    spread = [(1, 0.62), (2, 0.60), (3, 0.57), (4, 0.55), (5, 0.52), (6, 0.50)]  # MiniLM-like: 1 is closer
    crowded = [(1, 0.858), (2, 0.853), (3, 0.851), (4, 0.846), (5, 0.844), (6, 0.840)]  # e5-like, the same order
    assert vector_lead(spread) is None and vector_lead(crowded) is None  # no clear first: the sum decides
    assert adaptive_fuse(bm25, spread, weights)[0][0] == 1
    assert adaptive_fuse(bm25, crowded, weights)[0][0] == 1
    monkeypatch.setattr(fusion, "VECTOR_SPREAD", 0.0)  # raw cosines: e5's vectors barely count
    assert adaptive_fuse(bm25, crowded, weights)[0][0] == 2
