"""Odd note files get a clear answer and lose nothing: invalid UTF-8, a binary file named .md, a 20 MB
note, 50,000 bullets, an unterminated fence or front matter, an empty file are indexed as well as they can
be or skipped with a warning naming the file (and line); everything else is still indexed."""
from __future__ import annotations

import json
import os
import time

import pytest

from helpers.workspace import recall_json, run, still_works, write


def index_warnings(root) -> list[str]:
    res = run(["-C", str(root), "index", "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["warnings"]


def test_invalid_utf8_is_indexed_with_a_warning_naming_file_and_line(ws):
    (ws / "memory/2025-12-01.md").write_bytes(b"# t\n\n- fine line about herons\n- broken \xff\xfe bytes\n- after\n")
    warnings = index_warnings(ws)
    assert any(w.startswith("memory/2025-12-01.md:4:") and "UTF-8" in w for w in warnings)
    assert recall_json(ws, "herons")["results"]
    still_works(ws)


def test_binary_file_named_md_is_skipped_with_a_warning(ws):
    (ws / "memory/2025-12-02.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(2000))
    warnings = index_warnings(ws)
    assert any(w.startswith("memory/2025-12-02.md") and "binary" in w for w in warnings)
    still_works(ws)
    res = run(["-C", str(ws), "doctor"])
    assert "memory/2025-12-02.md" in res.stdout


@pytest.mark.slow
def test_a_20_mb_note_is_indexed(ws):
    line = "- a long log line about routine operations and nothing in particular\n"
    body = line * (20 * 1024 * 1024 // len(line))
    (ws / "memory/2025-12-03.md").write_text("# big\n\n" + body + "- the needle is a cassowary\n")
    t = time.monotonic()
    assert index_warnings(ws) == []
    elapsed = time.monotonic() - t
    hit = recall_json(ws, "cassowary")["results"][0]
    assert hit["path"] == "memory/2025-12-03.md" and "cassowary" in hit["snippet"]
    assert elapsed < 120
    still_works(ws)


@pytest.mark.slow
def test_fifty_thousand_bullets_with_exact_line_numbers(ws):
    lines = ["# many", ""] + [f"- bullet {i}" for i in range(50_000)]
    lines[49_000] = "- the rare ocelot bullet"
    (ws / "memory/2025-12-04.md").write_text("\n".join(lines) + "\n")
    hit = recall_json(ws, "ocelot")["results"][0]
    assert hit["start_line"] <= 49_001 <= hit["end_line"]
    res = run(["-C", str(ws), "get", "memory/2025-12-04.md", "--from", "49001", "--lines", "1"])
    assert res.stdout == "- the rare ocelot bullet\n"


def test_unterminated_fence_front_matter_and_empty_file(ws):
    write(ws, "memory/2025-12-05.md", "---\ntitle: x\ntags: [a]\n---\n# t\n\n- before the fence about ibexes\n\n"
          "```python\nprint('never closed')\n# a heading inside code\n")
    write(ws, "memory/2025-12-06.md", "")
    assert index_warnings(ws) == []
    assert recall_json(ws, "ibexes")["results"]
    assert recall_json(ws, "never closed")["results"]
    still_works(ws)
