"""Citations that point at the answer (zmem.query.citelines): a hit in a long chunk cites the unit that
answers, not the ~400-token chunk, and carries the chunk's range; `zmem get` of the citation returns
exactly the cited lines; a bullet, table row or code block is never cut in half. Real CLI, real git."""
from __future__ import annotations

import pytest

from helpers.workspace import commit_all, get_text, recall_json, write
from zmem.query.citelines import MERGE_LINES, Span, choose_spans, chunk_spans, units

# a long day: ~40 statements, one of which says where the spare key is
TURNS = [f"Ana: We talked about item {i} of the garden plan and the weather in week {i}." for i in range(40)]
TURNS[23] = "Bo: The spare key to the boathouse hangs behind the blue shutter."
TURNS[24] = "Ana: Good to know, thanks."
LONG_DAY = "# 2025-06-02\n\n## Session 1\n\n" + "\n".join(TURNS) + "\n"
KEY_LINE = 5 + 23


def test_a_hit_in_a_long_chunk_cites_the_answering_line_and_carries_the_chunk_range(ws):
    write(ws, "memory/2025-06-02.md", LONG_DAY)
    commit_all(ws)
    hit = recall_json(ws, "where is the spare boathouse key", "--k", "1")["results"][0]
    assert hit["start_line"] <= KEY_LINE <= hit["end_line"] and hit["end_line"] - hit["start_line"] < MERGE_LINES
    assert hit["chunk_start_line"] <= hit["start_line"] and hit["end_line"] <= hit["chunk_end_line"]
    assert hit["chunk_end_line"] - hit["chunk_start_line"] > 10  # the chunk is much longer than what is cited
    cited = get_text(ws, hit["citation"])
    assert cited.rstrip("\n").split("\n") == hit["snippet"].split("\n")  # `zmem get` returns exactly those lines
    assert "spare key to the boathouse" in cited


def test_a_question_is_cited_with_its_answer(ws):
    turns = list(TURNS)
    turns[10] = "Ana: Which ferry do we take to the island on Saturday?"
    turns[11] = "Bo: The early one, at seven."
    write(ws, "memory/2025-06-03.md", "# 2025-06-03\n\n" + "\n".join(turns) + "\n")
    commit_all(ws)
    hit = recall_json(ws, "which ferry to the island", "--k", "1")["results"][0]
    assert (hit["start_line"], hit["end_line"]) == (3 + 10, 3 + 11), hit
    assert hit["snippet"].endswith("The early one, at seven.")


def test_a_bullet_is_never_cut_in_half(ws):
    filler = "\n".join(f"- Chore {i}: sweep the porch and water the ferns on the balcony." for i in range(30))
    bullet = ("- The router admin password was rotated on Friday; the new one is\n"
              "  in the vault under network/router, and the old one no longer works\n"
              "  on the guest VLAN either.")
    write(ws, "bank/home.md", f"# Home\n\n{filler}\n{bullet}\n- Chore 31: fix the gate.\n")
    commit_all(ws)
    for query in ("router admin password", "guest VLAN", "vault network router"):
        hit = recall_json(ws, query, "--k", "1")["results"][0]
        assert hit["snippet"] == bullet, (query, hit)
        assert get_text(ws, hit["citation"]).rstrip("\n") == bullet


def test_units_keep_items_rows_code_blocks_and_wrapped_sentences_whole():
    lines = ["# Title", "", "- an item that goes", "  on here", "- next item", "| a | b |", "| 1 | 2 |", "",
             "```sh", "make build", "make test", "```", "A sentence wrapped", "over two lines.",
             "Ana: a line of its own", "Bo: another"]
    assert units(lines) == [(0, 0), (2, 3), (4, 4), (5, 5), (6, 6), (8, 11), (12, 13), (14, 14), (15, 15)]


def test_a_code_block_is_cited_whole_when_it_fits():
    lines = ["Notes on the deploy:", "", "```sh", "export FOO=1", "deploy --region eu-west-1", "```", "", "done"]
    weights = [0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0]
    spans = chunk_spans(7, 10, lines, weights, 1.0, None, 700)
    assert (spans[0].first, spans[0].last) == (12, 15)


def test_candidates_touching_a_chosen_citation_extend_it_up_to_the_merge_limit():
    lines = [f"line {i}" for i in range(10)]

    def text_of(cid):
        return "a.md", 1, lines

    spans = [Span(3.0, 1, 4, 4), Span(2.5, 1, 5, 5), Span(2.4, 1, 6, 6), Span(2.3, 1, 7, 7), Span(2.0, 1, 1, 1)]
    chosen = choose_spans(spans, 10, text_of)
    assert [c[1:4] for c in chosen] == [["a.md", 4, 6], ["a.md", 1, 1]]  # 7 would make four lines: dropped


def test_a_dated_question_finds_the_note_of_the_resolved_day(ws):
    for day in ("2023-12-01", "2023-12-08", "2023-12-15"):
        write(ws, f"memory/{day}.md", f"# {day}\n\n- Tim recommended a book to John: a good story about dragons.\n"
                                      f"- Also talked about the weather on {day}.\n")
    commit_all(ws)
    for query in ("Which book did Tim recommend on 8th December, 2023?", "the book Tim recommended on 2023-12-08"):
        hit = recall_json(ws, query, "--k", "3")["results"][0]
        assert hit["path"] == "memory/2023-12-08.md", (query, hit)
        assert "recommended a book" in hit["snippet"]


def test_query_days_resolves_dates_months_years_and_relative_days():
    import datetime as dt

    from zmem.query.expand import query_days
    today = dt.date(2025, 3, 12)  # a Wednesday
    assert query_days("what happened on 7 May 2023", today) == ("2023-05-07", "2023-05-07")
    assert query_days("the offer in January 2024", today) == ("2024-01-01", "2024-01-31")
    assert query_days("what did he organize in 2024", today) == ("2024-01-01", "2024-12-31")
    assert query_days("what did we say yesterday", today) == ("2025-03-11", "2025-03-11")
    assert query_days("3 days ago", today) == ("2025-03-09", "2025-03-09")
    assert query_days("decisions last week", today) == ("2025-03-03", "2025-03-09")
    assert query_days("what was planned last June", today) == ("2024-06-01", "2024-06-30")
    assert query_days("where does Peter live", today) is None
    assert query_days("error 2024 in the log", today) is None  # a bare number is not a year asked about
    assert query_days("the last set of tests", today) is None  # `set` is September only in Portuguese


@pytest.mark.parametrize("query, days", [
    ("o que decidimos ontem?", ("2025-03-11", "2025-03-11")),
    ("¿qué pasó ayer?", ("2025-03-11", "2025-03-11")),
    ("昨天我们讨论了什么", ("2025-03-11", "2025-03-11")),
    ("the day before yesterday", ("2025-03-10", "2025-03-10")),
    ("a reunião de anteontem", ("2025-03-10", "2025-03-10")),  # not ontem: two days back
    ("前天的会议", ("2025-03-10", "2025-03-10")),
    ("hoy", ("2025-03-12", "2025-03-12")),
    ("o que fiz há 3 dias", ("2025-03-09", "2025-03-09")),
    ("hace 3 dias", ("2025-03-09", "2025-03-09")),
    ("3天前", ("2025-03-09", "2025-03-09")),
    ("decisões da semana passada", ("2025-03-03", "2025-03-09")),
    ("上周的决定", ("2025-03-03", "2025-03-09")),
    ("el mes pasado", ("2025-02-01", "2025-02-28")),
    ("上个月的预算", ("2025-02-01", "2025-02-28")),
    ("what did we ship last year", ("2024-01-01", "2024-12-31")),
    ("o ano passado", ("2024-01-01", "2024-12-31")),
    ("去年", ("2024-01-01", "2024-12-31")),
    ("em junho passado", ("2024-06-01", "2024-06-30")),
    ("el pasado junio", ("2024-06-01", "2024-06-30")),
])
def test_relative_days_in_portuguese_spanish_and_chinese(query, days):
    import datetime as dt

    from zmem.query.expand import query_days
    assert query_days(query, dt.date(2025, 3, 12)) == days


def test_a_question_asking_about_yesterday_in_portuguese_finds_yesterdays_note(ws):
    import datetime as dt
    today = dt.date.today()
    for back in (1, 3, 8):
        day = (today - dt.timedelta(days=back)).isoformat()
        write(ws, f"memory/{day}.md", f"# {day}\n\n- Decidimos adiar o lançamento do aplicativo ({back}).\n")
    commit_all(ws)
    hit = recall_json(ws, "o que decidimos ontem sobre o lançamento?", "--k", "3")["results"][0]
    assert hit["path"] == f"memory/{(today - dt.timedelta(days=1)).isoformat()}.md", hit


def test_together_is_the_share_of_the_matched_words_one_unit_holds():
    from zmem.query.citelines import together
    lines = ["- the backup runs at three", "", "```sh", "restart the gateway", "```", "- gateway host runs here"]
    present = [[True, False], [False, False], [False, False], [False, True], [False, False], [True, True]]
    assert together(units(lines), present, [1.0, 3.0]) == 1.0  # the last item holds both
    assert together(units(lines[:5]), present[:5], [1.0, 3.0]) == 0.75  # apart: the code block holds the rarer
    wrapped = ["A sentence about the backup", "that runs on the gateway.", "", "Other words."]
    held = [[True, False], [False, True], [False, False], [False, False]]
    assert together(units(wrapped), held, [1.0, 3.0]) == 1.0  # a wrapped sentence is one unit
    assert together(units(lines[:2]), [[True, False], [False, False]], [1.0, 3.0]) == 1.0  # one word
    assert together(units(["a", "b"]), [[False, False], [False, False]], [1.0, 1.0]) == 1.0  # none matched


def test_a_one_line_note_competes_with_the_lines_of_longer_notes(ws):
    # a chunk of one line is cited whole; its citation must weigh as a unit of a longer chunk does, or the
    # longer chunk's second and third lines crowd out the best-ranked note altogether (seen on LoCoMo: the
    # answering one-line chunk ranked first by both lists and was not cited in the first ten)
    write(ws, "bank/boat.md", "The spare oar hangs in the blue shed.\n")
    write(ws, "memory/2025-06-04.md", "# 2025-06-04\n\n" + "\n".join([
        "Ana: The spare room upstairs needs paint before the visit.",
        "Bo: The shed roof leaks again after the storm.",
        "Ana: One oar lock broke on the lake, we rowed back slowly.",
        "Bo: A spare tyre is in the shed next to the bikes.",
        "Ana: The oar we borrowed went back to the club.",
        "Bo: We talked about dinner plans for Friday."]) + "\n")
    commit_all(ws)
    hits = recall_json(ws, "spare oar shed", "--k", "2")["results"]
    assert hits[0]["path"] == "bank/boat.md", hits
    assert hits[0]["snippet"] == "The spare oar hangs in the blue shed."


def test_reflects_marker_lines_are_never_matched_nor_cited(ws):
    """`zmem reflect`'s `<!-- zmem:begin (… replaced on the next run) -->` is zmem's, not a note: with
    a few entity pages, "what should I run next" listed their marker lines above the note about a run."""
    from helpers.workspace import run
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n## Notes\n\n- The nightly backup now runs at 03:00.\n\n"
          "## Retain\n\n- W @Peter: Lives in Lisbon.\n- W @Ana: Recommends restaurants.\n")
    commit_all(ws)
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    assert "<!-- zmem:begin" in (ws / "bank/entities/Peter.md").read_text()
    for query in ("what should I run next", "edits inside this block", "Peter"):
        for hit in recall_json(ws, query)["results"]:
            assert "<!-- zmem:" not in hit["snippet"], (query, hit)
            assert get_text(ws, hit["citation"]).rstrip("\n").split("\n") == hit["snippet"].split("\n")
    hits = recall_json(ws, "what should I run next")["results"]
    assert [h["path"] for h in hits] == ["memory/2025-11-24.md"], hits


def test_a_marker_line_belongs_to_no_unit():
    lines = ["# Peter", "", "<!-- zmem:begin (written by `zmem reflect`) -->", "## Facts", "- a fact",
             "<!-- zmem:end -->"]
    assert units(lines) == [(0, 0), (3, 3), (4, 4)]
