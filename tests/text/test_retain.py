"""Retain parsing (pure): real-looking logs in four languages, malformed bullets, dates, and a
property test that the parser never raises."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zmem.index.append import format_entry
from zmem.text.dates import event_range
from zmem.text.retain import entity_key, entity_slug, may_hold_facts, mentions, parse_facts

ENGLISH = """\
# 2025-11-27

## Notes
- W @Peter: this is a note, not a fact (not in a Retain section)

## Retain
- W @Peter: Currently in Marrakech (Nov 27–Dec 1, 2025) for @Andy's birthday.
- B @warelay: Fixed the Baileys WS crash by wrapping
  connection.update handlers in try/catch.
- O(c=0.95) @Peter: Prefers concise replies (<1500 chars) on WhatsApp.
- S: Mornings are the most productive time.
- R @Peter lives_in @Lisbon: since 2024-03-01
- W @[The Castle], @the-castle: has a moat

## Later
- W @Peter: not retained either
"""


def test_english_log():
    facts, warnings = parse_facts(ENGLISH, "memory/2025-11-27.md", "2025-11-27")
    assert warnings == []
    assert [(f.start_line, f.end_line, f.kind) for f in facts] == [
        (7, 7, "world"), (8, 9, "experience"), (10, 10, "opinion"), (11, 11, "observation"), (12, 12, "relation"),
        (13, 13, "world")]
    w, b, o, s, r, castle = facts
    assert w.entities == ["Peter", "Andy"]  # the possessive is not part of the name
    assert w.event == ("2025-11-27", "2025-12-01")
    assert b.text == "Fixed the Baileys WS crash by wrapping connection.update handlers in try/catch."
    assert o.confidence == 0.95 and o.entities == ["Peter"] and o.text.startswith("Prefers concise")
    assert s.entities == [] and s.text == "Mornings are the most productive time."
    assert r.relation == ("Peter", "lives_in", "Lisbon") and r.event == ("2024-03-01", "2024-03-01")
    assert castle.entities == ["The Castle"]  # both spellings are one entity
    assert w.fact_id("memory/2025-11-27.md") == w.fact_id("memory/2025-11-27.md")
    assert w.fact_id("memory/2025-11-27.md") != o.fact_id("memory/2025-11-27.md")


def test_portuguese_spanish_chinese_logs():
    pt = "# 2025-03-05\n\n## Reter\n- W @Maria: Mora em Lisboa desde 3 de março de 2024.\n" \
         "- O(c=0.7) @Maria: Prefere café sem açúcar.\n"
    es = "# 2025-03-05\n\n### RETENER:\n- B @Jorge: Viajó a Madrid del 27 de noviembre al 1 de diciembre.\n"
    zh = "# 2025-03-05\n\n## 保留\n- W @张伟：住在北京（2025年3月1日起）\n- O(c=0.6) @张伟：喜欢喝茶。\n"
    (m1, m2), w = parse_facts(pt, "memory/2025-03-05.md", "2025-03-05")
    assert w == [] and m1.entities == ["Maria"] and m1.event == ("2024-03-03", "2024-03-03")
    assert m2.kind == "opinion" and m2.confidence == 0.7
    (j,), w = parse_facts(es, "memory/2025-03-05.md", "2025-03-05")
    # no year written: the year that puts the trip nearest the log's day (a March log: last November)
    assert w == [] and j.kind == "experience" and j.event == ("2024-11-27", "2024-12-01")
    (z1, z2), w = parse_facts(zh, "memory/2025-03-05.md", "2025-03-05")
    assert w == [] and z1.entities == ["张伟"] and z1.text == "住在北京（2025年3月1日起）"
    assert z1.event == ("2025-03-01", "2025-03-01") and z2.confidence == 0.6


def test_malformed_bullets_are_warnings_with_file_and_line():
    text = ("## Retain\n- W @Peter: fine\n- X @Peter: unknown kind\n- O(c=1.7) @Peter: too sure\n"
            "- O(c=0.9 @Peter: unbalanced\n- W @Peter:\n- W @Peter: (unclosed\n- Peter said hi\n"
            "-\n- O(x=1) @Peter: unknown argument\n- R @Peter @Lisbon\n\nsome prose\n")
    facts, warnings = parse_facts(text, "memory/2025-11-27.md")
    assert [f.text for f in facts] == ["fine"]
    by_line = {int(w.split(":")[1]): w for w in warnings}
    assert sorted(by_line) == [3, 4, 5, 6, 7, 8, 9, 10, 11, 13]
    assert "unknown fact kind 'X'" in by_line[3]
    assert "c=1.7" in by_line[4] and "outside" in by_line[4]
    assert "unbalanced" in by_line[5] and "unbalanced" in by_line[7]
    assert "no text" in by_line[6]
    assert "relation" in by_line[11]
    assert all(w.startswith("memory/2025-11-27.md:") for w in warnings)


def test_quoted_fact_bullets_are_warnings_and_never_facts():
    text = ("## Retain\n- W @Ana: Likes jazz.\n\n> - W @Peter: lives in Lisbon\n> As Ana said, jazz is life.\n"
            ">> - O(c=0.8) @Ana: nested quote\n> - a quoted list item\n> - X @Peter: not a fact even unquoted\n"
            "\n# Elsewhere\n> - W @Peter: quoted outside a Retain section\n")
    facts, warnings = parse_facts(text, "memory/2025-11-27.md")
    assert [f.text for f in facts] == ["Likes jazz."]
    assert warnings == [f"memory/2025-11-27.md:{n}: a quoted bullet (`> - …`) is not read as a fact; "
                        "remove the `> ` to store it" for n in (4, 6)]


def test_code_blocks_and_other_sections_are_ignored():
    text = "## Retain\n```\n- X not a fact\n```\n- W @A: one\n# Top\n- X @B: outside\n"
    facts, warnings = parse_facts(text, "f.md")
    assert [f.text for f in facts] == ["one"] and warnings == []


def test_entity_names_resolve_to_one_key():
    assert entity_key("@The-Castle") == entity_key("the castle") == entity_key("The_Castle") == "the-castle"
    assert entity_key("João") != entity_key("Joao")  # similar, not the same: reported, never merged
    assert entity_slug("The Castle") == "The-Castle"
    assert mentions("mail peter@example.com and @Ana, @ana and @[Ana Lu].") == ["Ana", "Ana Lu"]


def test_dates():
    cases = {
        "Nov 27–Dec 1, 2025": ("2025-11-27", "2025-12-01"), "on 2025-11-27": ("2025-11-27", "2025-11-27"),
        "Nov 27–30, 2025": ("2025-11-27", "2025-11-30"), "27 Nov 2025": ("2025-11-27", "2025-11-27"),
        "27 de novembro de 2025": ("2025-11-27", "2025-11-27"), "27–30 de noviembre": ("2025-11-27", "2025-11-30"),
        "11月27日至12月1日": ("2025-11-27", "2025-12-01"), "Dec 30–Jan 2": ("2025-12-30", "2026-01-02"),
        "10 out of 12 tests": None, "we may 5 times": None, "Feb 30": None, "version 2.3": None,
    }
    for text, expected in cases.items():
        assert event_range(text, 2025) == expected, text


def test_missing_year_is_the_one_nearest_the_logs_day():
    assert event_range("Back from holidays (Dec 30–Jan 2)", "2026-01-02") == ("2025-12-30", "2026-01-02")
    assert event_range("Flight on Jan 3", "2025-12-28") == ("2026-01-03", "2026-01-03")
    assert event_range("Nov 27–Dec 1", "2025-11-24") == ("2025-11-27", "2025-12-01")
    assert event_range("Dec 30–Jan 2, 2027", "2026-01-02") == ("2026-12-30", "2027-01-02")  # a written year wins
    assert event_range("Dec 30–Jan 2", 2026) == ("2026-12-30", "2027-01-02")  # a bare year: that year
    text = "# 2026-01-02\n\n## Retain\n- B @Ana: Back from holidays (Dec 30–Jan 2)\n"
    (f,), _ = parse_facts(text, "memory/2026-01-02.md", "2026-01-02")
    assert f.event == ("2025-12-30", "2026-01-02")
    (f,), _ = parse_facts("## Retain\n- W @Ana: Flight on Jan 3\n", "memory/2025-12-28.md", "2025-12-28")
    assert f.event == ("2026-01-03", "2026-01-03")


def test_entity_slugs_are_safe_file_names():
    for name in ("../../../tmp/x", "a/b", "a\\b", ".hidden", "..", "/", "x\x00y\ty", "...x", "a/../b", " .. / .. "):
        slug = entity_slug(name)
        assert slug and "/" not in slug and "\\" not in slug and ".." not in slug, (name, slug)
        assert not slug.startswith(".") and not any(ord(c) < 32 for c in slug), (name, slug)
        assert entity_key(slug) == entity_key(name)  # the page and the mentions are one entity
    assert entity_slug("a/b") == "a-b" and entity_slug("../../../tmp/x") == "tmp-x"
    assert entity_slug("The Castle") == "The-Castle" and entity_slug("José") == "José"


def test_append_writes_only_valid_facts():
    assert format_entry("@Peter lives_in @Lisbon", "R") == "- R @Peter lives_in @Lisbon\n"
    import pytest
    from zmem.errors import ZmemError
    with pytest.raises(ZmemError):
        format_entry("lives in Lisbon", "R")  # a relation needs @Subject predicate @Object


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_parser_never_raises(body):
    for text in (body, "## Retain\n" + body, "## Retain\n- " + body, "## 保留\n- O(" + body, "## Retain\n> - " + body):
        facts, warnings = parse_facts(text, "x.md", "2025-01-01")
        for f in facts:
            assert f.start_line >= 1 and f.end_line >= f.start_line and f.text
            assert f.confidence is None or 0.0 <= f.confidence <= 1.0


LINES = st.sampled_from([
    "# 2025-11-27", "## Retain", "## Reter:", "### retener", "## 保留", "Retain", "------", "======",
    "## Notes", "- W @Peter: In Lisbon.", "- O(c=0.9) @Ana: Likes tea.", "  continued", "", "```", "text",
    "#Retain", "## Retain ##", "> ## Retain", "1. B @Ana: Ran.",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(LINES, max_size=14))
def test_a_note_that_may_hold_no_facts_holds_none(lines):
    # context skips parsing the logs may_hold_facts rules out: it must never rule out one with facts
    if parse_facts("\n".join(lines) + "\n", "memory/2025-11-27.md", "2025-11-27")[0]:
        assert may_hold_facts(lines)
