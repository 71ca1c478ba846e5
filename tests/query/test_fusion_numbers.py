"""A one- or two-digit number standing alone in a query ("on 3 June, 2023", "my 2 kids") is a day or a
count, not a rare identifier: a chunk that happens to hold it must not be ranked before every other
candidate (LoCoMo dev: such chunks pushed the dated note out of hybrid's top 10). Joined to other
characters a number still is one (4.2.7, B12, v2), and so is a short number after `#` or `№`: a reference
(an issue, a pull request, an invoice: "what fixed #42?"), not a day or a count."""
from __future__ import annotations

from helpers.workspace import commit_all, run, write
from zmem.index.catchup import open_index
from zmem.query.fusion import LONE_NUMBER, adaptive_fuse, query_rarity, query_weights
from zmem.workspace.core import find_workspace

NOTES = {
    "memory/2023-06-03.md": "# 2023-06-03\n\n- John had to say goodbye to Max, the family dog.\n",
    "bank/kids.md": "# Kids\n\n- John drives his 3 kids to school.\n",
    "bank/firmware.md": "# Firmware\n\n- Firmware 4.2.7 fixed the router reboots; gate B12 is closed.\n",
    "bank/tls.md": "# TLS\n\n- Issue #42 was fixed by pinning the TLS library.\n",
}


def rarity_of(ws, query):
    for path, text in NOTES.items():
        write(ws, path, text)
    commit_all(ws)
    assert run(["-C", str(ws), "index"]).exit_code == 0
    conn = open_index(find_workspace(ws))
    try:
        return query_rarity(conn, query)
    finally:
        conn.close()


def test_lone_short_numbers_are_days_or_counts():
    assert LONE_NUMBER.findall("What did John say goodbye to on 3 June, 2023?") == ["3"]
    assert LONE_NUMBER.findall("the forest picture from December 1,2023") == ["1"]
    assert LONE_NUMBER.findall("my 2 kids, 31 days") == ["2", "31"]
    for query in ("firmware 4.2.7", "python 3.13.1", "gate B12?", "v2.14.3", "ORA-12541", "order 88123", "第3章"):
        assert LONE_NUMBER.findall(query) == [], query


def test_a_day_of_the_month_is_no_exact_match(ws):
    rarity = rarity_of(ws, "What pet did John say goodbye to on 3 June?")
    assert "3" in {t.key for t in rarity}  # one chunk holds it: rare, but a day, not an identifier
    assert [t.key for t in rarity if t.exact] == []
    texts = {1: "- John had to say goodbye to Max, the family dog.", 2: "- John drives his 3 kids to school."}
    weights = query_weights(rarity, texts, 0.7, 0.3)
    assert weights.exact == frozenset()
    # the note the question is about keeps its place: the chunk holding a lone "3" is not put first
    assert adaptive_fuse([(1, 0.8), (2, 0.6)], [(1, 0.9), (2, 0.5)], weights)[0][0] == 1


def test_numbers_joined_to_others_still_are_identifiers(ws):
    rarity = rarity_of(ws, "firmware 4.2.7 at gate B12")
    assert {t.key for t in rarity if t.exact} == {"4", "2", "7", "b12"}


def test_a_numbered_reference_is_no_lone_number():
    for query in ("what fixed #42?", "is #7 merged", "issue #3", "invoice №12"):
        assert LONE_NUMBER.findall(query) == [], query
    assert LONE_NUMBER.findall("the 3 bugs of #42 on 5 June") == ["3", "5"]


def test_an_issue_number_is_an_exact_match(ws):
    rarity = rarity_of(ws, "What fixed #42?")
    assert [t.key for t in rarity if t.exact] == ["42"]
