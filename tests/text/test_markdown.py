"""Block scanning and chunking: exact line ranges, fences kept whole, CJK-aware token counts."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from mdit_py_plugins.front_matter import front_matter_plugin

from zmem.text.chunking import chunk_text, estimate_tokens
from zmem.text.markdown import day_from_path, scan_blocks, split_lines

DAILY = """\
---
tags: [daily]
---
# 2025-11-27

## Notes

- Met Peter at the cafe.
- Talked about the gateway
  and its backup plan.
  - nested detail

1. first
2. second

A paragraph
that wraps.

> a quote
> continues

```python
# not a heading
print("hi")
```

Setext title
============

| a | b |
|---|---|
| 1 | 2 |

***
"""


def _markdown_it_blocks(text: str) -> list[tuple[int, int]]:
    """Top-level block ranges (1-based, inclusive) from markdown-it-py, list items split out."""
    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
    out = []
    for tok in md.parse(text):
        if tok.map is None or tok.nesting == -1:
            continue
        if tok.level == 0 and tok.type not in ("bullet_list_open", "ordered_list_open"):
            out.append((tok.map[0] + 1, tok.map[1]))
        elif tok.level == 1 and tok.type == "list_item_open":
            out.append((tok.map[0] + 1, tok.map[1]))
    return out


def _trim(lines, start, end):
    """markdown-it ranges may include trailing blank lines; compare on non-blank extents."""
    while end > start and not lines[end - 1].strip():
        end -= 1
    return start, end


def test_blocks_match_markdown_it_on_a_daily_log():
    lines = split_lines(DAILY)
    ours = [(b.start, b.end) for b in scan_blocks(lines)]
    theirs = [_trim(lines, a, b) for a, b in _markdown_it_blocks(DAILY)]
    assert ours == theirs


def test_block_kinds_and_headings():
    blocks = scan_blocks(split_lines(DAILY))
    kinds = [b.kind for b in blocks]
    assert kinds[0] == "front_matter"
    assert "code" in kinds and "quote" in kinds and "hr" in kinds
    headings = [(b.level, b.title) for b in blocks if b.kind == "heading"]
    assert headings == [(1, "2025-11-27"), (2, "Notes"), (1, "Setext title")]
    code = next(b for b in blocks if b.kind == "code")
    assert (code.start, code.end) == (22, 25)  # '# not a heading' stays inside the fence


def test_unterminated_fence_runs_to_end_and_crlf_lines():
    text = "# t\r\n\r\n```\r\ncode\r\n# still code\r\n"
    blocks = scan_blocks(split_lines(text))
    assert [(b.kind, b.start, b.end) for b in blocks] == [("heading", 1, 1), ("code", 3, 5)]
    assert split_lines(text)[0] == "# t"


def test_chunks_have_exact_line_ranges_and_heading_paths():
    lines = split_lines(DAILY)
    for c in chunk_text(DAILY, max_tokens=40, overlap_tokens=10):
        assert c.text == "\n".join(lines[c.start_line - 1:c.end_line])
    headings = [c.heading for c in chunk_text(DAILY, max_tokens=40, overlap_tokens=10)]
    assert "2025-11-27 > Notes" in headings and "Setext title" in headings


def test_fence_is_never_cut_and_overlap_is_bounded():
    body = "\n".join(f"- bullet number {i} with a few words of text" for i in range(60))
    fence = "```\n" + "\n".join(f"line {i} of code" for i in range(40)) + "\n```"
    text = f"# T\n\n{body}\n\n{fence}\n\n{body}\n"
    lines = split_lines(text)
    fence_start = lines.index("```") + 1
    fence_end = fence_start + 41
    chunks = chunk_text(text, max_tokens=200, overlap_tokens=40)
    for c in chunks:
        assert c.tokens <= 200 or (c.start_line <= fence_start and c.end_line >= fence_end)
        inside = fence_start < c.start_line <= fence_end or fence_start <= c.end_line < fence_end
        assert not inside, f"chunk {c.start_line}-{c.end_line} cuts the fence {fence_start}-{fence_end}"
    for a, b in zip(chunks, chunks[1:]):
        assert b.start_line <= a.end_line + 2  # contiguous or overlapping, nothing skipped
        overlap = "\n".join(lines[b.start_line - 1:a.end_line]) if b.start_line <= a.end_line else ""
        assert estimate_tokens(overlap) <= 40 + 20


def test_every_non_blank_line_is_in_some_chunk():
    text = "\n\n".join(f"## Section {i}\n\n" + "\n".join(f"- item {i}.{j} " + "word " * 12 for j in range(9))
                       for i in range(12))
    lines = split_lines(text)
    covered = set()
    for c in chunk_text(text):
        covered.update(range(c.start_line, c.end_line + 1))
    assert {i + 1 for i, line in enumerate(lines) if line.strip()} <= covered


def test_huge_single_line_is_split_by_characters():
    text = "# T\n\n" + "x" * 20000 + "\n"
    chunks = chunk_text(text, max_tokens=400)
    long = [c for c in chunks if c.start_line == 3]
    assert len(long) >= 10 and all(len(c.text) <= 1600 for c in long)


def test_token_estimate_counts_cjk_characters():
    assert estimate_tokens("abcd" * 100) == 100
    assert estimate_tokens("王伟下周去北京出差") == 9
    assert estimate_tokens("中文 and English") == 2 + (len(" and English") + 3) // 4


def test_day_from_path():
    assert day_from_path("memory/2025-11-27.md") == "2025-11-27"
    assert day_from_path("memory/2025/2025-11-27-trip.md") == "2025-11-27"
    assert day_from_path("bank/2025-11-27.md") is None
    assert day_from_path("memory/2025-13-01.md") is None
    assert day_from_path("memory/notes.md") is None


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["# h", "## h2", "- item", "  cont", "1. one", "```", "~~~", "> q", "text",
                                 "", "---", "===", "    code", "中文行", "\r", "\t- x", "|a|b|"]), max_size=60))
def test_scanner_and_chunker_never_raise_and_stay_in_range(parts):
    text = "\n".join(parts)
    lines = split_lines(text)
    prev_end = 0
    for b in scan_blocks(lines):
        assert 1 <= b.start <= b.end <= len(lines)
        assert b.start > prev_end
        prev_end = b.end
    for c in chunk_text(text, max_tokens=16, overlap_tokens=4):
        assert 1 <= c.start_line <= c.end_line <= len(lines)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_chunker_never_raises_on_arbitrary_text(text):
    for c in chunk_text(text, max_tokens=32, overlap_tokens=8):
        assert c.start_line >= 1
