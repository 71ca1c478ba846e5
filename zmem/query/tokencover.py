"""The first hits read token by token: how much of the question each one's cited lines hold.

A hit's fused score says how its chunk ranked; it does not say whether the lines it cites speak of what
the question asks. The embedding model can tell, without a cross-encoder: run the question and each of
the first DEPTH hits' cited lines through it, keep the last hidden state of every token (the states mean
pooling averages into the vectors recall already compares), and for each content token of the question
take its closest token of the lines (cosine); the mean over the question's tokens is the hit's coverage
(BERTScore's recall, with the embedding model's own states). The first DEPTH hits are then ordered by
score + WEIGHT x coverage; the rest keep their places. Not after entity_first ordered the hits (a relative's
fact first, the link that led to it after: the link holds more of the question's words).

Asked for with `[recall] rerank = "embedding"` (NAME): it costs the model's time on 1 + DEPTH texts, ~20 ms
for one-line notes and ~100 ms for three LoCoMo turns with all-MiniLM-L6-v2 on 2 cores, against ~10-20 ms for
the whole of a recall without it. Measured on bench/eval.py's held-out halves (bench/README.md, "The first hits
read token by token", and "multilingual-e5-small reads the first hits"): with all-MiniLM-L6-v2 hit@1 rose in
every LoCoMo category (all: 0.61 -> 0.69) and in the template-made English ones, nothing else moved (the
hand-written English paraphrases stayed at 0.50); with multilingual-e5-small hit@1 rose in 12 categories of 23
in four languages (paraphrases EN 0.35 -> 0.55, ES 0.33 -> 0.50, ZH 0.59 -> 0.71; Chinese template questions
0.11 -> 0.22) and fell in none. A model whose vocabulary splits most of the question's words (MiniLM's English
WordPiece on Portuguese, Spanish or Chinese) gives token states that say little: there the order is left alone
(Embedder.cover says None).
"""
from __future__ import annotations

NAME = "embedding"  # recall.rerank's value that asks for it; Recall.rerank when the first hits were read
DEPTH = 3  # the hits re-ordered (and the passages run through the model: 1 + DEPTH texts)
WEIGHT = 3.0  # of the coverage (in [-1, 1], mostly 0.3-0.8) against the hit's score (in [0, 1])
# DEPTH 2-5 and WEIGHT 0.5-8 were measured on the tuning halves: 3 and 3 within 0.003 of the best mean hit@1
# over the categories, with 1 + 3 texts to embed instead of 1 + 5.


def reorder(hits: list, coverage: list[float], explain: bool = False) -> list:
    """hits with the first len(coverage) ordered by score + WEIGHT x coverage (ties: the earlier first);
    with explain, each of those hits' explain gets its token_coverage."""
    n = len(coverage)
    order = sorted(range(n), key=lambda i: (-(hits[i].score + WEIGHT * coverage[i]), i))
    if explain:
        for i in range(n):
            if hits[i].explain is not None:
                hits[i].explain["token_coverage"] = round(coverage[i], 4)
    return [hits[i] for i in order] + hits[n:]


def apply(out, query: str, cover, explain: bool = False) -> None:
    """Re-order out.results' first hits by cover(query, their cited lines) -> coverages or None (Embedder.cover
    through queryvector.token_cover): nothing changes when it cannot tell."""
    first = out.results[:DEPTH]
    if len(first) < 2:
        return
    got = cover(query, [h.snippet for h in first])
    if got is None or len(got) != len(first):
        return
    out.results = reorder(out.results, got, explain)
    out.rerank = NAME

