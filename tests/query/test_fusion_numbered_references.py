"""A short number after `#` or `№` is a reference (an issue, a pull request, an invoice: "what fixed
#42?"), not a day or a count: it stays a rare identifier, so the note naming it ranks first, as a
number joined to letters (B12) does."""
from __future__ import annotations

from helpers.workspace import commit_all, run, write
from zmem.index.catchup import open_index
from zmem.query.fusion import LONE_NUMBER, query_rarity
from zmem.workspace.core import find_workspace


def test_a_numbered_reference_is_no_lone_number():
    for query in ("what fixed #42?", "is #7 merged", "issue #3", "invoice №12"):
        assert LONE_NUMBER.findall(query) == [], query
    assert LONE_NUMBER.findall("the 3 bugs of #42 on 5 June") == ["3", "5"]


def test_an_issue_number_is_an_exact_match(ws):
    write(ws, "bank/tls.md", "# TLS\n\n- Issue #42 was fixed by pinning the TLS library.\n")
    write(ws, "bank/kids.md", "# Kids\n\n- John drives his 3 kids to school.\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index"]).exit_code == 0
    conn = open_index(find_workspace(ws))
    try:
        rarity = query_rarity(conn, "What fixed #42?")
    finally:
        conn.close()
    assert [t.key for t in rarity if t.exact] == ["42"]
