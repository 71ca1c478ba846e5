"""Recall: BM25 over FTS5, filters, snippets with exact line citations, a character budget."""
from __future__ import annotations

import fnmatch
import functools
import math
import unicodedata
from dataclasses import asdict, dataclass, field
from pathlib import Path

from zmem.errors import ZmemError, example
from zmem.query import citelines, expand
from zmem.text.chunking import CUT
from zmem.store.fts import (_quote, build_match, common_terms, fold, match_keys, nfc, query_grams,
                            word_start as _word_start, word_tokens)
from zmem.text.retain import entity_key
from zmem.text.markdown import ATX, LIST_ITEM, _atx_title
from zmem.workspace.core import glob_to_sql


@dataclass
class Hit:
    path: str
    start_line: int  # the lines the snippet shows; `zmem get PATH --from start_line` returns them
    end_line: int
    score: float
    snippet: str
    day: str | None
    heading: str
    chunk_start_line: int
    chunk_end_line: int
    explain: dict | None = None
    rev: str | None = None  # as-of recall: the commit whose version of the file this is
    source: str = "memory"  # or "sessions": a line of an agent's session transcript (JSONL)

    @property
    def citation(self) -> str:
        at = f"@{self.rev[:10]}" if self.rev else ""
        return f"{self.path}{at}#L{self.start_line}-L{self.end_line}"

    def to_json(self) -> dict:
        d = asdict(self)
        for key in ("explain", "rev"):
            if d[key] is None:
                del d[key]
        d["citation"] = self.citation
        return d


@dataclass
class Recall:
    query: str
    results: list[Hit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    mode: str = "bm25"
    stale: bool = False
    as_of: dict | None = None  # {"commit", "date", "summary"} of an as-of recall
    rerank: str | None = None  # the reranker model that ordered the results (zmem.query.rerank)

    def to_json(self) -> dict:
        out = {"query": self.query, "mode": self.mode, "results": [h.to_json() for h in self.results],
               "warnings": self.warnings, "stale": self.stale}
        if self.as_of:
            out["as_of"] = self.as_of
        if self.rerank:
            out["rerank"] = self.rerank
        return out


def search_bm25(conn, query: str, *, k: int, since: str | None = None, until: str | None = None,
                path_glob: str | None = None, exclude: list[str] | None = None,
                watcher: Path | None = None) -> list[tuple[int, float]]:
    """(chunk id, normalized score in (0, 1)) best first. score = s / (1 + s) with s = -bm25:
    monotonic, so a better keyword match always scores higher, and no threshold hides a hit.
    Words in half the chunks or more are searched only when the rarer words fill fewer than k hits
    (fts.common_terms: they would add at most ~1e-6 to a hit holding a rarer word). watcher: the
    state directory of a watcher that may answer the search from its lists (zmem.index.fsmonitor)."""
    match = build_match(query)
    if match is None:
        return []
    common = common_terms(conn, query)
    rarer = build_match(query, leave_out=common) if common else None
    filtered = bool(since or until or path_glob or exclude)
    if rarer is not None:
        tokens = None if filtered else word_tokens(query, common)
        hits = _bm25(conn, rarer, k, since, until, path_glob, exclude, tokens, watcher)
        if len(hits) == k:
            return hits
    return _bm25(conn, match, k, since, until, path_glob, exclude, None if filtered else word_tokens(query), watcher)


def _bm25(conn, match: str, k: int, since: str | None, until: str | None, path_glob: str | None,
          exclude: list[str] | None, tokens: list[str] | None = None,
          watcher: Path | None = None) -> list[tuple[int, float]]:
    """tokens (an unfiltered search of one-token words, fts.word_tokens): the same answer from the
    impact-ordered lists when they can give it (store.impact: this process's, or a watcher's for
    exactly this index state), else FTS5's."""
    if tokens is not None:
        from zmem.store import impact
        ask = None
        if watcher is not None:
            import functools
            from zmem.index import fsmonitor
            ask = functools.partial(fsmonitor.ranked, watcher)
        rows = impact.top_k(conn, tokens, k, ask)
        if rows is not None:
            return [(cid, (-r) / (1.0 - r)) for cid, r in rows]
    where, args = [], []
    if since:
        where.append("c.day >= ?")
        args.append(since)
    if until:
        where.append("c.day <= ?")
        args.append(until)
    if path_glob:
        where.append("c.path GLOB ?")
        args.append(glob_to_sql(path_glob))
    if exclude:  # --scope group: private paths
        where.append("NOT (" + " OR ".join("c.path GLOB ?" for _ in exclude) + ")")
        args.extend(exclude)
    if where:
        sql = (f"SELECT c.id, chunks_fts.rank FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
               f"WHERE chunks_fts MATCH ? AND {' AND '.join(where)} ORDER BY chunks_fts.rank LIMIT ?")
    else:  # FTS5 keeps only the top k while ranking when nothing else is joined in
        sql = "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?"
    rows = conn.execute(sql, (match, *args, k)).fetchall()
    return [(cid, (-r) / (1.0 - r)) for cid, r in rows]


def _line_weights(lines: list[str], query: str) -> list[float]:
    """How well each line matches the query: query terms weighted by their rarity among the
    chunk's lines (a speaker's name on every line says little; a rare word says a lot). A line
    matches a word as FTS matches it: accents folded, stems compared (_Matcher)."""
    return _weigh(*_presence(lines, query))


def _weigh(present: list[list[bool]], idf: list[float]) -> list[float]:
    """Each line's weight: the rarity of the query words it holds (_presence's two lists)."""
    return [sum(w for w, hit in zip(idf, row) if hit) for row in present]


def _presence(lines: list[str], query: str) -> tuple[list[list[bool]], list[float]]:
    """Per line, which of the query's words and CJK bigrams it holds (as _Matcher matches them), and
    each one's rarity among the lines: log(1 + lines / (1 + lines holding it))."""
    m = _matcher(query)
    keys, grams = m.keys, m.grams
    present = []
    for line in lines:  # the test of _Matcher.first, inline: this runs for every line of every hit
        low, raw = (line.lower(), line) if line.isascii() else (fold(line), nfc(line))
        present.append([k in low and _word_start(low, k) >= 0 for k in keys] + [g in raw for g in grams])
    n = len(lines)
    counts = [sum(col) for col in zip(*present)] if present else []
    return present, [math.log(1 + n / (1 + c)) for c in counts]


# keyword recall: a hit whose matched query words stand apart (one in a list item, another in a code block
# below) keeps 1 - TOGETHER + TOGETHER x (its best unit's share of them), so it ranks below a hit holding as
# much in one statement (term proximity; docs/citations.md "Words that stand together"). Small: a chunk's
# BM25 is mostly right (LoCoMo dev's tuning half loses budget recall at 0.2 and more); it decides between
# chunks holding the same words. Not in hybrid recall, where the vector windows weigh each unit's meaning
# (LoCoMo's tuning half: six questions lost, two gained)
TOGETHER = 0.05


def words_together(ranked: list[tuple[int, float]], texts: dict[int, str],
                   query: str) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """Keyword candidates (texts: id -> chunk text) rescored by TOGETHER for how far their matched words
    stand apart, and the share their best unit holds (citelines.together) for those below 1 (--explain)."""
    share = {cid: citelines.together(*_chunk_presence(texts[cid], query)[1:]) for cid, _ in ranked}
    return ([(cid, score * (1.0 - TOGETHER + TOGETHER * share[cid])) for cid, score in ranked],
            {cid: x for cid, x in share.items() if x < 1.0})


@functools.lru_cache(maxsize=128)
def _chunk_presence(text: str, query: str) -> tuple[list[str], list[tuple[int, int]], list[list[bool]], list[float]]:
    """A chunk's lines, its units (citelines.units) and _presence: computed once for words_together and
    the hit's citation."""
    lines = text.split("\n")
    return (lines, citelines.units(lines), *_presence(lines, query))


class _Matcher:
    """A query's words and CJK bigrams, found in lines the way FTS matches them: a word by its
    stem (fts.match_keys) at the start of a word of the fold()ed line, so `aniversario` finds
    `aniversário` (and NFD text), `recommendations` finds `recommended`; CJK by bigram."""

    def __init__(self, query: str):
        self.keys = match_keys(query)
        self.grams = query_grams(query)

    def first(self, line: str) -> int | None:
        """Where in line the first match starts (an index of line itself), or None."""
        found = [line.find(g) for g in self.grams] + [line.find(nfd(g)) for g in self.grams if nfd(g) != g]
        if self.keys:
            low, where = _fold_map(line)
            for k in self.keys:
                at = _word_start(low, k)
                if at >= 0:
                    found.append(where[at] if where else at)
        found = [i for i in found if i >= 0]
        return min(found) if found else None


@functools.lru_cache(maxsize=64)
def _matcher(query: str) -> _Matcher:
    return _Matcher(query)


def nfd(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFD", text)


def _fold_map(line: str) -> tuple[str, list[int] | None]:
    """fold(line), and for a non-ASCII line where each of its characters came from in line."""
    if line.isascii():
        return line.lower(), None
    parts, where = [], []
    for i, ch in enumerate(line):
        f = _fold_char(ch)
        parts.append(f)
        where.extend([i] * len(f))
    return "".join(parts), where


@functools.lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    return fold(ch)


def _cut_line(line: str, query: str, max_chars: int, at: int | None = None) -> str:
    """At most max_chars of one long line, around the first query word in it (or position at),
    "…" marking cuts."""
    start = max(0, ((_matcher(query).first(line) or 0) if at is None else at) - max_chars // 3)
    start = max(0, min(start, len(line) - (max_chars - 1)))  # near the end: show up to the end
    lead = CUT if start else ""
    piece = line[start:start + max_chars - len(lead)]
    if start + len(piece) < len(line):
        piece = piece[:-1] + CUT
    return lead + piece


def one_line_snippet(snippet: str, query: str, max_chars: int) -> str:
    """A hit's snippet as one line of at most max_chars (`recall --format table`), cut around the
    line that matches best, as make_snippet chose it, not from the top of the snippet."""
    lines = [" ".join(line.split()) for line in snippet.split("\n")]
    lines = [line for line in lines if line] or [""]
    joined = " ".join(lines)
    if len(joined) <= max_chars:
        return joined
    weights = _line_weights(lines, query)
    best = max(range(len(lines)), key=lambda i: (weights[i], -i))
    at = sum(len(line) + 1 for line in lines[:best]) + (_matcher(query).first(lines[best]) or 0)
    return _cut_line(joined, query, max_chars, at=at)


def make_snippet(text: str, start_line: int, query: str, max_chars: int,
                 bonus: dict[int, float] | None = None, *, blocks: bool = False,
                 cite_units: bool = True) -> tuple[int, int, str]:
    """The best window of whole lines (at most max_chars) of a chunk: (first, last, text).
    bonus: extra weight per line number (how close the line's vector window is to the query).
    blocks (recall's hits): the window stays within the paragraph or list of the best-matching line
    (and of the line after it), so a citation is the lines that matter, not the whole note; without
    it (a session message, cited as one line anyway) the window grows over the whole text."""
    if len(text) <= max_chars and (not blocks or "\n" not in text):
        return start_line, start_line + text.count("\n"), text
    lines = text.split("\n")
    weights = _line_weights(lines, query)
    if bonus:
        weights = [w + bonus.get(start_line + i, 0.0) for i, w in enumerate(weights)]
    if blocks and cite_units:  # a recall hit cites the units that answer (citelines), when one does and fits
        span = citelines.choose(lines, weights, max_chars)
        if span is not None:
            return start_line + span[0], start_line + span[1], "\n".join(lines[span[0]:span[1] + 1])
    # a text line before a heading that matches as well (the heading path is in `heading` already)
    best = max(range(len(lines)), key=lambda i: (weights[i], not (blocks and ATX.match(lines[i])), -i))
    if weights[best] <= 0 and len(text) <= max_chars:
        # no line holds a query word (the chunk matched by its heading path): the section is the answer
        return start_line, start_line + len(lines) - 1, text
    lo = hi = best
    size = len(lines[best])
    if size > max_chars:  # one line longer than a snippet: the part around the first query word
        return start_line + best, start_line + best, _cut_line(lines[best], query, max_chars)
    first, last = _block(lines, best) if blocks else (0, len(lines) - 1)
    heads = blocks and ATX.match(lines[best])
    if heads:  # a heading matched (a day's title): the answer is what it heads
        below = next((j for j in range(best + 1, len(lines)) if lines[j].strip() and not ATX.match(lines[j])), None)
        last = _block(lines, below)[1] if below is not None else last

    def joins(i: int) -> bool:
        """Whether line i may join the window: within the block, and a list item that does not match
        the query only as the start of the item the window is in (items are statements of their own),
        unless a matching heading is the best line (then all it heads is the answer)."""
        if not first <= i <= last:
            return False
        if not blocks or weights[i] > 0 or heads:
            return True
        return not _item(lines[i]) if i > hi else not _item(lines[lo])

    nxt = best + 1
    while nxt < len(lines) and not lines[nxt].strip():
        nxt += 1
    if nxt < len(lines) and (heads or not (blocks and (ATX.match(lines[nxt]) or _item(lines[nxt]) and weights[nxt] <= 0))) \
            and size + (nxt - best) + sum(len(x) for x in lines[best + 1:nxt + 1]) <= max_chars:
        # the line after the best match first: an answer follows its question, details their subject
        size += (nxt - best) + sum(len(x) for x in lines[best + 1:nxt + 1])
        hi = nxt
        if blocks:
            last = max(last, _block(lines, nxt)[1])
    while True:  # grow towards the side with more matches, then the following lines
        grew = False
        for nxt in sorted((i for i in (lo - 1, hi + 1) if joins(i)), key=lambda i: (-weights[i], i < lo)):
            if size + 1 + len(lines[nxt]) <= max_chars:
                size += 1 + len(lines[nxt])
                lo, hi = min(lo, nxt), max(hi, nxt)
                grew = True
                break
        if not grew:
            break
    return start_line + lo, start_line + hi, "\n".join(lines[lo:hi + 1])


def _item(line: str) -> bool:
    m = LIST_ITEM.match(line)
    return bool(m) and bool(line[m.end():].strip())


def _block(lines: list[str], i: int) -> tuple[int, int]:
    """The run of non-blank lines around line i, a heading starting a run (it belongs to what follows)."""
    first = i
    while first > 0 and lines[first - 1].strip() and not ATX.match(lines[first]):
        first -= 1
    last = i
    while last + 1 < len(lines) and lines[last + 1].strip() and not ATX.match(lines[last + 1]):
        last += 1
    return first, last


def heading_at(heading: str, lines: list[str], upto: int) -> str:
    """The heading path of line `upto` of a chunk whose first line is under `heading`: the chunk's
    own headings before it (and it, if it is one) update the path. The levels of the path above the
    chunk are not stored: a heading the chunk starts with has its own level, the rest are taken as
    levels 1, 2, … (a daily log's `# day` > `## Section`)."""
    inside = [(len(m.group(1)), _atx_title(m)) for m in (ATX.match(x) for x in lines[1:upto + 1]) if m]
    if not inside:
        return heading
    path = [(n, t) for n, t in enumerate(heading.split(" > "), 1)] if heading else []
    m = ATX.match(lines[0]) if path else None
    if m:
        path[-1] = (len(m.group(1)), path[-1][1])
    for level, title in inside:
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
    return " > ".join(t for _, t in path if t)


def _passes(row, since, until, path_glob, exclude=None) -> bool:
    _, path, _, _, _, day, _ = row
    if since and (day is None or day < since):
        return False
    if until and (day is None or day > until):
        return False
    if exclude and any(fnmatch.fnmatchcase(path, g) for g in exclude):
        return False
    return not path_glob or fnmatch.fnmatchcase(path, glob_to_sql(path_glob))


def _rows(conn, ids) -> dict[int, tuple]:
    ids = list(ids)
    out = {}
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        out.update((r[0], r) for r in conn.execute(
            f"SELECT id, path, start_line, end_line, heading, day, text FROM chunks WHERE id IN ({','.join('?' * len(part))})",
            part))
    return out


def fuse(bm25: list[tuple[int, float]], vec: list[tuple[int, float]], *, method: str = "rrf",
         vector_weight: float = 0.7, text_weight: float = 0.3, rrf_k: int = 60) -> list[tuple[int, float]]:
    """Merge keyword and vector candidates (each best first) into (chunk id, fused score) best first.

    rrf: sum of 1 / (rrf_k + rank) over the lists a chunk is in, scaled so first in both is 1.0.
    weighted: vector_weight * cosine + text_weight * (bm25 score / best bm25 score among candidates);
    recall() first completes both lists (complete_scores), so no candidate lacks a score.
    """
    scores: dict[int, float] = {}
    if method == "rrf":
        for ranked in (bm25, vec):
            for rank, (cid, _) in enumerate(ranked, 1):
                scores[cid] = scores.get(cid, 0.0) + 1.0 / (rrf_k + rank)
        scale = (rrf_k + 1) / 2.0
        scores = {cid: s * scale for cid, s in scores.items()}
    elif method == "weighted":
        best = max((s for _, s in bm25), default=0.0) or 1.0
        for cid, s in bm25:
            scores[cid] = text_weight * s / best
        for cid, sim in vec:
            scores[cid] = scores.get(cid, 0.0) + vector_weight * sim
    else:
        raise ValueError(f"unknown fusion method {method!r}")
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))


KEYWORD_DEPTH = 200  # keyword matches ranked for complete_scores; deeper ones score 0 there


def complete_scores(store, query_vector, bm25: list[tuple[int, float]], vec: list[tuple[int, float]],
                    keyword: dict[int, float]) -> tuple[list, list]:
    """Both scores for every candidate of either list: a keyword-only candidate gets its best
    window's similarity, a vector-only one its BM25 score from `keyword` (the top KEYWORD_DEPTH
    matches; 0 below them or when no query word is in it). Without this a candidate found by one
    list alone gets nothing from the other however well it matches there (LoCoMo dev: turn R@10
    0.794 -> 0.801 at equal lines)."""
    have_v = {cid for cid, _ in vec}
    extra_v = [(cid, max(sim for _, _, sim in wins)) for cid, wins in
               store.windows_of([cid for cid, _ in bm25 if cid not in have_v], query_vector).items()]
    have_b = {cid for cid, _ in bm25}
    extra_b = [(cid, keyword[cid]) for cid, _ in vec if cid not in have_b and cid in keyword]
    return sorted(bm25 + extra_b, key=_best_first), sorted(vec + extra_v, key=_best_first)


def _best_first(item: tuple[int, float]) -> tuple[float, int]:
    return -item[1], item[0]


WINDOW_BONUS = 2.0  # weight of the best-matching vector window's lines, next to term weights


def window_bonus(store, chunk_ids: list[int], query_vector: list[float]) -> dict[int, dict[int, float]]:
    return bonus_from_windows(store.windows_of(chunk_ids, query_vector))


def bonus_from_windows(windows_by_chunk: dict[int, list[tuple[int, int, float]]]) -> dict[int, dict[int, float]]:
    """Per chunk, per line: WINDOW_BONUS x (window similarity / the chunk's best), for windows
    within 80% of the best, so snippets centre on what matched by meaning as well as by words."""
    out: dict[int, dict[int, float]] = {}
    for cid, windows in windows_by_chunk.items():
        best = max(sim for _, _, sim in windows)
        if best <= 0:
            continue
        lines: dict[int, float] = {}
        for a, b, sim in windows:
            if sim >= 0.8 * best:
                for ln in range(a, b + 1):
                    lines[ln] = WINDOW_BONUS * sim / best
        out[cid] = lines
    return out


def _event_day(conn, words: str, path_glob: str | None, exclude: list[str] | None) -> str | None:
    """The day of the daily log whose chunk best matches an event's words (`the week after the move`): a
    search of the chunks that have a day."""
    hits = search_bm25(conn, words, k=1, since="0000-01-01", path_glob=path_glob, exclude=exclude)
    return expand.chunk_days(conn, [hits[0][0]]).get(hits[0][0]) if hits else None


def recall(conn, query: str, *, k: int = 6, since: str | None = None, until: str | None = None,
           path_glob: str | None = None, max_chars: int | None = None, snippet_chars: int = 700,
           mode: str = "bm25", query_vector: list[float] | None = None, store=None, fusion: str = "rrf",
           vector_weight: float = 0.7, text_weight: float = 0.3, multiplier: int = 4,
           explain: bool = False, exclude: list[str] | None = None, rerank=None, watcher: Path | None = None,
           similar=None, cover=None) -> Recall:
    """Ranked hits for a query. mode: bm25 | vector | hybrid (vector modes need query_vector and
    store, else they fall back to bm25 and say so in warnings). exclude: GLOBs of paths never returned.
    rerank: the optional step after fusion (zmem.query.rerank.stage bound to a model), which reorders the
    candidates and chooses the lines each cites. watcher: see search_bm25. similar: (words, phrases) ->
    cosines or None (queryvector.word_similarity), which of an entity's relations a word names
    (entity_first). cover: (query, passages) -> coverages or None (queryvector.token_cover): hybrid recall's
    first hits re-ordered by how much of the query their lines hold (tokencover; not after a reranker)."""
    out = Recall(query=query, mode=mode)
    if not query.strip():
        raise ZmemError("the query is empty", param="query",
                        hint=f"say what to look for, e.g. {example('recall', query='where does Peter live')}")
    if mode != "bm25" and (query_vector is None or store is None):
        out.mode = mode = "bm25"
    n = k * multiplier  # extra candidates: hits that repeat lines already shown are skipped
    bm25: list[tuple[int, float]] = []
    deep: list[tuple[int, float]] = []
    vec: list[tuple[int, float]] = []
    filtered = bool(since or until or path_glob or exclude)
    apart: dict[int, float] = {}  # keyword recall: hits whose matched words stand apart (words_together)
    fetched: dict[int, tuple] = {}  # chunk rows read on the way (words_together, adaptive fusion)
    vector_search = None
    if mode in ("vector", "hybrid"):  # begun first: a vec0 scan runs in threads during the keyword search
        vector_search = store.start_search(query_vector, n * 8 if filtered else n)
    if mode in ("bm25", "hybrid"):
        if build_match(query) is None:
            out.warnings.append("the query has no searchable words (letters, digits or CJK characters)")
        else:
            # hybrid weighted/adaptive: deeper, to give vector candidates their keyword score (complete_scores)
            depth = max(n, KEYWORD_DEPTH) if mode == "hybrid" and fusion in ("weighted", "adaptive") else n
            deep = search_bm25(conn, query, k=depth, since=since, until=until, path_glob=path_glob, exclude=exclude,
                               watcher=watcher)
            bm25 = deep[:n]
            if mode == "bm25" and len(bm25) > 1 and TOGETHER:  # the first k: where it decides what is cited first
                fetched = _rows(conn, [cid for cid, _ in bm25[:k]])
                top, apart = words_together(bm25[:k], {cid: row[6] for cid, row in fetched.items()}, query)
                bm25 = sorted(top + bm25[k:], key=_best_first)
    if vector_search is not None:
        raw = vector_search()
        if filtered:
            rows = _rows(conn, [h[0] for h in raw])
            raw = [h for h in raw if h[0] in rows and _passes(rows[h[0]], since, until, path_glob, exclude)]
        vec = [(cid, sim) for cid, sim, _, _ in raw[:n]]
    cut = len(bm25) == n or len(vec) == n  # a list stopped at n: there are more candidates
    weights = None
    plain = vec  # the cosines as they are (the floor's, --explain's); vec becomes them centred (fusion.centred)
    seen: dict[int, list] = {}  # chunk -> its windows' plain cosines, read while centring (reused for the snippets)
    if mode == "bm25":
        ranked = bm25
    else:
        from zmem.query import fusion as adaptive  # lazily: keyword recall never needs it
        if mode == "vector":
            ranked, seen = adaptive.centred(conn, store, query_vector, vec)
        else:
            if fusion in ("weighted", "adaptive"):
                bm25, plain = complete_scores(store, query_vector, bm25, vec, dict(deep))
            vec, seen = adaptive.centred(conn, store, query_vector, plain)
            if fusion == "adaptive":
                # every candidate with a keyword score: its coverage of the query is its text score (the rows of
                # all the candidates are read once here: the hits' snippets need them too)
                fetched.update(_rows(conn, ({cid for cid, _ in bm25} | {cid for cid, _ in vec}) - fetched.keys()))
                texts = {cid: fetched[cid][6] for cid, _ in bm25 if cid in fetched}
                ranked, weights = adaptive.fuse_by_evidence(conn, query, bm25, vec, texts, text_weight=text_weight,
                                                            vector_weight=vector_weight, query_vector=query_vector,
                                                            store=store, raw=plain)
            else:
                ranked = fuse(bm25, vec, method=fusion, vector_weight=vector_weight, text_weight=text_weight)
    fused = dict(ranked) if explain else {}  # --explain: the ranking's score before named days or entities
    if not (since or until) and ranked:  # a question naming its days: their notes first (expand.days_first)
        ranked, _ = expand.days_first(conn, query, ranked, lambda a, b: search_bm25(
            conn, query, k=n, since=a, until=b, path_glob=path_glob, exclude=exclude), n=n,
            find_day=lambda words: _event_day(conn, words, path_glob, exclude))
    about: dict[int, float] | None = None
    facts_at: dict[int, dict[int, float]] = {}
    if mode != "vector":  # a query naming a known entity: its page and its facts first
        ranked, about, facts_at = entity_first(conn, query, ranked, n=n, since=since, until=until,
                                               path_glob=path_glob, exclude=exclude, similar=similar)
    if not ranked:
        return out
    rows = {**fetched, **_rows(conn, [cid for cid, _ in ranked if cid not in fetched])}
    windows: dict[int, list] = {}
    if mode != "bm25":
        top = [cid for cid, _ in ranked[:k * citelines.DEPTH]]  # the chunks whose lines compete for the k citations
        windows = {cid: seen[cid] for cid in top if cid in seen}
        windows.update(store.windows_of([cid for cid in top if cid not in seen], query_vector))
    bonus = bonus_from_windows(windows)
    sims = citelines.line_similarities(windows)  # where the answer lies by meaning, line by line (citelines)
    if weights is not None:  # a hit with a line holding the query's rare words cites it as BM25 would
        bonus = {cid: lines for cid, lines in bonus.items() if not weights.keyword_line(rows[cid][6])}
    for cid, lines in facts_at.items():
        bonus[cid] = {**bonus.get(cid, {}), **lines}
    why = explain_scores(bm25, plain, [(cid, fused.get(cid, s)) for cid, s in ranked]) if explain else {}
    if why and weights is not None:  # adaptive fusion: the weights this query got
        for cid, w in why.items():
            w.update(weights.explain(cid))
    for cid, share in apart.items():
        if cid in why:  # its score is BM25's times 1 - TOGETHER + TOGETHER x this
            why[cid]["words_together"] = _r(share)
    if why and about is not None:
        for cid, w in why.items():
            w["entity"] = _r(about.get(cid))
    if rerank is not None:
        ranked = rerank(out, query, ranked, rows, bonus, why)
    out = assemble_hits(out, ranked, rows, query, k=k, max_chars=max_chars, snippet_chars=snippet_chars,
                        bonus=bonus, why=why, sims=sims, ordered=bool(about) or out.rerank is not None,
                        by_meaning=weights is not None and weights.evidence < BY_MEANING_EVIDENCE)
    if look_deeper(out, k=k, cut=cut, max_chars=max_chars, snippet_chars=snippet_chars, multiplier=multiplier,
                   weights=weights):
        return recall(conn, query, k=k, since=since, until=until, path_glob=path_glob, max_chars=max_chars,
                      snippet_chars=snippet_chars, mode=mode, query_vector=query_vector, store=store, fusion=fusion,
                      vector_weight=vector_weight, text_weight=text_weight, multiplier=multiplier * 4,
                      explain=explain, exclude=exclude, rerank=rerank, watcher=watcher, similar=similar,
                      cover=cover)
    if cover is not None and mode == "hybrid" and out.rerank is None and not about:  # (entity_first's order stays)
        from zmem.query import tokencover
        tokencover.apply(out, query, cover, explain)
    return out


class IndexEntities:
    """What entity_first reads, from the index as it is now (zmem.history.asof has the same for a commit):
    facts about an entity, an entity page's chunks, the chunks holding a line, chunk texts."""

    def __init__(self, conn, since: str | None = None, until: str | None = None, path_glob: str | None = None,
                 exclude: list[str] | None = None):
        self.conn, self.since, self.until, self.path_glob, self.exclude = conn, since, until, path_glob, exclude

    def facts(self, keys: set[str], spelled: str, others: str | None, n: int) -> list[tuple]:
        """(path, start, end, day, text, names, kind) of facts about these entity keys (the name as the query spells
        it): those holding any of the query's other words (others: an FTS expression), and the newest n."""
        from zmem.query.entities import facts_about
        glob = glob_to_sql(self.path_glob) if self.path_glob else None
        # FTS intersects the name's and the other words' postings: no walk over all of its facts
        match = f'names : {_quote(spelled)} AND ({others})' if others else None
        rows = facts_about(self.conn, keys, match=match, since=self.since, until=self.until,
                           path_glob=glob) if match else []
        rows += facts_about(self.conn, keys, since=self.since, until=self.until, path_glob=glob, limit=n)
        return [r for r in rows if not (self.exclude and any(fnmatch.fnmatchcase(r[0], g) for g in self.exclude))]

    def page(self, path: str) -> list[tuple[int, str]]:
        """(chunk, text) of an entity page, unless the filters leave it out."""
        if not _passes((0, path, 0, 0, "", None, ""), self.since, self.until, self.path_glob, self.exclude):
            return []
        return self.conn.execute("SELECT id, text FROM chunks WHERE path = ?", (path,)).fetchall()

    def holding(self, path: str, line: int) -> list[int]:
        """The chunks of path holding this line."""
        return [cid for cid, in self.conn.execute(
            "SELECT id FROM chunks WHERE path = ? AND start_line <= ? AND end_line >= ?", (path, line, line))]

    def texts(self, ids: list[int]) -> dict[int, str]:
        return dict(self.conn.execute(f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids))

    def names(self) -> None:
        """None: named_in_query looks the names up in the index itself (PastEntities lists a commit's)."""
        return None


def entity_first(conn, query: str, ranked: list[tuple[int, float]], *, n: int, since: str | None = None,
                 until: str | None = None, path_glob: str | None = None, exclude: list[str] | None = None,
                 source=None, similar=None):
    """Ranked hits with the entities the query names first: their pages' chunks and the chunks holding
    Retain facts about them, before every other hit. Returns (ranked, {chunk: entity score}, {chunk:
    {fact line: snippet weight}}); (ranked, None, {}) when the query names no known entity. source: where
    the facts, pages and chunks are read (IndexEntities of conn and the filters by default). similar: see
    recall (_likeliest).

    A name in most notes is worth ~nothing to BM25 (FTS5 floors the weight of a term in more than half
    the chunks at 1e-6), so a hit about the entity scores by how much of the query it covers: each named
    entity and each other query word is a unit, f = the share of them a fact (or a page chunk) holds.
    A fact scores 0.5 + 0.4 f, a page chunk 0.6 + 0.4 f (the page, then its facts, for a bare name; a
    fact holding the name and the other words before a page without them); a note naming the entity
    0.45 + 0.4 f of its best line naming it (below a fact or page holding as much). The hit's score is
    0.5 + 0.9 (that - 0.5) + 0.05 x its keyword (or fused) score: in [0.5, 1]; every other hit scores
    half its keyword score, in [0, 0.5)."""
    from zmem.query.entities import named_in_query
    named, other = named_in_query(conn, query, source.names() if source is not None else None)
    if not named:
        return ranked, None, {}
    source = source or IndexEntities(conn, since, until, path_glob, exclude)
    asked = Asked(named, other, word_keys(" ".join(other)), [fold(e.spelled) for e in named])
    about: dict[int, float] = {}
    facts_at: dict[int, dict[int, float]] = {}
    newest: dict[int, str] = {}
    scored: dict[tuple[str, int, int], tuple[float, str]] = {}

    def score(path: str, start: int, end: int, v: float, day: str | None) -> None:
        """A fact's entity score: the best any way of reaching it gives (its day breaks ties)."""
        scored[(path, start, end)] = max(scored.get((path, start, end), (0.0, "")), (v, day or ""))

    links, relations, explained = _own_facts(asked, source, n, score, about)
    _follow(asked, source, n, links, relations, explained, score, similar)
    for (path, start, end), (v, day) in sorted(scored.items(), key=lambda x: (-x[1][0], _desc(x[1][1]), x[0]))[:n]:
        for cid in source.holding(path, start):
            about[cid] = max(about.get(cid, 0.0), v)
            newest[cid] = max(newest.get(cid, ""), day)
            lines = facts_at.setdefault(cid, {})
            for ln in range(start, end + 1):  # the snippet shows the fact (the best of them)
                lines[ln] = max(lines.get(ln, 0.0), FACT_WEIGHT * v)
    # a note naming the entity competes by the share of its best line naming it, a little below a fact or
    # page holding as much: "ana tonight" puts the line saying both before a fact that only names @Ana
    # (in the same chunk too: the snippet then shows that line), while a note with Peter on one line and
    # Porto on another stays below Peter's facts and page
    look = [cid for cid, _ in ranked[:3 * n] if cid not in about or cid in facts_at]
    for cid, text in source.texts(look).items():
        lows = [fold(line) for line in text.split("\n")]
        best = max((asked.share(low) for low in lows if any(_word_start(low, s) >= 0 for s in asked.spelled)),
                   default=None)
        if best is not None and 0.45 + 0.4 * best > about.get(cid, 0.0):
            about[cid] = 0.45 + 0.4 * best
            facts_at.pop(cid, None)  # the snippet centres on the matching line, not on a lesser fact
    base = dict(ranked)
    final = {cid: _r(0.5 + 0.9 * (about[cid] - 0.5) + 0.05 * base.get(cid, 0.0)) if cid in about else 0.5 * s
             for cid, s in [*ranked, *((c, 0.0) for c in about if c not in base)]}
    # equal scores (as shown): the newer fact first
    return (sorted(final.items(), key=lambda x: (-x[1], _desc(newest.get(x[0], "")), x[0])), about, facts_at)


# CJK characters that ask or join rather than say (where, what, who, a question's or a possessive's particle): a
# bigram holding one is no word a fact holds
CJK_FUNCTION = frozenset("的之了吗嗎呢吧么麼什哪谁誰怎几幾")


def word_keys(text: str) -> list[str]:
    """What a fact must hold to hold each of text's words (match_keys), and its CJK bigrams but those
    holding a CJK_FUNCTION character: the units entity_first counts."""
    return [*match_keys(text), *(g for g in query_grams(text) if CJK_FUNCTION.isdisjoint(g))]


class Asked:
    """A query as entity_first reads it: the entities it names (entities.Named), its other words, their keys
    (word_keys: with the names, the units a fact may hold), each name folded, and the words the query gives
    the names (entities.possessed_words), joined. (A plain class: a dataclass costs every fresh recall ~0.8
    ms at import.)"""
    __slots__ = ("named", "other", "rest", "spelled", "units", "given")

    def __init__(self, named: list, other: list[str], rest: list[str], spelled: list[str]):
        self.named, self.other, self.rest, self.spelled = named, other, rest, spelled
        self.units = len(named) + len(rest)
        self.given = " ".join(w for e in named for w in e.possessed)

    def held(self, low: str, keys: set[str] = frozenset(), own: str | None = None) -> set:
        """The units a folded text holds: named entities (by index: also those among keys, the entity
        keys of a fact's names, and own) and other words (by key)."""
        return ({i for i, (e, s) in enumerate(zip(self.named, self.spelled)) if e.key == own or e.key in keys
                 or _word_start(low, s) >= 0} | {key for key in self.rest if _word_start(low, key) >= 0})

    def share(self, low: str, keys: set[str] = frozenset(), own: str | None = None) -> float:
        return len(self.held(low, keys, own)) / self.units


# an entity the facts link to -> (the units the link holds, whether it reads "<it> <word> <named>", its name, what
# the link says besides the names: `sister of` for `R @Bea sister_of @Ana`)
Links = dict[str, tuple[set, bool, str, str]]


def _own_facts(asked: Asked, source, n: int, score, about: dict[int, float]) -> tuple[Links, Links, set]:
    """Scores the named entities' facts (through score) and page chunks (into about); returns the entities
    their facts link to through a fact holding a word of the question (links) and through a relation fact
    holding none (relations), and the question's other words some fact of theirs holds (explained)."""
    links: Links = {}
    relations: Links = {}
    explained: set = set()
    rest = set(asked.rest)
    named_keys = {fold(e.key) for e in asked.named}
    for e, spelt in zip(asked.named, asked.spelled):
        if e.keys:  # its facts holding other query words (any number), and its newest facts
            others = (build_match(" ".join([*asked.other, *(x.spelled for x in asked.named if x is not e)]))
                      if asked.units > 1 else None)
            for path, start, end, day, text, names, kind in source.facts(e.keys, e.spelled, others, n):
                keys = {fold(entity_key(x)): x for x in names.split("\t")}
                low = fold(text)
                units_held = asked.held(low, set(keys), e.key)
                score(path, start, end, 0.5 + 0.4 * len(units_held) / asked.units, day)
                explained |= units_held & rest
                to = links if units_held & rest else relations if kind == "relation" else None
                if to is not None:
                    at = _word_start(low, spelt)
                    said = _predicate(text, keys.values())
                    for key, name in keys.items():
                        # `R @Bea sister_of @Ana`: Bea is Ana's sister; `R @Ana sister_of @Zoe` says Ana is Zoe's
                        forward = 0 <= _word_start(low, fold(name)) < at
                        was = to.get(key)
                        if key not in named_keys and (was is None or (len(units_held), forward) > (len(was[0]), was[1])):
                            to[key] = (units_held, forward, name, said)
        if e.page:
            for cid, text in source.page(e.page):
                about[cid] = max(about.get(cid, 0.0), 0.6 + 0.4 * asked.share(fold(text), own=e.key))
    return links, relations, explained


def _predicate(text: str, names) -> str:
    """What a relation fact says besides its names, as words: `sister of` for `Bea sister_of Ana`."""
    for name in names:
        text = text.replace(name, " ")
    return " ".join(text.replace("_", " ").split())


# relations whose predicate is within this cosine of the closest to the words the question gives the entity are
# all taken to be what it names (queryvector.word_similarity)
SAME = 0.02


def _likeliest(asked: Asked, guesses: list, similar) -> set[str] | None:
    """Which guessed relations (key, link) the words the question gives the named entity name: with similar
    (hybrid recall), those whose predicate is within SAME of the closest to those words; None
    (all of them) without it, or when they cannot be embedded."""
    sims = similar(asked.given, [link[3] for _, link in guesses]) if similar and asked.given and guesses else None
    if not sims:
        return None
    best = max(sims)
    return {key for (key, _), sim in zip(guesses, sims) if sim >= best - SAME}


def _follow(asked: Asked, source, n: int, links: Links, relations: Links, explained: set, score,
            similar=None) -> None:
    """Scores (through score) the facts of the entities at the other end of links, and of relations when a
    word of the question is in no fact of the named entities: the other end answers what the link does not.
    "Where does Ana's sister live?" with `R @Bea sister_of @Ana` (Ana, sister) and `W @Bea: Lives in
    Braga.` (live) holds the whole question, HOP below a fact of Ana's holding as much; through a relation
    holding no word of it, what it answers besides the unexplained word, one more HOP lower."""
    def strongest(found: Links) -> list:
        return sorted(found.items(), key=lambda x: (-len(x[1][0]), not x[1][1], x[0]))

    rest = set(asked.rest)
    hops = [(key, link, 0) for key, link in strongest(links)][:MAX_HOPS]
    unexplained = rest - explained
    # a word the question gives the named entity ("Ana's sibling") that none of its facts holds asks about
    # someone else: a relation followed without a word is taken to be that word, so what it leads to holds
    # the whole question, above the entity's own facts (which answer about the entity, not its sibling)
    # (with similar, only the relations whose predicate is closest to that word: `sister of` for "sibling")
    given = set(word_keys(asked.given)) & unexplained
    # a word no fact of the named entity holds ("Ana's sibling"): maybe a relation said otherwise
    guesses = [(key, link) for key, link in strongest(relations) if key not in links][:MAX_HOPS - len(hops)] \
        if unexplained else []
    meant = _likeliest(asked, guesses, similar) if given else None
    hops += [(key, link, 1) for key, link in guesses]
    for key, (via, forward, name, _), guessed in hops:
        wanted = [w for w in asked.other if set(word_keys(w)) - via - (unexplained if guessed else set())]
        if not wanted:
            continue
        for path, start, end, day, text, names, _ in source.facts({entity_key(name)}, name, build_match(" ".join(wanted)), n):
            units_held = asked.held(fold(text), {fold(entity_key(x)) for x in names.split("\t")})
            if not (units_held - via) & rest:  # it must answer a word the link does not
                continue
            taken = via | units_held | (given if guessed and (meant is None or key in meant) else set())
            score(path, start, end, 0.5 + 0.4 * len(taken) / asked.units - HOP * (1 + guessed + (not forward)), day)


FACT_WEIGHT = 100.0  # a fact line's snippet weight per unit of its entity score: above any query-term weight
MAX_HOPS = 8  # entities at the other end of a link whose facts entity_first reads, the links holding most first
# a fact reached through a link scores this much below a fact of the named entity holding as much, twice this through
# a link naming the named entity first (the relation read the other way round)
HOP = 0.02


def _desc(day: str) -> tuple:
    """A sort key putting later ISO days first (and no day last)."""
    return tuple(-ord(c) for c in day) + (1,)


MAX_MULTIPLIER = 256  # candidates per hit, at most, when candidates keep repeating shown lines
MIN_SNIPPET = 80  # characters: less --max-chars budget than this shows no part of a longer chunk


def look_deeper(out: Recall, *, k: int, cut: bool, max_chars: int | None, snippet_chars: int, multiplier: int,
                weights=None) -> bool:
    """Whether a recall should run again with four times the candidates: it gave fewer than k hits because its
    candidates repeated lines already shown (chunks of one very long line share a citation), a candidate list
    stopped at its length (cut), the --max-chars budget is not spent and MAX_MULTIPLIER not reached. Not when
    the adaptive fusion's floor found that nothing matches (weights.nothing): deeper candidates match less, and
    each deeper pass scanned four times the vectors (~0.8 s at 10k chunks, and sqlite-vec's limit at the last)."""
    spent = max_chars is not None and max_chars - sum(len(h.snippet) for h in out.results) < min(MIN_SNIPPET,
                                                                                               snippet_chars)
    floored = weights is not None and weights.nothing
    return len(out.results) < k and cut and not floored and not spent and multiplier < MAX_MULTIPLIER


def explain_scores(bm25: list[tuple[int, float]], vec: list[tuple[int, float]],
                   ranked: list[tuple[int, float]]) -> dict[int, dict]:
    """`--explain`: per candidate, its BM25 rank/score, vector rank/similarity and fused score."""
    b = {cid: (rank, s) for rank, (cid, s) in enumerate(bm25, 1)}
    v = {cid: (rank, s) for rank, (cid, s) in enumerate(vec, 1)}
    return {cid: {"bm25_rank": b.get(cid, (None, None))[0], "bm25_score": _r(b.get(cid, (None, None))[1]),
                  "vector_rank": v.get(cid, (None, None))[0], "vector_similarity": _r(v.get(cid, (None, None))[1]),
                  "fused": _r(fused)} for cid, fused in ranked}


# below this keyword evidence the vector windows alone choose a hybrid hit's lines (assemble_hits' by_meaning).
# Lower than fusion.WEAK (where the query's words start to count as incidental and the vectors rank): between 0.4 and 0.5 the query's words still point at the answer's line often enough (LoCoMo
# dev's tuning half: budget R@10 0.782 -> 0.790 against WEAK; bench/eval.py's paraphrase tuning halves equal)
BY_MEANING_EVIDENCE = 0.4


def assemble_hits(out: Recall, ranked: list[tuple[int, float]], rows: dict[int, tuple], query: str, *, k: int,
                  max_chars: int | None, snippet_chars: int, bonus: dict, why: dict, rev: str | None = None,
                  sims: dict[int, dict[int, float]] | None = None, ordered: bool = False,
                  by_meaning: bool = False) -> Recall:
    """The k hits for the ranked chunks (rows: id -> (id, path, start, end, heading, day, text)): the units
    of the first citelines.DEPTH x k chunks compete for the k citations (citelines.chunk_spans, choose_spans:
    a hit cites the lines that answer, and a chunk with two answers may give two hits), then the further
    chunks one hit each; lines already cited are not cited again, and the --max-chars budget stops it.
    sims: per chunk, per line, the cosine of its best vector window (hybrid and vector recall). The first
    ranked chunk's best lines are always the first hit. ordered (a reranker's order and passages, a named
    entity's page and facts first): one hit per chunk in rank order, citing its best units (make_snippet).
    by_meaning (hybrid recall whose keyword evidence is incidental): the vector windows choose
    the lines, the query's words (matched incidentally) do not."""
    budget = max_chars
    shown: dict[str, list[tuple[int, int]]] = {}
    over_budget = False
    for cid, first, last, snippet, score, (start, end) in _citations(ranked, rows, query, k, snippet_chars, bonus, sims or {},
                                                                           ordered, by_meaning):
        if len(out.results) == k or (budget is not None and budget <= 0):
            break
        _, path, _, _, heading, day, text = rows[cid]
        limit = snippet_chars if budget is None else min(snippet_chars, budget)
        if limit < min(MIN_SNIPPET, snippet_chars) and len(snippet) > limit:
            over_budget = True  # too little room left to show part of this chunk; a shorter one may fit
            continue
        if len(snippet) > limit:
            first, last, snippet = make_snippet(snippet, first, query, limit, bonus.get(cid), blocks=True)
        if any(a <= last and first <= b for a, b in shown.get(path, ())):
            continue  # overlapping chunks: these lines were already returned
        shown.setdefault(path, []).append((first, last))
        at = first - rows[cid][2]
        if at > 0:  # the snippet may stand under a heading of the chunk
            heading = heading_at(heading, text.split("\n", at + 1)[:at + 1], at)
        hit = Hit(path, first, last, _r(score), snippet, day, heading, start, end, rev=rev)
        if why:
            hit.explain = why[cid]
        out.results.append(hit)
        if budget is not None:
            budget -= len(snippet)
    if over_budget and len(out.results) < k:
        out.warnings.append(f"stopped at {len(out.results)} results: --max-chars {max_chars} reached")
    return out


def _citations(ranked, rows, query, k, snippet_chars, bonus, sims, ordered=False, by_meaning=False):
    """(chunk id, first line, last line, text, chunk score, (chunk start, chunk end)) in the order recall cites
    them: the spans citelines chooses among the first DEPTH x k chunks (DEPTH_KEYWORDS x k without vectors),
    then one make_snippet window per further chunk."""
    depth = 0 if ordered else (citelines.DEPTH if sims else citelines.DEPTH_KEYWORDS) * k  # ordered: one hit per chunk
    top = max((s for _, s in ranked[:depth]), default=0.0) or 1.0
    candidates: list[citelines.Span] = []
    plain: dict[int, tuple[int, int, str]] = {}  # chunks cited as make_snippet chooses
    lines_of: dict[int, list[str]] = {}
    score_of = dict(ranked[:depth])
    for cid, score in ranked[:depth]:
        _, path, start, end, heading, day, text = rows[cid]
        lines, spans_of, present, idf = _chunk_presence(text, query)
        lines_of[cid] = lines
        keyword = weights = _weigh(present, idf)
        extra = bonus.get(cid)
        if by_meaning and extra and sims.get(cid):  # the windows' bonus alone says which lines
            keyword = weights = [0.0] * len(lines)
        if extra:
            weights = [w + extra.get(start + i, 0.0) for i, w in enumerate(weights)]
        spans = None
        if len(lines) > 1:
            spans = citelines.chunk_spans(cid, start, lines, weights, score / top, sims.get(cid), snippet_chars,
                                          keyword, spans_of)
        if spans is None:
            # a one-line chunk, or citelines found no unit to cite (none matches, or the best is longer than a
            # snippet): cited as make_snippet chooses, scored as a unit of its own would be
            plain[cid] = make_snippet(text, start, query, snippet_chars, extra, blocks=True,
                                      cite_units=len(lines) == 1)
            first, last = plain[cid][:2]
            spans = [citelines.whole_span(cid, start, first, last, weights, score / top, sims.get(cid))]
        candidates.extend(spans)

    def text_of(cid):
        return rows[cid][1], rows[cid][2], lines_of[cid]

    chosen = citelines.choose_spans(candidates, k, text_of)
    if chosen:  # the first ranked chunk's best lines first (an identifier, a clear vector lead)
        at = next((i for i, c in enumerate(chosen) if c[0] == ranked[0][0]), 0)
        chosen.insert(0, chosen.pop(at))
    for cid, path, first, last, *merged in chosen:
        if cid in plain and not merged and (first, last) == plain[cid][:2]:
            yield cid, first, last, plain[cid][2], score_of[cid], rows[cid][2:4]
            continue
        start = rows[cid][2]
        if not merged and first >= start and last - start < len(lines_of[cid]):
            yield cid, first, last, "\n".join(lines_of[cid][first - start:last - start + 1]), score_of[cid], rows[cid][2:4]
            continue
        line: dict[int, str] = {}
        for c in (cid, *merged):
            line.update((rows[c][2] + i, x) for i, x in enumerate(lines_of[c]))
        yield (cid, first, last, "\n".join(line[n] for n in range(first, last + 1)), score_of[cid],
               (min(rows[c][2] for c in (cid, *merged)), max(rows[c][3] for c in (cid, *merged))))
    for cid, score in ranked[depth:]:
        _, path, start, end, heading, day, text = rows[cid]
        first, last, snippet = make_snippet(text, start, query, snippet_chars, bonus.get(cid), blocks=True)
        yield cid, first, last, snippet, score, (start, end)


def _r(x):
    # 4 significant digits, not decimals: a word in most notes scores ~1e-6 by BM25, which must not print as 0
    return None if x is None else float(f"{x:.4g}")


# ----------------------------------------------------------------------------- facts (--kind, --entity)


@dataclass
class FactHit:
    fact: object          # entities.FactRow
    score: float
    explain: dict | None = None
    rev: str | None = None  # as-of recall: the commit whose version of the file holds the fact

    @property
    def citation(self) -> str:
        f = self.fact
        at = f"@{self.rev[:10]}" if self.rev else ""
        return f"{f.path}{at}#L{f.start_line}-L{f.end_line}"

    def to_json(self) -> dict:
        f = self.fact
        d = {"type": "fact", "path": f.path, "start_line": f.start_line, "end_line": f.end_line,
             "score": _r(self.score), "snippet": f.text, "citation": self.citation, **f.to_json()}
        if self.explain is not None:
            d["explain"] = self.explain
        return d


def recall_facts(conn, query: str, *, k: int = 6, kind: str | None = None, entity: str | None = None,
                 since: str | None = None, until: str | None = None, path_glob: str | None = None,
                 mode: str = "bm25", query_vector: list[float] | None = None, store=None, fusion: str = "weighted",
                 vector_weight: float = 0.3, text_weight: float = 0.7, multiplier: int = 4,
                 explain: bool = False, exclude: list[str] | None = None) -> Recall:
    """Retain facts for a query, filtered by kind and entity: BM25 over the facts' text and entity
    names, fused with the similarity of the vector window that holds each fact's line."""
    from zmem.query.entities import query_facts
    out = Recall(query=query, mode=mode if query_vector is not None and store is not None else "bm25")
    if not query.strip():
        raise ZmemError("the query is empty", param="query",
                        hint=f"say what to look for, e.g. {example('recall', entity='Peter', query='where')}")
    allowed = {f.row: f for f in query_facts(conn, entity=entity, kind=kind, since=since, until=until,
                                             path_glob=glob_to_sql(path_glob) if path_glob else None)
               if not (exclude and any(fnmatch.fnmatchcase(f.path, g) for g in exclude))}
    if not allowed:
        return out
    bm25: list[tuple[int, float]] = []
    match = build_match(query)
    if match is not None and out.mode in ("bm25", "hybrid"):
        rows = conn.execute("SELECT rowid, rank FROM facts_fts WHERE facts_fts MATCH ? ORDER BY rank", (match,))
        bm25 = [(rid, (-r) / (1.0 - r)) for rid, r in rows if rid in allowed][:k * multiplier]
    vec: list[tuple[int, float]] = []
    if out.mode in ("vector", "hybrid"):
        vec = _fact_similarities(conn, store, query_vector, list(allowed.values()))[:k * multiplier]
    weights = None
    if out.mode == "hybrid" and fusion == "adaptive":
        from zmem.query.fusion import fuse_by_evidence
        ranked, weights = fuse_by_evidence(conn, query, bm25, vec, {rid: allowed[rid].text for rid, _ in bm25},
                                           text_weight=text_weight, vector_weight=vector_weight, table="facts_fts",
                                           query_vector=query_vector, store=store)
    else:
        ranked = bm25 if out.mode == "bm25" else vec if out.mode == "vector" else \
            fuse(bm25, vec, method=fusion, vector_weight=vector_weight, text_weight=text_weight)
    b = {rid: (rank, s) for rank, (rid, s) in enumerate(bm25, 1)}
    v = {rid: (rank, s) for rank, (rid, s) in enumerate(vec, 1)}
    if entity is not None and len(ranked) < k:
        # about one entity, the facts the words missed still answer: newest first, after the matches
        seen = {rid for rid, _ in ranked}
        rest = [(rid, 0.0) for rid in allowed if rid not in seen][:k - len(ranked)]
        if rest:
            out.warnings.append(f"{len(rest)} of the facts shown did not match the query; listed newest first")
        ranked = list(ranked) + rest
    for rid, score in ranked[:k]:
        why = None
        if explain:
            why = {"bm25_rank": b.get(rid, (None, None))[0], "bm25_score": _r(b.get(rid, (None, None))[1]),
                   "vector_rank": v.get(rid, (None, None))[0], "vector_similarity": _r(v.get(rid, (None, None))[1]),
                   "fused": _r(score), **(weights.explain(rid) if weights else {})}
        out.results.append(FactHit(allowed[rid], score, why))
    return out


def _fact_similarities(conn, store, query_vector, facts) -> list[tuple[int, float]]:
    """(fact row, cosine of the best vector window covering the fact's first line), best first."""
    by_path: dict[str, list] = {}
    for f in facts:
        by_path.setdefault(f.path, []).append(f)
    sims: dict[int, float] = {}
    for path, group in by_path.items():
        chunk_ids = [cid for cid, in conn.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
        windows = [w for ws_ in store.windows_of(chunk_ids, query_vector).values() for w in ws_]
        for f in group:
            covering = [sim for a, b, sim in windows if a <= f.start_line <= b]
            if covering:
                sims[f.row] = max(covering)
    return sorted(sims.items(), key=lambda x: (-x[1], x[0]))
