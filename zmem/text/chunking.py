"""Blocks -> chunks of ~400 tokens with ~80 tokens of overlap (pure functions).

Cuts fall between blocks (headings, blank lines, list items); a code fence is never cut unless it
alone is larger than FENCE_MAX_FACTOR chunks. Each chunk carries its exact line range and the
heading path above it.
"""
from __future__ import annotations

from dataclasses import dataclass

from zmem.text.lazyre import LazyPattern
from zmem.text.markdown import Block, fence_marker, scan_blocks, split_lines

# Han, kana, Hangul: scripts written without spaces between words (Hangul: too short to stem).
CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u3131-\u318e"
CJK_RE = LazyPattern(f"[{CJK_CLASS}]")
# Combining marks (accents of decomposed text): part of the word they follow, never a place to cut.
MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20dc\ufe20-\ufe2f"
_BREAK = LazyPattern(f"[^\\w{MARKS}]")  # a space or punctuation: where a slice of a long line may end
FENCE_MAX_FACTOR = 4
# Bumped whenever chunk boundaries or chunk text would change: the index rebuilds itself.
# 2: slices of a line too long for one chunk carry "…" where the line goes on. 3: the full-text index
# reads no zmem marker line (markdown.without_markers).
CHUNKER_VERSION = 3
CUT = "…"  # marks the side where a slice (or a snippet) of a line was cut from the rest of it
# The windows that get one vector each (note_windows): notes a person wrote, consecutive ones under
# one heading merged up to NOTE_MERGE_TOKENS, a note longer than WINDOW_TOKENS cut into runs of lines.
WINDOW_TOKENS = 128
NOTE_MERGE_TOKENS = 64  # 0, a window per note, ranks a little better but makes 5x the vectors of a daily log
# How windows are cut, as the vectors' fingerprint records it: a change re-embeds every index once.
# "128" was runs of whole lines packed to 128 tokens across notes (before 2026-11-26); "notes128+64"
# read `# …` lines as headings in a chunk that starts inside a long code fence (2026-11-26).
WINDOW_FINGERPRINT = f"notes{WINDOW_TOKENS}+{NOTE_MERGE_TOKENS}+fences"


def estimate_tokens(text: str) -> int:
    """~4 characters per token for alphabetic scripts, one token per CJK character."""
    cjk = len(text) - len(CJK_RE.sub("", text)) if not text.isascii() else 0
    return cjk + (len(text) - cjk + 3) // 4


@dataclass(frozen=True, slots=True)
class Chunk:
    start_line: int  # 1-based inclusive
    end_line: int
    text: str
    heading: str  # "Title > Section"
    tokens: int
    fence: str = ""  # the code fence open at start_line (a long fence cut into chunks): note_windows needs it


@dataclass(slots=True)
class _Unit:
    """A run of lines that chunking keeps together (a block, or a slice of an oversized one)."""
    start: int
    end: int
    tokens: int
    heading: str
    is_heading: bool
    text: str | None = None  # set only for a slice of one huge line
    fence: str = ""  # the fence this slice of a code block starts inside


def chunk_text(text: str, max_tokens: int = 400, overlap_tokens: int = 80) -> list[Chunk]:
    lines = split_lines(text)
    return chunk_lines(lines, scan_blocks(lines), max_tokens, overlap_tokens)


def chunk_lines(lines: list[str], blocks: list[Block], max_tokens: int = 400,
                overlap_tokens: int = 80) -> list[Chunk]:
    # +1: the newline; estimate_tokens of an ASCII line inline (most lines, and this runs for every one)
    line_tokens = [(len(line) + 3) // 4 + 1 if line.isascii() else estimate_tokens(line) + 1 for line in lines]
    units = _units(lines, blocks, line_tokens, max_tokens)
    chunks: list[Chunk] = []
    current: list[_Unit] = []
    size = 0

    def emit() -> None:
        first, last = current[0], current[-1]
        if first.text is not None:  # a slice of one huge line
            body = first.text
        else:
            body = "\n".join(lines[first.start - 1:last.end])
        chunks.append(Chunk(first.start, last.end, body, first.heading, sum(u.tokens for u in current), first.fence))

    for unit in units:
        if current and (size + unit.tokens > max_tokens or unit.text is not None
                        or current[-1].text is not None
                        or (unit.is_heading and size >= max_tokens // 2)):
            emit()
            if unit.is_heading or unit.text is not None or current[-1].text is not None:
                current, size = [], 0  # a new section starts clean
            else:
                current, size = _overlap(current, overlap_tokens, unit.tokens, max_tokens)
        current.append(unit)
        size += unit.tokens
    if current:
        emit()
    return chunks


def _overlap(units: list[_Unit], overlap_tokens: int, next_tokens: int, max_tokens: int):
    """Trailing whole units of the previous chunk that fit in the overlap budget."""
    kept: list[_Unit] = []
    size = 0
    for unit in reversed(units):
        if size + unit.tokens > overlap_tokens or size + unit.tokens + next_tokens > max_tokens:
            break
        kept.insert(0, unit)
        size += unit.tokens
    return kept, size


def _units(lines: list[str], blocks: list[Block], line_tokens: list[int], max_tokens: int) -> list[_Unit]:
    units: list[_Unit] = []
    path: list[tuple[int, str]] = []
    heading = ""
    for b in blocks:
        if b.kind == "heading":
            while path and path[-1][0] >= b.level:
                path.pop()
            path.append((b.level, b.title))
            heading = " > ".join(t for _, t in path if t)
        tokens = sum(line_tokens[b.start - 1:b.end])
        limit = max_tokens * FENCE_MAX_FACTOR if b.kind == "code" else max_tokens
        if tokens <= limit:
            units.append(_Unit(b.start, b.end, tokens, heading, b.kind == "heading"))
            continue
        # Oversized block: slices of whole lines; a single huge line is cut by characters.
        fence = fence_marker(lines[b.start - 1]) if b.kind == "code" else ""
        start, size = b.start, 0

        def inside(ln: int) -> str:  # the fence a slice starting at line ln is inside of
            return fence if ln > b.start else ""
        for ln in range(b.start, b.end + 1):
            t = line_tokens[ln - 1]
            if t > max_tokens:
                if ln > start:
                    units.append(_Unit(start, ln - 1, size, heading, False, fence=inside(start)))
                units.extend(_split_line(lines[ln - 1], ln, heading, max_tokens, inside(ln)))
                start, size = ln + 1, 0
                continue
            if size + t > max_tokens and ln > start:
                units.append(_Unit(start, ln - 1, size, heading, False, fence=inside(start)))
                start, size = ln, 0
            size += t
        if start <= b.end:
            units.append(_Unit(start, b.end, size, heading, False, fence=inside(start)))
    return units


def _split_line(line: str, ln: int, heading: str, max_tokens: int, fence: str = "") -> list[_Unit]:
    """A line too long for one chunk, cut into slices of at most max_tokens estimated tokens, marks
    included: each slice's text has a "…" on the side(s) where the line goes on, so a snippet that
    shows a slice says it is part of a line, and between the marks is a verbatim part of the line.
    A slice ends after the last space or punctuation of its final quarter when there is one (a word
    cut in two would be found in neither slice); two CJK characters cut apart are both in the next
    slice too, so their bigram is indexed."""
    units: list[_Unit] = []
    budget = max(2, 4 * max_tokens - 2)  # in quarter tokens (CJK characters cost 4); 2 for the marks
    i, n = 0, len(line)
    while i < n:
        j = _slice_end(line, i, budget)
        if j < n:
            m = None
            for m in _BREAK.finditer(line, i + (j - i) * 3 // 4, j):
                pass
            j = m.end() if m else j
        text = (CUT if i else "") + line[i:j] + (CUT if j < n else "")
        units.append(_Unit(ln, ln, estimate_tokens(text), heading, False, text, fence))
        i = j - 1 if j < n and j - i > 1 and CJK_RE.match(line, j - 1) and CJK_RE.match(line, j) else j
    return units


def _slice_end(line: str, i: int, budget: int) -> int:
    """The end of the longest slice from i costing at most budget quarter tokens (at least one character)."""
    if not CJK_RE.search(line, i, i + budget):
        return min(len(line), i + budget)
    j, left = i, budget
    while j < len(line) and left >= 4:  # every character costs at most 4: a safe step
        piece = line[j:j + left // 4]
        left -= len(piece) + 3 * (len(piece) - len(CJK_RE.sub("", piece)))
        j += len(piece)
    while j < len(line) and left >= (4 if CJK_RE.match(line, j) else 1):
        left -= 4 if CJK_RE.match(line, j) else 1
        j += 1
    return max(j, i + 1)


def windows(text: str, start_line: int, max_tokens: int = WINDOW_TOKENS) -> list[tuple[int, int, str]]:
    """A text (a note too long for one window) cut into runs of whole lines of at most ~max_tokens (a
    longer line stands alone). Blank lines are not units of their own."""
    out: list[tuple[int, int, str]] = []
    lines = text.split("\n")
    first, size, buf = None, 0, []
    for i, line in enumerate(lines):
        tokens = estimate_tokens(line) + 1
        if buf and size + tokens > max_tokens:
            out.append((start_line + first, start_line + first + len(buf) - 1, "\n".join(buf)))
            first, size, buf = None, 0, []
        if first is None:
            if not line.strip():
                continue
            first = i
        buf.append(line)
        size += tokens
    if buf:
        while buf and not buf[-1].strip():
            buf.pop()
        out.append((start_line + first, start_line + first + len(buf) - 1, "\n".join(buf)))
    return out


def note_windows(text: str, start_line: int, heading: str, max_tokens: int = WINDOW_TOKENS,
                 merge_tokens: int = NOTE_MERGE_TOKENS, fence: str = "") -> list[tuple[int, int, str, str]]:
    """A chunk cut along the notes a person wrote: a note is a block (a list item with its sub-items,
    a paragraph, a quote, a code fence); consecutive notes under one heading share a window while they
    fit in merge_tokens; a note longer than max_tokens is cut by windows(). A daily log is a list of
    unrelated notes: a window of 128 tokens spanning 5-8 of them blurred them into one vector
    (bench/README.md, "Windows along the notes"). Each window carries the heading path it sits
    under: (start, end, text, heading). fence: the code fence open at the chunk's first line (Chunk.fence,
    fences_at): its lines up to the closing one are code, never headings or notes of their own."""
    lines = text.split("\n")
    path = [[n, t] for n, t in enumerate(heading.split(" > "), 1)] if heading else []
    out: list[tuple[int, int, str, str]] = []
    size = 0  # tokens of the last window, while notes may still join it
    for block in scan_blocks(lines, fence):
        a, b = block.start - 1, block.end - 1
        if block.kind == "heading":
            if a == 0 and path:  # the chunk's own first heading: the path holds it, only its level is new
                path[-1][0] = block.level
            else:
                while path and path[-1][0] >= block.level:
                    path.pop()
                path.append([block.level, block.title])
            continue
        if block.kind == "hr":
            continue
        here = " > ".join(t for _, t in path if t)
        tokens = sum(estimate_tokens(line) + 1 for line in lines[a:b + 1])
        if size and out[-1][3] == here and size + tokens <= merge_tokens:
            first = out[-1][0] - start_line
            out[-1] = (start_line + first, start_line + b, "\n".join(lines[first:b + 1]), here)
            size += tokens
        elif tokens > max_tokens:
            out.extend((x, y, t, here) for x, y, t in windows("\n".join(lines[a:b + 1]), start_line + a, max_tokens))
            size = 0
        else:
            out.append((start_line + a, start_line + b, "\n".join(lines[a:b + 1]), here))
            size = tokens
    return out


def embedding_text(text: str, heading: str) -> str:
    """What a window's vector represents: its heading path gives the text its context."""
    return f"{heading}\n\n{text}" if heading else text


def text_hash(text: str) -> str:
    import hashlib  # loads OpenSSL (~15 ms): a BM25 recall imports this module but never hashes
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def chunk_windows(cid: int, text: str, heading: str, start_line: int,
                  fence: str = "") -> list[tuple[int, int, int, str]]:
    """(chunk id, start, end, text to embed) for each window of a chunk (note_windows); at least one."""
    wins = [(a, b, embedding_text(t, h)) for a, b, t, h in note_windows(text, start_line, heading, fence=fence)]
    wins = wins or [(start_line, start_line + text.count("\n"), embedding_text(text, heading))]  # headings only
    return [(cid, a, b, t) for a, b, t in wins]


def fences_at(chunks) -> dict[int, str]:
    """{start line: the code fence open there} for the chunks of one file that start inside a fence
    (Chunk.fence), found again from the chunks alone, (start_line, text) in any order, as the index
    stores them: together they hold every line of the file but blank ones."""
    chunks = sorted(chunks)
    if not any("```" in text or "~~~" in text for _, text in chunks):
        return {}
    lines: list[str] = []
    for start, text in chunks:
        part = text.split("\n")
        if len(lines) < start - 1:
            lines.extend([""] * (start - 1 - len(lines)))
        lines.extend(part[len(lines) - (start - 1):])  # overlapping lines: the earlier chunk's copy
    code = [(b.start, b.end, fence_marker(lines[b.start - 1])) for b in scan_blocks(lines) if b.kind == "code"]
    out = {}
    for start, _ in chunks:
        for a, b, fence in code:
            if a < start <= b and fence:
                out[start] = fence
    return out
