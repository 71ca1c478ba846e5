"""Markdown -> blocks with exact line ranges (pure functions).

A line scanner for the block structure chunking needs: headings (ATX and setext), fenced code,
front matter, list items, block quotes, thematic breaks and paragraphs. It does no inline parsing.
Why not a full parser: mistune 3 records no source positions; markdown-it-py does (token.map),
but parses ~1.2 MB/s on these machines, too slow for the 100k-chunk full-index target. Tests check
this scanner's block boundaries against markdown-it-py's token maps.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from zmem.text.lazyre import LazyPattern

# recall uses only ATX and LIST_ITEM: the others compile when notes are read (lazyre.py)
FENCE_OPEN = LazyPattern(r"^( {0,3})(`{3,}|~{3,})(.*)$")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
SETEXT = LazyPattern(r"^ {0,3}(=+|-+)[ \t]*$")
HR = LazyPattern(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
LIST_ITEM = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)")
QUOTE = LazyPattern(r"^ {0,3}>")
# a line of zmem's own in a note (`zmem reflect`'s `<!-- zmem:begin … -->` and `<!-- zmem:end -->`)
ZMEM_MARKER = LazyPattern(r"^<!-- zmem:[^\n]*-->[ \t]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Block:
    start: int  # 1-based, inclusive
    end: int  # 1-based, inclusive
    kind: str  # heading | code | front_matter | item | quote | hr | paragraph
    level: int = 0  # heading level
    title: str = ""  # heading text


def without_markers(text: str) -> str:
    """text with zmem's marker lines emptied (the line count kept): what the full-text index reads.
    Their words are none of the note's: recall ranked reflect's "... replaced on the next run" first
    for "what should I run next", on every entity page."""
    return ZMEM_MARKER.sub("", text) if "<!-- zmem:" in text else text


def is_marker(line: str) -> bool:
    return line.startswith("<!-- zmem:") and ZMEM_MARKER.match(line) is not None


def split_lines(text: str) -> list[str]:
    """Lines as editors, git and `zmem get` count them: split on \\n only, drop a trailing \\r."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _is_blank(line: str) -> bool:
    return not line.strip()


def _atx_title(m: re.Match) -> str:
    title = (m.group(2) or "").strip()
    return re.sub(r"[ \t]+#+$", "", title).strip() if title != "#" * len(title) else ""


def fence_closes(line: str, char: str, length: int) -> bool:
    s = line.lstrip(" ")
    if len(line) - len(s) > 3 or not s.startswith(char * length):
        return False
    return s.rstrip(" \t").strip(char) == ""


# The first character (after at most three spaces) of every line the block patterns above match: a
# line starting otherwise is paragraph text, found without trying them. LIST_ITEM's \d is any decimal digit.
_BLOCK_MARKERS = frozenset("#`~-*_+>=")


def _marker(line: str) -> str:
    """The character after a line's indentation when that is at most three spaces, else ""."""
    return line[:4].lstrip(" ")[:1]


def _may_start_block(marker: str) -> bool:
    return marker in _BLOCK_MARKERS or marker.isdecimal()


def _starts_block(line: str) -> bool:
    """Can this line interrupt a paragraph?"""
    if not _may_start_block(_marker(line)):
        return False
    return bool(
        ATX.match(line) or FENCE_OPEN.match(line) or HR.match(line) or QUOTE.match(line)
        or _interrupting_item(line)
    )


def _interrupting_item(line: str) -> bool:
    m = LIST_ITEM.match(line)
    if not m or not line[m.end():].strip():
        return False  # an empty item cannot interrupt a paragraph
    marker = m.group(2)
    return not marker[0].isdigit() or marker[:-1] == "1"


def _fence_of(line: str) -> tuple[str, int] | None:
    m = FENCE_OPEN.match(line)
    if not m:
        return None
    fence = m.group(2)
    if fence[0] == "`" and "`" in m.group(3):
        return None  # backtick fences cannot have backticks in the info string
    return fence[0], len(fence)


def fence_marker(line: str) -> str:
    """The fence a line opens ("```", "~~~~", …), or ""."""
    fence = _fence_of(line)
    return fence[0] * fence[1] if fence else ""


def scan_blocks(lines: list[str], open_fence: str = "") -> list[Block]:
    """Split lines into top-level blocks. Never raises; unknown shapes become paragraphs.
    open_fence: the fence (fence_marker) open before lines[0], when they start inside a code block:
    the lines up to the one closing it are that block's rest."""
    blocks: list[Block] = []
    n = len(lines)
    i = 0
    if open_fence and n:
        while i < n and not fence_closes(lines[i], open_fence[0], len(open_fence)):
            i += 1
        blocks.append(Block(1, min(i, n - 1) + 1, "code"))
        i += 1
    elif n and lines[0].strip() == "---":  # YAML front matter
        for j in range(1, min(n, 1000)):
            if lines[j].strip() in ("---", "..."):
                blocks.append(Block(1, j + 1, "front_matter"))
                i = j + 1
                break
    while i < n:
        line = lines[i]
        if _is_blank(line):
            i += 1
            continue
        marker = _marker(line)
        if not _may_start_block(marker):
            i = _scan_paragraph(lines, i, blocks)
            continue
        fence = _fence_of(line) if marker in "`~" else None
        if fence:
            j = i + 1
            while j < n and not fence_closes(lines[j], *fence):
                j += 1
            end = min(j, n - 1)  # an unterminated fence runs to the end of the file
            blocks.append(Block(i + 1, end + 1, "code"))
            i = end + 1
            continue
        m = ATX.match(line) if marker == "#" else None
        if m:
            blocks.append(Block(i + 1, i + 1, "heading", len(m.group(1)), _atx_title(m)))
            i += 1
            continue
        if marker in "-*_" and HR.match(line):
            blocks.append(Block(i + 1, i + 1, "hr"))
            i += 1
            continue
        m = LIST_ITEM.match(line) if marker in "-*+" or marker.isdecimal() else None
        if m:
            i = _scan_item(lines, i, m, blocks)
            continue
        if marker == ">" and QUOTE.match(line):
            j = i + 1
            while j < n and not _is_blank(lines[j]) and (QUOTE.match(lines[j]) or not _starts_block(lines[j])):
                j += 1
            blocks.append(Block(i + 1, j, "quote"))
            i = j
            continue
        i = _scan_paragraph(lines, i, blocks)
    return blocks


def _scan_paragraph(lines: list[str], i: int, blocks: list[Block]) -> int:
    """A paragraph (tables and HTML included), possibly a setext heading."""
    n = len(lines)
    j = i + 1
    while j < n and not _is_blank(lines[j]):
        if not _may_start_block(_marker(lines[j])):  # neither a setext underline nor a block start
            j += 1
            continue
        s = SETEXT.match(lines[j])
        if s:
            title = " ".join(x.strip() for x in lines[i:j])
            blocks.append(Block(i + 1, j + 1, "heading", 1 if s.group(1)[0] == "=" else 2, title))
            return j + 1
        if _starts_block(lines[j]):
            blocks.append(Block(i + 1, j, "paragraph"))
            return j
        j += 1
    blocks.append(Block(i + 1, j, "paragraph"))
    return j


def _scan_item(lines: list[str], i: int, m: re.Match, blocks: list[Block]) -> int:
    """One list item with its continuation lines, nested lists and fenced code."""
    n = len(lines)
    content_indent = m.end() if lines[i][m.end():].strip() else m.end(2) + 1
    j = i + 1
    last = i  # last non-blank line that belongs to the item
    fence = None
    while j < n:
        line = lines[j]
        if fence:
            if fence_closes(line.lstrip(" "), *fence):
                fence = None
            last = j
            j += 1
            continue
        if _is_blank(line):
            j += 1
            continue
        indent = len(line) - len(line.lstrip(" "))
        blank_before = j > last + 1
        if indent >= content_indent:
            fence = _fence_of(line.lstrip(" "))
            last = j
            j += 1
            continue
        if blank_before or LIST_ITEM.match(line) or _starts_block(line):
            break
        last = j  # lazy continuation of the item's paragraph
        j += 1
    blocks.append(Block(i + 1, last + 1, "item"))
    return last + 1


def day_from_path(path: str) -> str | None:
    """`memory/2025-11-27.md` or `memory/2025/2025-11-27-trip.md` -> '2025-11-27'."""
    name = path.rsplit("/", 1)[-1]
    m = re.match(r"(\d{4})-(\d{2})-(\d{2})(?:[-_. ]|\.md$)", name)
    if not m or not (path.startswith("memory/") or "/memory/" in path):
        return None
    y, mo, d = map(int, m.groups())
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return None
    return m.group(0)[:10]


def decode_note(rel: str, data: bytes, max_mb: float) -> tuple[str | None, list[str]]:
    """Bytes -> text, or None when the file cannot be indexed; warnings name file and line."""
    if len(data) > max_mb * 1024 * 1024:
        return None, [f"{rel}: skipped: {len(data) / 1048576:.1f} MB is above index.max_file_mb = {max_mb:g}"]
    nul = data.find(b"\0", 0, 8192)
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        return None, [f"{rel}:{line}: skipped: binary content (NUL byte), not a Markdown note"]
    warnings = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        warnings.append(f"{rel}:{line}: invalid UTF-8; undecodable bytes indexed as U+FFFD")
        text = data.decode("utf-8", "replace")
    return text.removeprefix("\ufeff"), warnings
