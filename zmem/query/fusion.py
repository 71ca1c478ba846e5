"""Adaptive fusion of keyword and vector candidates: per query, how much the keyword list deserves.

A fixed 0.7 text / 0.3 vector sum lets BM25's matches on incidental words outrank the note a
paraphrase is about ("where does the boss park his car" finding notes that say *car* in passing).
Here the weights follow the query's keyword evidence: the share of its rarity (IDF of its words and
CJK bigrams, counted in the index) that the best keyword candidate holds. Holding (nearly) all of it,
the configured weights stand; below WEAK the text weight is the evidence itself, and the vectors
decide. A candidate holding a rare identifier of the query (E4021, 9f3c2ab) ranks first; below STRONG,
a candidate whose cosine leads every other's by VECTOR_LEAD standard deviations of theirs ranks next (a
sum of weights would let a keyword share on incidental words push the vectors' clear answer to second
place). And a hit
with a line holding at least LINE_STRONG of that rarity cites its keyword lines, as BM25 recall does:
the vector windows choose the lines only where the words match incidentally (keyword_line).
"""
from __future__ import annotations

import array
import math
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zmem.store.fts import build_match, fold, match_keys, query_grams, query_terms, word_start

if TYPE_CHECKING:
    from zmem.query.floor import Signals

WEAK = 0.5     # keyword evidence below this: the keyword list matched incidental words only
STRONG = 0.9   # at or above this: a candidate holds (nearly) all the query's rare words
RARE_DF = 3    # an identifier in at most this many chunks is an exact match to keep first
# a number of one or two digits standing alone in the query ("on 3 June, 2023", "December 1,2023", "my 2 kids")
# is a day or a count, not an identifier: a chunk that happens to hold it is no exact match. Joined to other
# characters it still is one (4.2.7, v2, B12, 16.2), and after `#` or `№` it is a reference (issue #42).
# LoCoMo dev single-hop: 4 of the 8 questions hybrid lost to BM25 with either model (bench/README.md,
# "Small numbers are not identifiers")
LONE_NUMBER = re.compile(r"(?<![\w.\-/:#№])\d{1,2}(?![\w\-/:]|\.\w)")
LINE_STRONG = 0.4  # a line holding this share of the query's rarity is cited as the keywords choose
# the closest candidate ranks first (below STRONG) when its cosine leads the second-closest's by this many
# standard deviations of all the candidates' cosines: a lead in the query's own units, so it means the same
# for a model whose cosines crowd together (multilingual-e5-small: the top ten within ~0.01 of ~0.85) as
# for one whose cosines spread (all-MiniLM-L6-v2: ~0.05 of ~0.50). A fixed 0.06 of cosine never fired
# with e5; this one gives MiniLM the same hit@1 as 0.06 did (bench/README.md, "A clear vector first,
# in the query's own units")
VECTOR_LEAD = 1.5
# the weights assume cosines as spread out as all-MiniLM-L6-v2's (median standard deviation of a query's
# candidates 0.026): a model whose candidates crowd closer (multilingual-e5-small: 0.007) has them stretched
# around their mean to this spread, or its vector weight would barely move the order. MiniLM: identical
# results; e5: LoCoMo 0.813 -> 0.815, paraphrase English R@5 0.53 -> 0.56 (bench/README.md, "Crowded cosines")
VECTOR_SPREAD = 0.026
# A keyword candidate's text score is what it holds of the question, not where it stands in its own list:
# its coverage (the share of the query's rarity it holds, in [0, 1]) times (RANK_SHARE + (1 - RANK_SHARE)
# x its BM25 / the best BM25), so BM25 still orders candidates holding as much, but a list whose best match
# holds one incidental word of the question scores that match ~its coverage (0.2), not 1.0 (docs/fusion.md)
RANK_SHARE = 0.0
COVER_POWER = 0.5  # the text score grows with coverage ** this
# "nothing matches" in hybrid recall of chunks is zmem/query/floor.py's calibrated decision. Where it is not measured
# (facts recall: no query vector reaches fuse_by_evidence) this rule stands: a question whose keyword evidence
# is below EVIDENCE_FLOOR (no candidate holds more than incidental words of it) and whose closest vector candidate's
# cosine is below COSINE_FLOOR gets an empty list, as keyword recall does when no word matches (all-MiniLM-L6-v2:
# where it cost reworded questions at most ~0.02 R@5; docs/fusion.md). Session messages below EVIDENCE_FLOOR are no
# answer either (sessions.merge_scored).
EVIDENCE_FLOOR = 0.2
COSINE_FLOOR = 0.3
# A model that sees every window close to every query: the query's mean cosine with the sampled windows (its null
# mean, null_moments) at least CROWDED (multilingual-e5-small 0.73-0.86 on every question of bench/eval.py's tuning
# halves, all-MiniLM-L6-v2 -0.07-0.64). With such a model a keyword list holding under EVIDENCE_FLOOR of the
# question gets no weight, and the text weight grows from there to WEAK's (text_share's `incidental`): its vectors,
# stretched from a spread of ~0.007 (spread_out) and weighed as flat by the outlier score, were outranked by one
# incidental shared word. e5, held-out: promise fails 12 -> 8, reworded R@5 0.34 -> 0.41 (vector alone 0.39).
# With MiniLM the same rule cost Portuguese template questions (R@5 0.24 -> 0.12, tuning), whose words its
# vectors do not read: the null mean stands in for "the vectors read the question", as measured on these two
# models (docs/fusion.md, "A crowded model's incidental keywords"). Such a query's CJK bigrams that no note holds
# count as rare words (query_rarity's unseen_grams), not dropped: a reworded Chinese question keeps only its
# incidental bigrams (同事, 我的), and one of them held "all" of the question. e5 Chinese paraphrases hit@1
# 0.23 -> 0.46 (tuning), 0.59 -> 0.71 (held-out); MiniLM (its vectors do not read Chinese, its queries are never
# crowded) unchanged.
CROWDED = 0.7
# How far the closest vector candidate stands out of the query's cosines with the workspace's windows at large
# (its "outlier" score, outlier_score): (best cosine - their mean) / their standard deviation, estimated on a fixed
# sample of NULL_SAMPLE windows. A question whose answer is in the notes has one window far above the rest; a
# question about something no note mentions is about as close to its best window as to hundreds of others.
NULL_SAMPLE = 512
# A new workspace's few notes are measured too: from NULL_MIN windows up, the mean tells a crowded model (means over 8
# windows drawn at random from bench/eval.py's workspaces, bench/null_few_windows.py: e5 0.68-0.87, all-MiniLM-L6-v2
# -0.10-0.69; 51 of 52,000 e5 draws fell on the other side of CROWDED than the whole index, all of questions whose
# whole-index mean is within 0.015 of it, no MiniLM draw). Under SMALL_NULL windows the query's NULL_SKIP
# closest windows are left out of its null: there they are a large part of the sample, and the answer's own cosine
# widened the spread it was measured against (with every one of n windows no score can pass sqrt(n - 1)). Until
# session 24 no null was measured under 30 windows (the floor assumed an outlier score of 3.5): bench/eval.py's
# "small" set (15-22 windows a workspace), all-MiniLM-L6-v2, English paraphrases R@5 0.72 -> 0.81 (vector alone
# 0.83; the floor had emptied six answered ones), no-answer FP@5 0.14 -> 0.17 (both with the floor of then, since
# refitted: floor.py); multilingual-e5-small hit@1 0.74 -> 0.78 (the crowded rules: Portuguese 0.63 -> 0.77, vector
# alone 0.73); every other set unchanged.
NULL_MIN = 8
SMALL_NULL = 30
NULL_SKIP = 2
CENTROID_MIN = 30  # fewer windows than this: no centroid worth centring on
# The vectors are weighed by their own evidence as the keywords are by theirs: a best cosine that stands out
# VECTOR_CLEAR or more keeps the vector weight text_share leaves; one standing out VECTOR_FLAT or less (the
# model sees the query about as close to everything: all-MiniLM-L6-v2 on Portuguese or Spanish) keeps
# VECTOR_FLOOR of it, sliding between; the weights are then scaled back to a sum of 1, the text weight at most the
# configured one (query_weights).
VECTOR_FLAT = 2.5
VECTOR_CLEAR = 4.5
VECTOR_FLOOR = 0.25
# Hubs: some windows lie close to almost every query (a greeting, a list of names, a generic line), so the nearest
# windows of a question that shares no word with its note are often such hubs rather than the note. Centring the
# similarities on the index's centroid c (Suzuki et al. 2013, "Centering similarity measures to reduce hubs") takes
# each window's closeness to everything out of its score: cos(q, w) - CENTRE x (c.w - |c|^2), the same as a query
# moved away from the centroid; c is the mean of the null sample's windows (centroid, centred). Tuning halves,
# vector alone, R@5 / hit@1: hand-written English paraphrases 0.62 / 0.62 -> 0.69 / 0.69 with all-MiniLM-L6-v2 and
# 0.50 / 0.50 -> 0.62 / 0.56 with multilingual-e5-small, Portuguese 0.27 / 0.00 -> 0.53 / 0.13 and 0.67 / 0.33 ->
# 0.67 / 0.53; LoCoMo hit@1 0.43 -> 0.39 (MiniLM) and 0.49 -> 0.48 (bench/README.md, "Hubs"). The floor reads the
# cosines as they are (its calibration).
CENTRE = 0.5
_null_samples: dict = {}
_centroids: dict = {}
_hubs: dict = {}  # index state -> chunk id -> {(start, end): the window's cosine with the centroid's direction}


@dataclass
class Weights:
    text: float
    vector: float
    evidence: float  # the best keyword candidate's share of the query's rarity, in [0, 1]
    exact: frozenset = frozenset()  # candidates holding a rare identifier of the query: ranked first
    rarity: tuple = ()  # the query's Terms (query_rarity)
    lead: int | None = None  # the vectors' clear first, ranked after the exact ones (set by adaptive_fuse)
    cover: dict = field(default_factory=dict)  # candidate id -> its coverage of the query's rarity
    outlier: float | None = None  # the best cosine in standard deviations above the query's null (outlier_score)
    floor: Signals | None = None  # what the "nothing matches" floor reads (hybrid recall of chunks with a vector)
    parts: dict = field(default_factory=dict)  # candidate id -> (text score, vector score): fused = the weighted sum
    nothing: bool = False  # nothing matches (nothing_matches): only the exact candidates were kept

    def keyword_line(self, text: str) -> bool:
        """Whether a line of text holds at least LINE_STRONG of the query's rarity: then that hit's snippet
        is chosen by its words alone, not moved by the vector windows' bonus (LoCoMo dev single-hop turn
        R@10: 0.858 with the bonus everywhere, 0.871 with this rule, BM25 0.867; bench/README.md)."""
        whole = sum(t.idf for t in self.rarity)
        if not whole:
            return False
        # what the whole text holds first (one pass, as coverage): a line holds no more, and most chunks hold less
        low = fold(text)
        held = held_terms(text, low, self.rarity)
        if any(t.exact for t in held):  # the line holding the identifier covers the query (coverage)
            return True
        if sum(t.idf for t in held) / whole < LINE_STRONG:
            return False
        return any(sum(t.idf for t in held_terms(line, folded, held)) / whole >= LINE_STRONG
                   for line, folded in zip(text.split("\n"), low.split("\n")))

    def explain(self, cid: int | None = None) -> dict:
        """--explain's fields for this query, plus, for a candidate cid that a rule ranks before the
        fused scores' order, which rule: "identifier" (a rare identifier of the query) or "vector_lead"."""
        out = {"text_weight": round(self.text, 3), "vector_weight": round(self.vector, 3),
               "keyword_evidence": round(self.evidence, 3)}
        if self.outlier is not None:
            out["vector_outlier"] = round(self.outlier, 2)
        if self.floor is not None:
            from zmem.query import floor
            out["answer_probability"] = round(floor.answer_probability(self.floor), 3)
            out["floor_signals"] = {k: None if v is None else round(v, 4) for k, v in self.floor.explain().items()}
        if cid is not None and cid in self.cover:
            out["keyword_coverage"] = round(self.cover[cid], 3)
        if cid is not None and cid in self.parts:
            out["text_score"], out["vector_score"] = (round(x, 4) for x in self.parts[cid])
        if cid is not None and (cid in self.exact or cid == self.lead):
            out["ranked_first"] = "identifier" if cid in self.exact else "vector_lead"
        return out


@dataclass
class Term:
    key: str      # as recall matches lines: a stemmed, accent-folded word at a word start, or a CJK bigram
    idf: float
    gram: bool    # a CJK bigram (or single character), matched as written
    exact: bool   # a rare identifier (a word with a digit or `_`: E4021, 9f3c2ab, ORA-12541's 12541)
    unseen: bool = False  # a CJK bigram no chunk holds, kept (query_rarity's unseen_grams)


def query_rarity(conn, query: str, table: str = "chunks_fts", unseen_grams: bool = False) -> list[Term]:
    """The query's words and CJK bigrams with their IDF in the index. A word no chunk holds counts as
    rare (the words miss what is asked); a CJK bigram no chunk holds is dropped (a query's bigrams
    include function pairs such as 到了 and 了吗 that say nothing), or with unseen_grams counts as a rare
    word does (a crowded model's query: CROWDED)."""
    total = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] or 1
    lone = set(LONE_NUMBER.findall(query))
    out = []
    terms = [(key, build_match(term), False) for term in query_terms(query) for key in match_keys(term)[:1]]
    terms += [(g, f'cjk_bi : "{g}"' if len(g) > 1 else f'cjk_uni : "{g}"', True) for g in query_grams(query)]
    for key, match, gram in {t[0]: t for t in terms}.values():
        df = conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (match,)).fetchone()[0]
        if gram and not df and not unseen_grams:
            continue
        exact = (not gram and 0 < df <= RARE_DF and any(c.isdigit() or c == "_" for c in key)
                 and key not in lone)
        unseen, df = gram and not df, max(df, 1)
        out.append(Term(key, math.log(1 + (total - df + 0.5) / (df + 0.5)), gram, exact, unseen))
    return out


def coverage(text: str, rarity: list[Term]) -> tuple[float, bool]:
    """(the share of the query's rarity a text holds: the IDF of the keys in it over the sum of all,
    whether it holds a rare identifier of the query: an exact match of an ID, error code, version)."""
    whole = sum(t.idf for t in rarity)
    if not whole:
        return 0.0, False
    held = held_terms(text, fold(text), rarity)
    exact = any(t.exact for t in held)
    return (1.0 if exact else sum(t.idf for t in held) / whole), exact


def held_terms(text: str, low: str, terms) -> list[Term]:
    """The terms a text holds (low: fold(text)): a CJK bigram as written, a word's key at a word start."""
    return [t for t in terms if (t.key in text if t.gram else word_start(low, t.key) >= 0)]


def query_weights(rarity: list[Term], texts: dict[int, str], text_weight: float, vector_weight: float,
                  outlier: float | None = None, crowded: bool = False) -> Weights:
    """The weights one query gets from the keyword evidence of its keyword candidates' texts (id -> text)
    and from the vectors' own (outlier: outlier_score; None counts as clear; crowded: the model sees every
    window close to the query, CROWDED), with each candidate's coverage (Weights.cover) for its text score in
    adaptive_fuse."""
    covered = {cid: coverage(text, rarity) for cid, text in texts.items()}
    evidence = max((share for share, _ in covered.values()), default=0.0)
    text = text_share(evidence, text_weight, vector_weight, EVIDENCE_FLOOR if crowded else 0.0)
    vector = (1.0 - text) * vector_evidence(outlier)
    text, vector = (text / (text + vector), vector / (text + vector)) if text + vector > 0 else (text, 1.0 - text)
    # what flat vectors give up goes to the keywords only up to the configured text weight: a keyword candidate
    # holding every rare word of the query gets that much and no more, so vectors that stand out little (LoCoMo's
    # conversations: 2.3-3.5) are not outweighed further by BM25's term counts among candidates holding as much
    # of the query (docs/fusion.md, "What the vectors are worth")
    full = configured_text(text_weight, vector_weight)
    text, vector = (full, 1.0 - full) if text > full else (text, vector)
    # a line is cited for its keywords (keyword_line) by the terms notes hold: an unseen bigram is in no line
    return Weights(text, vector, evidence, frozenset(cid for cid, (_, exact) in covered.items() if exact),
                   tuple(t for t in rarity if not t.unseen), cover={cid: share for cid, (share, _) in covered.items()},
                   outlier=outlier)


def vector_evidence(outlier: float | None) -> float:
    """The share of its weight the vector side keeps for how far its best cosine stands out (outlier_score):
    1 at VECTOR_CLEAR or more (or unmeasured), VECTOR_FLOOR at VECTOR_FLAT or less, linear between."""
    if outlier is None or VECTOR_CLEAR <= VECTOR_FLAT or outlier >= VECTOR_CLEAR:
        return 1.0
    return VECTOR_FLOOR + (1.0 - VECTOR_FLOOR) * max(0.0, outlier - VECTOR_FLAT) / (VECTOR_CLEAR - VECTOR_FLAT)


def configured_text(text_weight: float, vector_weight: float) -> float:
    """The configured text weight as a share of both (0.7 / 0.3: 0.7)."""
    return text_weight / ((text_weight + vector_weight) or 1.0)


def text_share(evidence: float, text_weight: float, vector_weight: float, incidental: float = 0.0) -> float:
    """The text weight a query gets for its keyword evidence (the vector weight is the rest); evidence up to
    `incidental` gets none (a crowded model's queries: CROWDED)."""
    full = configured_text(text_weight, vector_weight)
    low = min(full, WEAK)
    if evidence >= STRONG:
        return full
    if evidence >= WEAK:  # sliding from WEAK's weight to the configured one
        return low + (full - low) * (evidence - WEAK) / (STRONG - WEAK)
    # incidental matches: the text weight is the evidence itself (0.15: 0.15), or grows from `incidental` to WEAK's
    return low * max(0.0, evidence - incidental) / (WEAK - incidental)


def keyword_scores(conn, query: str, hits: list[tuple[str, float]], *, text_weight: float, vector_weight: float,
                   table: str) -> list[tuple[float, float]]:
    """(score, coverage) that hybrid recall gives candidates found by keywords alone (no vector: session
    transcript messages), for hits as (text, BM25 as s / (1 + s)) from `table`: text_share(best coverage) x
    coverage ** COVER_POWER x (RANK_SHARE + the rest x BM25 / best BM25), on the scale of adaptive_fuse's
    scores, so such hits merge with fused note hits by score."""
    rarity = query_rarity(conn, query, table)
    covered = [coverage(text, rarity)[0] for text, _ in hits]
    raw = [s / (1.0 - s) if s < 1.0 else s for _, s in hits]
    best = max(raw, default=0.0) or 1.0
    weight = text_share(max(covered, default=0.0), text_weight, vector_weight)
    return [(weight * c ** COVER_POWER * (RANK_SHARE + (1.0 - RANK_SHARE) * r / best), c) for c, r in zip(covered, raw)]


def adaptive_fuse(bm25: list[tuple[int, float]], vec: list[tuple[int, float]], weights: Weights) -> list[tuple[int, float]]:
    """(id, fused score) best first: text weight x text score + vector weight x cosine (spread_out; both lists
    completed first: search.complete_scores), the candidates holding a rare identifier of the query
    before all others (each group by its fused score), then, unless the keyword evidence is strong, the
    vectors' clear first (vector_lead). The text score is the candidate's coverage of the query's rarity
    (Weights.cover) times RANK_SHARE + (1 - RANK_SHARE) x BM25 / best BM25: what a keyword hit holds of the
    question, ordered by BM25 among hits holding as much (docs/fusion.md); a candidate without a coverage
    (weights built without its text) counts as covering everything. BM25 is compared as FTS5 ranks it, not
    as the s / (1 + s) recall shows: that squeezes the top (ranks 1 and 20 within ~8%)."""
    raw = [(cid, s / (1.0 - s) if s < 1.0 else s) for cid, s in bm25]
    best = max((s for _, s in raw), default=0.0) or 1.0
    parts = weights.parts
    for cid, s in raw:
        parts[cid] = (weights.cover.get(cid, 1.0) ** COVER_POWER * (RANK_SHARE + (1.0 - RANK_SHARE) * s / best), 0.0)
    for cid, sim in spread_out(vec):
        parts[cid] = (parts.get(cid, (0.0, 0.0))[0], sim)
    scores = {cid: weights.text * t + weights.vector * v for cid, (t, v) in parts.items()}
    lead = weights.lead = vector_lead(vec) if weights.evidence < STRONG else None
    return sorted(scores.items(), key=lambda x: (x[0] not in weights.exact, x[0] != lead, -x[1], x[0]))


def spread_out(vec: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The candidates' cosines, stretched around their mean to a standard deviation of VECTOR_SPREAD when
    they crowd closer than that (a linear map: their order and vector_lead's choice stay the same)."""
    if len(vec) < 2:
        return vec
    mean = sum(s for _, s in vec) / len(vec)
    spread = math.sqrt(sum((s - mean) ** 2 for _, s in vec) / len(vec))
    if not 0 < spread < VECTOR_SPREAD:
        return vec
    return [(cid, mean + (s - mean) * VECTOR_SPREAD / spread) for cid, s in vec]


def vector_lead(vec: list[tuple[int, float]]) -> int | None:
    """The candidate whose cosine is ahead of every other's by at least VECTOR_LEAD standard deviations of
    all the candidates' cosines, or None (also with fewer than 3 candidates: no spread to measure)."""
    if len(vec) < 3:
        return None
    ranked = sorted(vec, key=lambda x: -x[1])
    mean = sum(s for _, s in vec) / len(vec)
    spread = math.sqrt(sum((s - mean) ** 2 for _, s in vec) / len(vec))
    (first, best), (_, second) = ranked[:2]
    return first if spread > 0 and best - second >= VECTOR_LEAD * spread else None


def fuse_by_evidence(conn, query: str, bm25: list[tuple[int, float]], vec: list[tuple[int, float]], texts: dict[int, str],
                     *, text_weight: float, vector_weight: float, table: str = "chunks_fts", query_vector=None,
                     store=None, raw: list[tuple[int, float]] | None = None):
    """(ranked, Weights): the keyword candidates' texts (id -> text) weigh the query, then fuse; an empty
    ranking when nothing matches (nothing_matches; the candidates holding a rare identifier stay).
    table: the FTS table the keyword list came from (chunks_fts, facts_fts, hist_fts), for the IDFs.
    raw: the vector candidates' plain cosines when vec holds them centred (centred), for the floor."""
    raw = vec if raw is None else raw
    outlier = moments = None
    if query_vector is not None and raw:
        moments = null_moments(conn, query_vector, store)
        outlier = outlier_score(max(sim for _, sim in raw), moments)
    crowded = moments is not None and moments[0] >= CROWDED
    rarity = query_rarity(conn, query, table, unseen_grams=crowded)
    weights = query_weights(rarity, texts, text_weight, vector_weight, outlier, crowded)
    ranked = adaptive_fuse(bm25, vec, weights)
    if query_vector is not None and raw:
        from zmem.query import floor
        null_mean, spread = moments or (None, None)
        weights.floor = floor.signals(weights.evidence, raw, outlier, spread, null_mean)
    if nothing_matches(weights, raw):
        weights.nothing = True
        ranked = [(cid, s) for cid, s in ranked if cid in weights.exact]
    return ranked, weights


def nothing_matches(weights: Weights, vec: list[tuple[int, float]]) -> bool:
    """Whether no candidate answers the query: none holds a rare identifier of it or WEAK of its rarity (what
    keyword recall would list as an answer, whatever a model's cosines say), and the calibrated floor says so
    (floor.nothing_answers) when its signals were measured; else (facts recall) its keyword evidence is
    incidental (below EVIDENCE_FLOOR) and no vector candidate comes within COSINE_FLOOR of it."""
    if weights.exact or weights.evidence >= WEAK:
        return False
    if weights.floor is not None:
        from zmem.query import floor
        return floor.nothing_answers(weights.floor)
    if weights.evidence >= EVIDENCE_FLOOR:
        return False
    return max((sim for _, sim in vec), default=0.0) < COSINE_FLOOR


def _sample_ids(conn) -> tuple[tuple, list[int]] | None:
    """(index state, window ids): up to NULL_SAMPLE ids at even steps between the first and last window."""
    # two subqueries: each is one rowid lookup, where min and max in one SELECT scan every window (8 ms at 52k)
    lo, hi = conn.execute("SELECT (SELECT min(id) FROM chunk_vectors), (SELECT max(id) FROM chunk_vectors)").fetchone()
    if lo is None:
        return None
    path = conn.execute("PRAGMA database_list").fetchone()[2] or id(conn)
    step = max(1, (hi - lo + 1) // NULL_SAMPLE)
    return (path, lo, hi), list(range(lo, hi + 1, step))[:NULL_SAMPLE]


def null_sample(conn):
    """A fixed sample of the index's window vectors (numpy rows), read by rowid once per index state
    (_sample_ids), or None (no vectors, or numpy not loaded: it is not imported here, where a fresh process
    served by a watcher would pay ~0.1-0.4 s for it)."""
    np = sys.modules.get("numpy")
    got = _sample_ids(conn) if np is not None else None
    if got is None:
        return None
    key, ids = got
    if key not in _null_samples:
        blobs = [r[0] for r in conn.execute(
            f"SELECT vector FROM chunk_vectors WHERE id IN ({','.join('?' * len(ids))})", ids)]
        try:
            sample = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1) if blobs else None
        except ValueError:  # vectors of different sizes (a model change half-way): no null to measure against
            sample = None
        if len(_null_samples) > 16:
            _null_samples.clear()
        _null_samples[key] = sample
    return _null_samples[key]


def null_moments(conn, query_vector, store=None) -> tuple[float, float] | None:
    """(mean, standard deviation) of the query's cosines with the sampled windows: by numpy on null_sample
    when numpy is loaded, else by sqlite-vec through store when it is; None when it cannot be measured
    (neither, under NULL_MIN windows, a vector of another size, no spread). Under SMALL_NULL windows, without
    the query's NULL_SKIP closest."""
    sample = null_sample(conn)
    if sample is not None:
        if len(sample) < NULL_MIN or sample.shape[1] != len(query_vector):
            return None
        sims = (sample @ sys.modules["numpy"].asarray(query_vector, dtype="float32")).tolist()
    elif store is not None and getattr(store, "vec_loaded", False) and (got := _sample_ids(conn)):
        ids = got[1]
        sql = f"SELECT {{sim}} FROM chunk_vectors WHERE id IN ({','.join('?' * len(ids))})"
        try:
            sims = [r[0] for r in store.similarities(sql, "vector", tuple(ids), query_vector) if r[0] is not None]
        except Exception:  # noqa: BLE001 - a vector of another size: sqlite-vec refuses it
            return None
    else:
        return None
    if len(sims) < NULL_MIN:
        return None
    if len(sims) < SMALL_NULL:
        sims = sorted(sims)[:len(sims) - NULL_SKIP]
    mean = sum(sims) / len(sims)
    spread = math.sqrt(sum((x - mean) ** 2 for x in sims) / len(sims))
    return (mean, spread) if spread > 0 else None


def outlier_score(best: float, moments: tuple[float, float] | None) -> float | None:
    """How far a query's best cosine stands out of its cosines with the sampled windows: (best - mean) /
    standard deviation (null_moments); None when they could not be measured."""
    return None if moments is None else (best - moments[0]) / moments[1]


def centroid(conn) -> tuple[list[float], float] | None:
    """(the unit direction of the mean of the null sample's windows, the mean's length), once per index
    state; by numpy when it is loaded, else in Python (512 vectors); None under CENTROID_MIN windows or with
    vectors of different sizes."""
    got = _sample_ids(conn)
    if got is None:
        return None
    key, ids = got
    if len(ids) < CENTROID_MIN:  # a handful of notes has no hubs; their mean would pull every score about
        return None
    if key not in _centroids:
        sample = null_sample(conn)
        if sample is not None:
            mean = sample.mean(axis=0).tolist()
        else:  # one array of every sampled vector, summed dimension by dimension: ~5 ms for 512 x 384
            blobs = [r[0] for r in conn.execute(
                f"SELECT vector FROM chunk_vectors WHERE id IN ({','.join('?' * len(ids))})", ids)]
            mean = []
            if blobs and len({len(b) for b in blobs}) == 1:
                flat = array.array("f", b"".join(blobs))
                dims = len(flat) // len(blobs)
                mean = [sum(flat[i::dims]) / len(blobs) for i in range(dims)]
        norm = math.sqrt(sum(x * x for x in mean))
        if len(_centroids) > 16:
            _centroids.clear()
        _centroids[key] = ([x / norm for x in mean], norm) if norm > 0 else None
    return _centroids[key]


def centred(conn, store, query_vector, vec: list[tuple[int, float]]) -> tuple[list[tuple[int, float]], dict]:
    """(the vector candidates (chunk id, cosine) rescored by their windows' centred similarity (CENTRE), each
    chunk by its best window, best first; the windows read on the way, VectorStore.windows_of's plain
    cosines, for the caller to reuse); vec as it is and {} when there is no centroid or it has another size."""
    got = centroid(conn) if CENTRE and vec else None
    if got is None or len(got[0]) != len(query_vector):
        return vec, {}
    direction, length = got
    ids = [cid for cid, _ in vec]
    to_query = store.windows_of(ids, query_vector)
    # a window's closeness to the centroid is the same for every query: kept per index state
    hubs = _hubs.setdefault(_sample_ids(conn)[0], {})
    missing = [cid for cid in ids if cid not in hubs]
    for cid, windows in store.windows_of(missing, direction).items():
        hubs[cid] = {(a, b): sim for a, b, sim in windows}
    if len(_hubs) > 16:
        _hubs.clear()
    return centre_scores(vec, to_query, hubs, length), to_query


def centre_scores(vec: list[tuple[int, float]], to_query: dict, hubs: dict, length: float) -> list[tuple[int, float]]:
    """vec rescored, best first: each candidate by its best window's cos(q, w) - CENTRE x (c.w - |c|^2), from its
    windows' (start, end, cosine with the query) in to_query and their cosine with the centroid's direction in
    hubs (candidate -> {(start, end): cosine}; c.w is that times the centroid's length); a candidate without
    windows keeps its score."""
    best: dict[int, float] = {}
    for cid, windows in to_query.items():
        hub = hubs.get(cid, {})
        for a, b, sim in windows:
            score = sim - CENTRE * (length * hub.get((a, b), length) - length * length)
            best[cid] = max(best.get(cid, score), score)
    return sorted(((cid, best.get(cid, sim)) for cid, sim in vec), key=lambda x: (-x[1], x[0]))
