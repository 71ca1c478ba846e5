"""Vector windows: a chunk cut along the notes a person wrote (zmem.text.chunking.note_windows)."""
from zmem.text.chunking import chunk_text, chunk_windows, embedding_text, note_windows, windows

DAILY = """# 2025-03-09

## Notes

- Dentist appointment moved to 3 May, 14:30, with Dr. Okafor.
- The kids' school closes early on Wednesdays, at 13:00.
- Lucas is learning the cello and practises every evening after dinner.

Bought a new garden hose; the old one leaked at the tap.
It was the third one this year.

## Work

- The standup moved to 9:15.
  - because of the new hires in Singapore
"""


def test_a_window_per_note_with_the_heading_it_sits_under():
    chunk = chunk_text(DAILY)[0]
    got = [(a, b, h) for a, b, _, h in note_windows(chunk.text, chunk.start_line, chunk.heading, merge_tokens=0)]
    assert got == [(5, 5, "2025-03-09 > Notes"), (6, 6, "2025-03-09 > Notes"), (7, 7, "2025-03-09 > Notes"),
                   (9, 10, "2025-03-09 > Notes"),  # a paragraph is one note
                   (14, 15, "2025-03-09 > Work")]  # an item with its sub-items is one note
    texts = [t for _, _, t, _ in note_windows(chunk.text, chunk.start_line, chunk.heading, merge_tokens=0)]
    assert texts[0] == "- Dentist appointment moved to 3 May, 14:30, with Dr. Okafor."


def test_a_chunk_starting_inside_a_section_keeps_the_chunk_heading_and_later_headings_replace_it():
    text = "- first note\n- second note\n\n## Later\n\n- third note"
    got = [(a, b, h) for a, b, _, h in note_windows(text, 40, "2025-03-09 > Notes", merge_tokens=0)]
    assert got == [(40, 40, "2025-03-09 > Notes"), (41, 41, "2025-03-09 > Notes"), (45, 45, "2025-03-09 > Later")]


def test_a_note_longer_than_a_window_is_cut_into_windows_of_whole_lines():
    turns = "\n".join(f"Caroline: turn number {i} of a long conversation about painting lakes at dawn" for i in range(30))
    got = note_windows(turns, 1, "2023-05-08 > Session 1", max_tokens=128)
    assert len(got) > 1
    assert [(a, b, t) for a, b, t, _ in got] == windows(turns, 1, 128)
    assert got[0][0] == 1 and got[-1][1] == 30
    assert all(h == "2023-05-08 > Session 1" for *_, h in got)


def test_short_notes_share_a_window_up_to_the_budget_but_never_across_a_heading():
    text = "## A\n\n- one\n- two\n\n- three\n\n## B\n\n- four"
    got = note_windows(text, 1, "A", merge_tokens=8)
    assert [(a, b, h) for a, b, _, h in got] == [(3, 4, "A"), (6, 6, "A"), (10, 10, "B")]
    assert got[0][2] == "- one\n- two"
    merged = note_windows(text, 1, "A", merge_tokens=64)
    assert [(a, b, t) for a, b, t, _ in merged][0] == (3, 6, "- one\n- two\n\n- three")


def test_a_long_note_never_takes_short_ones_into_its_windows():
    long = "\n".join(f"line {i} of a paragraph that goes on and on about one single subject" for i in range(20))
    got = note_windows(long + "\n\n- a short note", 1, "A", merge_tokens=64)
    assert got[-1][:3] == (22, 22, "- a short note")


def test_chunk_windows_embed_each_note_with_its_heading_and_at_least_one_window():
    chunk = chunk_text(DAILY)[0]
    wins = chunk_windows(7, chunk.text, chunk.heading, chunk.start_line)
    first = "\n".join(DAILY.split("\n")[4:7])  # three short notes of ~15 tokens: one window
    assert wins[0] == (7, 5, 7, embedding_text(first, "2025-03-09 > Notes"))
    assert len(wins) == len(set(wins))
    assert chunk_windows(3, "# Title\n\n## Section", "Title > Section", 4) == [
        (3, 4, 6, embedding_text("# Title\n\n## Section", "Title > Section"))]
