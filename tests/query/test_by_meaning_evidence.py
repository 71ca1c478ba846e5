"""Hybrid recall lets the vector windows alone choose a hit's lines only when the keyword evidence is
below search.BY_MEANING_EVIDENCE (0.4), lower than the fusion's WEAK (0.5): between the two the query's
words still point at the answer's line (LoCoMo dev tuning half: budget R@10 0.782 -> 0.790; bench/eval.py's
paraphrase tuning halves unchanged). A real index, embedded through the loopback server's concept vectors."""
from __future__ import annotations

import pytest

from helpers.workspace import index_notes, recall_json
from zmem.query import fusion, search

NOTE = ("# Infra\n\n" + "\n".join(f"- Billing server {i} runs on the studio machine host box." for i in range(6))
        + "\n\n## Money\n\n- The billing ledger sits in the cellar archive.\n")


@pytest.fixture
def infra_ws(ws, server):
    return index_notes(ws, server, {"bank/infra.md": NOTE})


def _by_meaning_at(monkeypatch, ws, evidence: float) -> tuple[bool, dict]:
    """Hybrid recall with the keyword evidence forced to `evidence`: whether the windows chose the lines."""
    real_fuse, real_assemble = fusion.fuse_by_evidence, search.assemble_hits
    seen = {}

    def fuse(*a, **kw):
        ranked, weights = real_fuse(*a, **kw)
        weights.evidence = evidence
        return ranked, weights

    def assemble(*a, **kw):
        seen["by_meaning"] = kw["by_meaning"]
        return real_assemble(*a, **kw)

    monkeypatch.setattr(fusion, "fuse_by_evidence", fuse)
    monkeypatch.setattr(search, "assemble_hits", assemble)
    hit = recall_json(ws, "billing ledger machine", "--mode", "hybrid")["results"][0]
    return seen["by_meaning"], hit


def test_the_windows_choose_the_lines_only_below_by_meaning_evidence(infra_ws, monkeypatch):
    assert search.BY_MEANING_EVIDENCE == 0.4 < fusion.WEAK == 0.5
    by_meaning, hit = _by_meaning_at(monkeypatch, infra_ws, 0.45)  # incidental for the fusion, not for the lines
    assert by_meaning is False and hit["path"] == "bank/infra.md"
    assert _by_meaning_at(monkeypatch, infra_ws, 0.35)[0] is True
    assert _by_meaning_at(monkeypatch, infra_ws, 0.9)[0] is False


def test_bm25_never_cites_by_meaning(infra_ws, monkeypatch):
    seen = {}
    real = search.assemble_hits
    monkeypatch.setattr(search, "assemble_hits", lambda *a, **kw: seen.update(kw) or real(*a, **kw))
    hit = recall_json(infra_ws, "billing ledger", "--mode", "bm25")["results"][0]
    assert seen["by_meaning"] is False and hit["start_line"] <= 12 <= hit["end_line"]
