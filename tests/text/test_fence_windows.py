"""A code fence too long for one chunk is cut into several; the windows of a chunk that starts inside
it keep its lines as code (zmem.text.chunking: Chunk.fence, fences_at, note_windows(fence=...)).
Before, `# step 20` in such a chunk read as a heading: the windows after it were embedded under it."""
from __future__ import annotations

import random

from zmem.text.chunking import chunk_text, chunk_windows, fences_at, note_windows
from zmem.text.markdown import scan_blocks, split_lines


def long_fence(fence: str = "```", steps: int = 200, inner: str = "") -> str:
    body = "\n".join(f"# step {i}\necho run {i} {'x' * 40}" + (f"\n{inner}" if inner and i == 50 else "")
                     for i in range(steps))
    return (f"# Setup\n\nThe deploy script, as it runs:\n\n{fence}bash\n{body}\n{fence}\n\n"
            "# After\n\n- the relay daemon restarts after the deploy\n")


def windows_of(text: str) -> list[tuple[int, int, str, str]]:
    out = []
    for ch in chunk_text(text):
        out += note_windows(ch.text, ch.start_line, ch.heading, fence=ch.fence)
    return out


def test_a_chunk_that_starts_inside_a_fence_keeps_its_lines_as_code():
    text = long_fence()
    chunks = chunk_text(text)
    assert len(chunks) > 3
    assert chunks[1].text.startswith("```bash")  # the chunk that opens the fence is not inside it
    assert chunks[0].fence == chunks[1].fence == "" and all(ch.fence == "```" for ch in chunks[2:])
    for ch in chunks[2:-1]:
        headings = {h for *_, h in note_windows(ch.text, ch.start_line, ch.heading, fence=ch.fence)}
        assert headings == {"Setup"}, ch.start_line
        # without the fence state, as before the fix: the shell comments were headings
        assert any(h.startswith("step") for *_, h in note_windows(ch.text, ch.start_line, ch.heading))
    last = windows_of(text)[-1]
    assert last[2] == "- the relay daemon restarts after the deploy" and last[3] == "After"


def test_the_fence_closes_where_it_would_in_the_whole_file():
    """A longer fence is not closed by a shorter one inside it, nor a backtick fence by tildes."""
    for fence, inner in (("````", "```"), ("~~~", "```"), ("```", "~~~")):
        text = long_fence(fence, inner=inner)
        chunks = chunk_text(text)
        assert all(ch.fence == fence for ch in chunks[2:])
        assert {h for *_, h in windows_of(text)} == {"Setup", "After"}, fence


def test_chunk_windows_takes_the_fence():
    ch = chunk_text(long_fence())[2]
    with_fence = chunk_windows(7, ch.text, ch.heading, ch.start_line, ch.fence)
    assert all(cid == 7 and t.startswith("Setup\n\n") for cid, _, _, t in with_fence)
    assert chunk_windows(7, ch.text, ch.heading, ch.start_line) != with_fence  # the old windows


def test_fences_at_finds_the_chunkers_fence_state_from_the_chunks_alone():
    text = long_fence("~~~~") + "\n" + long_fence()
    chunks = chunk_text(text)
    stored = [(ch.start_line, ch.text) for ch in chunks]
    random.Random(1).shuffle(stored)  # the index's order is not the file's
    assert fences_at(stored) == {ch.start_line: ch.fence for ch in chunks if ch.fence}
    assert fences_at([(ch.start_line, ch.text) for ch in chunk_text("# A\n\n- a note\n")]) == {}


def test_scan_blocks_with_an_open_fence():
    lines = ["# not a heading", "code", "```", "", "# A heading", "text"]
    blocks = scan_blocks(lines, "```")
    assert [(b.start, b.end, b.kind) for b in blocks] == [(1, 3, "code"), (5, 5, "heading"), (6, 6, "paragraph")]
    assert [(b.start, b.end, b.kind) for b in scan_blocks(["# x", "y"], "```")] == [(1, 2, "code")]  # unclosed
    assert scan_blocks([], "```") == []


def test_random_files_code_lines_are_code_in_every_chunk():
    """Whatever the file, a line inside a top-level code fence of the whole file is inside a code block
    of its chunk's own scan (with the chunk's fence), and no other line is."""
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "relay", "daemon", "x" * 30]
    for case in range(200):
        parts = []
        for _ in range(rng.randint(1, 6)):
            kind = rng.random()
            if kind < 0.35:
                fence = rng.choice(["```", "````", "~~~"])
                body = [rng.choice([f"# c{rng.randint(0, 9)}", "- item", "", "```", "~~~", " ".join(rng.choices(words, k=8))])
                        for _ in range(rng.randint(1, 400))]
                parts.append("\n".join([fence + rng.choice(["", "bash"]), *body, fence]))
            elif kind < 0.55:
                parts.append(f"{'#' * rng.randint(1, 3)} Heading {rng.randint(0, 99)}")
            else:
                parts.append("\n".join(f"- {' '.join(rng.choices(words, k=rng.randint(2, 12)))}"
                                       for _ in range(rng.randint(1, 30))))
        text = "\n\n".join(parts) + "\n"
        lines = split_lines(text)
        code = {ln for b in scan_blocks(lines) if b.kind == "code" for ln in range(b.start, b.end + 1)}
        chunks = chunk_text(text, 200, 40)
        assert fences_at([(ch.start_line, ch.text) for ch in chunks]) == {ch.start_line: ch.fence for ch in chunks
                                                                          if ch.fence}, case
        for ch in chunks:
            if ch.text.startswith("…") or ch.text.endswith("…"):
                continue  # a slice of one huge line
            own = scan_blocks(ch.text.split("\n"), ch.fence)
            got = {ch.start_line + ln - 1 for b in own if b.kind == "code" for ln in range(b.start, b.end + 1)}
            want = {ln for ln in range(ch.start_line, ch.end_line + 1) if ln in code}
            assert got == want, (case, ch.start_line, ch.fence)
