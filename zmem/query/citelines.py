"""The lines a recall hit cites: the statement that answers, not the ~400-token chunk around it.

A chunk is cut into units, the smallest spans that read on their own: a list item with its
continuation lines, a table row, a whole fenced code block, a heading, and in prose a run of lines up
to one that ends a sentence (a hard-wrapped sentence stays whole; a line that is a statement of its own,
like `Name: words` in a transcript or a log line, is one unit). Each line weighs what recall's snippets
weigh it (search._line_weights: the query's words by their rarity among the chunk's lines, plus the
vector windows' bonus in hybrid and vector recall, plus the weight of a Retain fact line); a unit weighs
its best line. The hit cites the best unit, then

- the unit after it when the best one asks a question (`…?`): the answer follows its question;
- the units that a matching heading heads, when the best line is that heading;
- a neighbouring unit that weighs at least NEIGHBOUR of the best one (two statements answering
  together), while the citation stays within MAX_UNITS units and the snippet's characters.

So a citation is always whole units: never half a bullet, a table row or a code block cut in two
(unless one unit alone is longer than the snippet: then its best lines, as make_snippet chooses them).
The hit still carries the chunk's own range (Hit.chunk_start_line/chunk_end_line) for who wants context.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from zmem.text.markdown import ATX, FENCE_OPEN, LIST_ITEM, is_marker

NEIGHBOUR = 0.75  # a neighbouring unit weighing this share of the best unit's weight joins the citation
MAX_UNITS = 2  # units a citation holds at most, a question's answer and a heading's body aside

# a sentence ends a unit: its last character (closing quotes, brackets and emphasis looked through)
_CLOSERS = "\"'”’»)]*_` \t"
_ENDS = frozenset(".!?…。！？:;")
# a line that states something on its own: `Name: words`, `12:30 words`, `[tag] words`, `**Key**: words`
_LABEL = re.compile(r"^\s*(?:\*\*[^*]{1,40}\*\*:?|\[[^\]]{1,40}\]|\d{1,2}:\d{2}\b|[^\s:][^:]{0,40}:\s)")
_ROW = re.compile(r"^\s*\|")


def units(lines: list[str]) -> list[tuple[int, int]]:
    """The units of a chunk's lines as (first, last) indexes; blank lines and zmem's marker lines
    (markdown.is_marker) belong to none."""
    kinds = [_kind(line) if line[:1] in _MARKS else (BLANK if not line or is_marker(line) else PLAIN)
             for line in lines]
    out: list[tuple[int, int]] = []
    i, n = 0, len(lines)
    while i < n:
        kind = kinds[i]
        if kind == BLANK:
            i += 1
            continue
        if kind == FENCE:  # a code block is one unit, to its closing fence (or the chunk's end)
            mark = FENCE_OPEN.match(lines[i]).group(2)
            close = mark[0] * len(mark)
            j = i + 1
            while j < n and not lines[j].lstrip().startswith(close):
                j += 1
            last = min(j, n - 1)
            out.append((i, last))
            i = last + 1
            continue
        if kind in (HEADING, ROW):
            out.append((i, i))
            i += 1
            continue
        item = kind == ITEM
        j = i
        while j + 1 < n:  # the lines continuing this one's unit
            nxt = kinds[j + 1]
            if nxt != PLAIN and nxt != INDENTED:
                break
            if not (item and nxt == INDENTED) and (  # an item's indented continuation always; else a sentence's
                    lines[j].rstrip(_CLOSERS)[-1:] in _ENDS or _LABEL.match(lines[j + 1])):
                break
            j += 1
        out.append((i, j))
        i = j + 1
    return out


# line kinds (units): a blank line, a heading, a fence, a table row, a list item, an indented line, other text
BLANK, HEADING, FENCE, ROW, ITEM, INDENTED, PLAIN = range(7)
# what a heading, list item, fence or table row can start with (indented up to three spaces: a space)
_MARKS = frozenset("#-*+|`~ \t0123456789")


def _kind(line: str) -> int:
    """The kind of a line starting with one of _MARKS."""
    body = line.lstrip(" \t")
    if not body:
        return BLANK
    if len(line) - len(body) > 3 or "\t" in line[:len(line) - len(body)]:
        return INDENTED
    c = body[0]
    if c == "#" and ATX.match(line):
        return HEADING
    if c == "|":
        return ROW
    if c in "`~" and FENCE_OPEN.match(line):
        return FENCE
    if (c in "-*+" or c.isdigit()) and LIST_ITEM.match(line):
        return ITEM
    return INDENTED if body is not line else PLAIN


def choose(lines: list[str], weights: list[float], max_chars: int) -> tuple[int, int] | None:
    """(first, last) line indexes to cite, or None when no unit matches or the best unit is longer than
    max_chars (make_snippet then chooses, as before)."""
    spans = units(lines)
    if not spans:
        return None
    unit_w = [max(weights[a:b + 1]) for a, b in spans]
    best = max(range(len(spans)), key=lambda u: (unit_w[u], not ATX.match(lines[spans[u][0]]), -u))
    top = unit_w[best]
    if top <= 0:
        return None

    def size(a: int, b: int) -> int:
        return sum(len(x) for x in lines[a:b + 1]) + (b - a)

    lo = hi = best
    if size(*spans[best]) > max_chars:
        return None
    head = ATX.match(lines[spans[best][0]])
    if head:  # a matching heading: what it heads, up to the next heading
        while hi + 1 < len(spans) and not ATX.match(lines[spans[hi + 1][0]]) \
                and size(spans[lo][0], spans[hi + 1][1]) <= max_chars:
            hi += 1
        return spans[lo][0], spans[hi][1]
    if lines[spans[best][1]].rstrip().endswith(("?", "？")) and best + 1 < len(spans) \
            and not ATX.match(lines[spans[best + 1][0]]) and size(spans[lo][0], spans[best + 1][1]) <= max_chars:
        hi = best + 1  # a question: its answer follows
    while hi - lo + 1 < MAX_UNITS:
        near = [u for u in (lo - 1, hi + 1) if 0 <= u < len(spans) and unit_w[u] >= NEIGHBOUR * top
                and not ATX.match(lines[spans[u][0]])]
        near = [u for u in near if size(spans[min(lo, u)][0], spans[max(hi, u)][1]) <= max_chars]
        if not near:
            break
        u = max(near, key=lambda u: (unit_w[u], -u))
        lo, hi = min(lo, u), max(hi, u)
    return spans[lo][0], spans[hi][1]


def together(spans: list[tuple[int, int]], present: list[list[bool]], rarity: list[float]) -> float:
    """The share of a chunk's matched query words (present: per line, which it holds; rarity: each
    word's weight) that its best unit (spans: units()) holds: 1.0 when one unit holds them all (or
    fewer than two match)."""
    held = [any(col) for col in zip(*present)] if present else []
    whole = sum(w for w, h in zip(rarity, held) if h)
    if whole <= 0 or sum(held) < 2:
        return 1.0
    best = max(sum(w for w, hit in zip(rarity, row) if hit) for row in present)
    for a, b in spans:
        if best >= whole:
            break
        if b > a:  # a one-line unit is its line, counted above
            rows = present[a:b + 1]
            best = max(best, sum(w for i, w in enumerate(rarity) if any(r[i] for r in rows)))
    return best / whole


# ----------------------------------------------------------------------------- spans across hits

# candidate spans taken from one chunk, at most: a strong chunk's fifth and sixth units beat a weak chunk's best (LoCoMo
# dev hybrid, 4 -> 6, tuning half turn / budget R@10 0.842 / 0.795 -> 0.851 / 0.796, held-out 0.818 / 0.762 -> 0.830 /
# 0.771, lines for ten hits 22.6 -> 24.1; bench/README.md "Six units a chunk")
PER_CHUNK = 6
# chunks whose lines compete for the k citations: the first DEPTH x k ranked ones, with vectors (recall and as-of
# recall read those chunks' vector windows)
DEPTH = 2
DEPTH_KEYWORDS = 1  # the same from keywords alone: deeper chunks' lines did not change what BM25 cites
MERGE_LINES = 3  # a candidate touching a chosen citation extends it up to this many lines instead of a new hit
# a unit's weight over its chunk's best unit, next to its chunk's score over the best chunk's (both in [0, 1])
# and its best vector window's cosine: with vectors its words count fully; from keywords alone the line weight
# (relative to its own chunk) would let any matching line of a weak chunk outrank a strong chunk's second line.
# Tuned on LoCoMo dev's tuning half (citelines' docs/citations.md): 1.0 / 0.3
LINE_WEIGHT = 1.0
LINE_WEIGHT_KEYWORDS = 0.3


@dataclass
class Span:
    score: float  # the chunk's score over the best's + the unit's weight over the chunk's best unit + its cosine
    cid: int
    first: int  # file line numbers, inclusive
    last: int


def chunk_spans(cid: int, start: int, lines: list[str], weights: list[float], chunk_score: float,
                sims: dict[int, float] | None, max_chars: int, keyword: list[float] | None = None,
                spans: list[tuple[int, int]] | None = None) -> list[Span] | None:
    """A chunk's candidate citations: its PER_CHUNK best units, each with what completes it (the answer
    after a question, the question and answer after a statement, what a heading heads), scored to compete
    with other chunks' units. None when no unit matches or the best one is longer than max_chars (the
    chunk is then cited as make_snippet chooses). keyword: the lines' query-word weights alone; a unit
    holding none of the query's words (found by meaning only) is cited with the rest of its vector
    window, the units beside it that the same window holds: which of them answers, no word says.
    spans: units(lines), when the caller has them."""
    spans = units(lines) if spans is None else spans
    if not spans:
        return None
    unit_w = [max(weights[a:b + 1]) for a, b in spans]
    top = max(unit_w)
    if top <= 0:
        return None
    heads = [_level(lines[a]) for a, _ in spans]
    # equal weights: a text line before a heading (the heading path is in the hit's `heading` already)
    order = sorted(range(len(spans)), key=lambda u: (-unit_w[u], heads[u] > 0, u))
    ends = [0]  # ends[i]: characters of lines[:i] joined by newlines, plus one
    for line in lines:
        ends.append(ends[-1] + len(line) + 1)
    if ends[spans[order[0]][1] + 1] - ends[spans[order[0]][0]] - 1 > max_chars:
        return None
    out = []
    for u in order[:PER_CHUNK]:
        if unit_w[u] <= 0:
            break
        lo, hi = _complete(lines, spans, heads, ends, u, max_chars)
        if sims and keyword is not None and max(keyword[spans[u][0]:spans[u][1] + 1]) <= 0:
            lo, hi = _window(spans, u, lo, hi, start, sims, heads, ends, max_chars)
        score = _unit_score(chunk_score, unit_w[u], top, sims, range(start + spans[u][0], start + spans[u][1] + 1))
        out.append(Span(score, cid, start + lo, start + hi))
    return out


def _unit_score(chunk_score: float, weight: float, best: float, sims: dict[int, float] | None, lines: range) -> float:
    """A candidate citation's score (Span.score): its chunk's score over the best chunk's, its unit's weight
    over its chunk's best unit's, and the best window cosine of its lines (file line numbers)."""
    line_weight = LINE_WEIGHT if sims is not None else LINE_WEIGHT_KEYWORDS
    return chunk_score + line_weight * weight / best + (max((sims.get(n, 0.0) for n in lines), default=0.0)
                                                        if sims else 0.0)


def whole_span(cid: int, start: int, first: int, last: int, weights: list[float], chunk_score: float,
               sims: dict[int, float] | None) -> Span:
    """The citation of a chunk that chunk_spans does not cut (one line, or no unit to cite), scored as
    chunk_spans scores a unit so that it competes with other chunks' units on equal terms: its lines hold the
    chunk's best weight if any of them matches at all."""
    matched = any(weights[n - start] > 0 for n in range(first, last + 1) if 0 <= n - start < len(weights))
    return Span(_unit_score(chunk_score, 1.0 if matched else 0.0, 1.0, sims, range(first, last + 1)), cid, first, last)


def _complete(lines: list[str], spans: list[tuple[int, int]], heads: list[bool], ends: list[int], u: int,
              max_chars: int) -> tuple[int, int]:
    """Line indexes of unit u with what completes it, within max_chars (heads: the units' heading levels;
    ends: citelines.chunk_spans' running character counts)."""
    lo, hi = spans[u]

    def fits(last: int) -> bool:
        return ends[last + 1] - ends[lo] - 1 <= max_chars

    if heads[u]:  # a heading: what it heads, up to the next heading of its level or above
        j = u
        while j + 1 < len(spans) and not 0 < heads[j + 1] <= heads[u] and fits(spans[j + 1][1]):
            j += 1
        return lo, spans[j][1]
    if u + 1 < len(spans) and not heads[u + 1]:
        if _asks(lines[hi]):  # a question: its answer follows
            if fits(spans[u + 1][1]):
                return lo, spans[u + 1][1]
        elif u + 2 < len(spans) and _asks(lines[spans[u + 1][1]]) and not heads[u + 2] and fits(spans[u + 2][1]):
            return lo, spans[u + 2][1]  # a statement, a question about it and its answer
    return lo, hi


def _window(spans, u, lo, hi, start, sims, heads, ends, max_chars) -> tuple[int, int]:
    """lo..hi grown over the units beside unit u that lie in the same best vector window (the same cosine
    on every line), within max_chars."""
    sim = sims.get(start + spans[u][0])
    if sim is None:
        return lo, hi

    def same(v: int) -> bool:
        a, b = spans[v]
        return not heads[v] and all(sims.get(start + i) == sim for i in range(a, b + 1))

    v = u
    while v > 0 and same(v - 1) and ends[hi + 1] - ends[spans[v - 1][0]] - 1 <= max_chars:
        v -= 1
        lo = spans[v][0]
    w = max(x for x in range(len(spans)) if spans[x][0] <= hi)
    while w + 1 < len(spans) and same(w + 1) and ends[spans[w + 1][1] + 1] - ends[lo] - 1 <= max_chars:
        w += 1
        hi = spans[w][1]
    return lo, hi


def _level(line: str) -> int:
    """A heading's level (1-6), 0 for any other line."""
    m = ATX.match(line) if line[:1] in _MARKS else None
    return len(m.group(1)) if m else 0


def _asks(line: str) -> bool:
    return line.rstrip().endswith(("?", "？"))


def line_similarities(windows_by_chunk: dict[int, list[tuple[int, int, float]]]) -> dict[int, dict[int, float]]:
    """Per chunk, per line: the cosine of the best vector window holding the line."""
    out: dict[int, dict[int, float]] = {}
    for cid, windows in windows_by_chunk.items():
        lines: dict[int, float] = {}
        for a, b, sim in windows:
            for ln in range(a, b + 1):
                if sim > lines.get(ln, -1.0):
                    lines[ln] = sim
        out[cid] = lines
    return out


def choose_spans(candidates: list[Span], k: int, text_of) -> list[list]:
    """The k citations: candidates best first; one touching a chosen citation of the same file extends it
    when the two together hold at most MERGE_LINES lines, else it is dropped (those lines are shown).
    text_of(cid) -> (path, start line, lines). Returns [[cid, path, first, last], ...] in the order chosen."""
    chosen: list[list] = []
    for sp in sorted(candidates, key=lambda s: (-s.score, s.cid, s.first)):
        path = text_of(sp.cid)[0]
        near = next((c for c in chosen if c[1] == path and c[2] - 1 <= sp.last and sp.first <= c[3] + 1), None)
        if near is not None:
            first, last = min(near[2], sp.first), max(near[3], sp.last)
            if last - first + 1 <= MERGE_LINES and _covered(text_of, [near[0], sp.cid], path, first, last):
                near[2], near[3] = first, last
                near.append(sp.cid)
            continue
        if len(chosen) < k:
            chosen.append([sp.cid, path, sp.first, sp.last])
    return chosen


def _covered(text_of, cids, path, first, last) -> bool:
    """Whether the chunks cids hold every line first..last between them."""
    have = set()
    for cid in cids:
        _, start, lines = text_of(cid)
        have.update(range(start, start + len(lines)))
    return all(ln in have for ln in range(first, last + 1))
