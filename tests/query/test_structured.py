"""Structured memory end to end in real git repositories: facts in the index, recall --kind/--entity,
entities and the graph, opinions, and `zmem reflect` as one reviewable commit."""
from __future__ import annotations

import json
import re
import unicodedata

import pytest

from helpers.workspace import RETAIN, commit_all, git, run, write, zmem_proc

DAY1 = """# 2025-11-24

## Retain
- W @Peter: Currently in Marrakech (Nov 27–Dec 1, 2025) for @Andy's birthday.
- O(c=0.6) @Peter: Prefers concise replies on WhatsApp.
- R @Peter lives_in @Lisbon
- B @warelay: Fixed the Baileys WS crash.
- X @Peter: a malformed bullet
"""


def _json(args):
    res = run(args)
    assert res.exit_code == 0, res.output + res.stderr
    return json.loads(res.stdout), res.stderr


def _log(root, day, body, date):
    write(root, f"memory/{day}.md", f"# {day}\n\n## Retain\n{body}")
    return commit_all(root, f"log {day}", date=date)


def test_facts_entities_graph_and_recall(ws):
    write(ws, "memory/2025-11-24.md", DAY1)
    commit_all(ws, "facts")
    data, err = _json(["-C", str(ws), "facts", "--json"])
    facts = data["facts"]
    assert {f["kind"] for f in facts} == {"world", "opinion", "relation", "experience"}
    assert "memory/2025-11-24.md:8: unknown fact kind 'X'" in err  # malformed: a warning, never fatal
    world = next(f for f in facts if f["kind"] == "world")
    assert world["entities"] == ["Peter", "Andy"] and world["source"] == "memory/2025-11-24.md#L4"
    assert world["event"] == {"start": "2025-11-27", "end": "2025-12-01"} and world["day"] == "2025-11-24"
    # the citation reads back exactly the fact's line
    got = run(["-C", str(ws), "get", world["source"]])
    assert "Currently in Marrakech" in got.stdout

    data, _ = _json(["-C", str(ws), "facts", "--entity", "@peter", "--kind", "O", "--origin", "--json"])
    (op,) = data["facts"]
    assert op["confidence"] == 0.6 and op["commit"] == git(ws, "rev-parse", "HEAD")
    assert op["author"] == "Test Author" and op["timestamp"]

    res = _json(["-C", str(ws), "recall", "marrakech birthday", "--entity", "Peter", "--json"])[0]
    assert res["results"][0]["type"] == "fact" and res["results"][0]["kind"] == "world"
    assert res["results"][0]["citation"] == "memory/2025-11-24.md#L4-L4"
    res = _json(["-C", str(ws), "recall", "WhatsApp", "--kind", "opinion", "--json"])[0]
    assert [r["kind"] for r in res["results"]] == ["opinion"]

    rep, _ = _json(["-C", str(ws), "entity", "the peter".split()[1], "--json"])
    assert rep["entity"]["name"] == "Peter" and len(rep["facts"]) == 3
    assert {(r["name"], r["type"]) for r in rep["related"]} == {("Andy", "co-mentioned"), ("Lisbon", "lives_in")}
    g, _ = _json(["-C", str(ws), "graph", "Lisbon", "--depth", "2", "--json"])
    assert {n["name"] for n in g["nodes"]} == {"Lisbon", "Peter", "Andy"}
    assert {e["type"] for e in g["edges"]} == {"lives_in", "co-mentioned"}
    lives = next(e for e in g["edges"] if e["type"] == "lives_in")
    assert lives["source_name"] == "Peter" and lives["evidence"] == ["memory/2025-11-24.md#L6"]

    out = ws / "graph.json"
    assert run(["-C", str(ws), "graph", "--export", str(out)]).exit_code == 0
    exported = json.loads(out.read_text())
    assert {n["name"] for n in exported["nodes"]} == {"Peter", "Andy", "Lisbon", "warelay"}
    assert len(exported["edges"]) == 2

    bad = run(["-C", str(ws), "entity", "Petre"])
    assert bad.exit_code == 1 and "no entity named 'Petre'" in bad.stderr and "did you mean @Peter" in bad.stderr


def test_an_entity_only_a_plain_note_names_says_how_to_make_it_one(ws):
    """`zmem append TEXT --entity Bob` without --retain writes a plain `- @Bob: TEXT`: `zmem entity
    Bob` then said only where entities come from, not that the note was found."""
    assert run(["-C", str(ws), "append", "met for coffee", "--entity", "Bob"]).exit_code == 0
    bad = run(["-C", str(ws), "entity", "Bob"])
    assert bad.exit_code == 1 and "no entity named 'Bob'" in bad.stderr
    assert '@Bob is in 1 note (zmem recall "@Bob") but in no `## Retain` fact' in bad.stderr
    assert "zmem append --retain W --entity Bob" in bad.stderr


def test_entity_spellings_merge_and_near_duplicates_are_reported(ws):
    write(ws, "memory/2025-11-24.md", "## Retain\n- W @The-Castle: has a moat\n- W @[the castle]: is old\n"
          "- W @José: cooks\n- W @Jose: bakes\n")
    commit_all(ws, "castle")
    rep, err = _json(["-C", str(ws), "entity", "the castle", "--json"])
    assert len(rep["facts"]) == 2 and sorted(rep["entity"]["spellings"]) == ["The-Castle", "the castle"]
    res = run(["-C", str(ws), "entity", "José"])
    assert "look like one entity" in res.stderr  # reported, not merged
    assert len(_json(["-C", str(ws), "entity", "Jose", "--json"])[0]["facts"]) == 1


def test_reflect_end_to_end(ws):
    root = ws
    write(root, "bank/entities/Peter.md", "# Peter\n\nMet at the 2024 conference. Written by a person.\n")
    commit_all(root, "page", date="2025-11-20T10:00:00+00:00")
    _log(root, "2025-11-24", "- O(c=0.6) @Peter: Prefers concise replies on WhatsApp.\n"
                             "- W @Peter: Lives in Lisbon.\n", "2025-11-24T10:00:00+00:00")

    # dry run: the diff, nothing written
    head = git(root, "rev-parse", "HEAD")
    dry = run(["-C", str(root), "reflect", "--dry-run"])
    assert dry.exit_code == 0 and "+++ b/bank/opinions.md" in dry.stdout and "+++ b/bank/entities/Peter.md" in dry.stdout
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain") == ""

    first, _ = _json(["-C", str(root), "reflect", "--json"])
    assert first["commit"] and first["opinions"][0]["new"] and first["opinions"][0]["after"] == 0.6
    page = (root / "bank/entities/Peter.md").read_text()
    assert page.startswith("# Peter\n\nMet at the 2024 conference. Written by a person.\n")
    assert "Lives in Lisbon. — memory/2025-11-24.md#L5" in page
    msg = git(root, "log", "-1", "--format=%B")
    assert msg.startswith("zmem reflect:") and "Zmem-Reflect:" in msg and "Zmem-Evidence: memory/2025-11-24.md#L4" in msg
    assert git(root, "status", "--porcelain") == ""

    # idempotent: nothing new, no change, no commit
    again, _ = _json(["-C", str(root), "reflect", "--json"])
    assert again["files"] == [] and again["commit"] is None and git(root, "rev-parse", "HEAD") == first["commit"]

    # reinforcement raises confidence by a small step; a contradiction lowers it
    _log(root, "2025-11-25", "- O(c=0.9) @Peter: prefers concise replies on WhatsApp!\n", "2025-11-25T10:00:00+00:00")
    second, _ = _json(["-C", str(root), "reflect", "--json"])
    (o,) = second["opinions"]
    assert (o["before"], o["after"], o["new"]) == (0.6, 0.67, False)
    _log(root, "2025-11-26", "- O(c=0.9) @Peter: No longer prefers concise replies on WhatsApp.\n",
         "2025-11-26T10:00:00+00:00")
    third, _ = _json(["-C", str(root), "reflect", "--json"])
    (o,) = third["opinions"]
    assert (o["before"], o["after"]) == (0.67, 0.49) and o["evidence"] == ["contradicts memory/2025-11-26.md#L4"]
    ops, _ = _json(["-C", str(root), "opinions", "--entity", "peter", "--json"])
    (op,) = ops["opinions"]
    assert op["confidence"] == 0.49 and [e["relation"] for e in op["evidence"]] == ["supports", "supports", "contradicts"]

    # human edits outside the block survive; inside it they are replaced; a reflect from scratch
    # (--since all) re-applies no evidence
    page = (root / "bank/entities/Peter.md").read_text()
    write(root, "bank/entities/Peter.md", page + "\nA note added below the block by a person.\n")
    commit_all(root, "human edit", date="2025-11-27T10:00:00+00:00")
    everything, _ = _json(["-C", str(root), "reflect", "--since", "all", "--json"])
    assert "bank/opinions.md" not in everything["files"]
    assert "A note added below the block by a person." in (root / "bank/entities/Peter.md").read_text()

    # uncommitted edits in bank/ are never overwritten
    _log(root, "2025-11-28", "- W @Peter: Visited Porto.\n", "2025-11-28T10:00:00+00:00")
    write(root, "bank/entities/Peter.md", "# Peter\n\nunsaved\n")
    refused = run(["-C", str(root), "reflect"])
    assert refused.exit_code == 1 and "uncommitted changes in bank/entities/Peter.md" in refused.stderr
    assert "hint:" in refused.stderr and (root / "bank/entities/Peter.md").read_text() == "# Peter\n\nunsaved\n"


def test_a_proposal_never_joins_a_statement_with_its_negation_or_other_numbers(ws):
    """token_set_ratio scores a subset 100: `No longer lives in Lisbon` joined `Lives in Lisbon`, and
    rooms 101, 202 and 303 made one "durable" fact, written into MEMORY.md citing lines that said otherwise."""
    days = ("2025-11-24", "2025-11-25", "2025-11-26", "2025-11-27")
    for day, room in zip(days, ("101", "202", "303", "404")):
        _log(ws, day, f"- W @Ana: Room {room} at the hotel.\n- W @Peter: Lives in Lisbon.\n", f"{day}T10:00:00+00:00")
    res, _ = _json(["-C", str(ws), "reflect", "--json"])
    assert [p["text"] for p in res["proposals"]] == ["@Peter: Lives in Lisbon."]
    _log(ws, "2025-11-28", "- W @Peter: No longer lives in Lisbon.\n", "2025-11-28T10:00:00+00:00")
    res, _ = _json(["-C", str(ws), "reflect", "--since", "all", "--json"])
    assert res["proposals"] == []  # said four times, then no longer: not durable


def test_reflect_proposals_for_memory_md(ws):
    for i, day in enumerate(("2025-11-24", "2025-11-25", "2025-11-26")):
        _log(ws, day, "- W @Peter: Works from the Lisbon office on Mondays.\n", f"{day}T10:00:00+00:00")
    res, _ = _json(["-C", str(ws), "reflect", "--json"])
    (p,) = res["proposals"]
    assert p["text"] == "@Peter: Works from the Lisbon office on Mondays." and len(p["sources"]) == 3
    assert not res["proposals_applied"] and "MEMORY.md" not in res["files"]
    applied, _ = _json(["-C", str(ws), "reflect", "--since", "all", "--apply-proposals", "--json"])
    assert applied["proposals_applied"] and "MEMORY.md" in applied["files"]
    assert "Works from the Lisbon office on Mondays." in (ws / "MEMORY.md").read_text()
    # once in MEMORY.md, it is no longer proposed
    assert _json(["-C", str(ws), "reflect", "--since", "all", "--json"])[0]["proposals"] == []


def test_broken_markers_leave_the_page_alone(ws):
    write(ws, "bank/entities/Ana.md", "# Ana\n\n<!-- zmem:end -->\nhuman text\n")
    commit_all(ws, "page")
    _log(ws, "2025-11-24", "- W @Ana: Likes jazz.\n", "2025-11-24T10:00:00+00:00")
    res, err = _json(["-C", str(ws), "reflect", "--json"])
    assert "bank/entities/Ana.md" not in res["files"] and "markers are unbalanced" in err
    assert (ws / "bank/entities/Ana.md").read_text() == "# Ana\n\n<!-- zmem:end -->\nhuman text\n"


# ----------------------------------------------------------------------------- defects fixed later


@pytest.mark.slow
def test_entity_names_never_become_paths_outside_the_entity_dir(ws):
    _log(ws, "2025-11-24", "- W @[../../../escaped]: t\n- W @[a/b]: t2\n- W @[..\\\\evil]: t3\n",
         "2025-11-24T10:00:00+00:00")
    res, _ = _json(["-C", str(ws), "reflect", "--json"])
    assert res["commit"] and git(ws, "status", "--porcelain") == ""
    assert [p.parent for p in ws.parent.parent.glob("**/escaped.md")] == [ws / "bank/entities"]
    pages = sorted(p.name for p in (ws / "bank/entities").iterdir() if p.name != ".gitkeep")
    assert pages == ["a-b.md", "escaped.md", "evil.md"]  # one flat file each, no subdirectory
    assert all(p["path"].count("/") == 2 and ".." not in p["path"] for p in res["pages"])
    rep, _ = _json(["-C", str(ws), "entity", "a/b", "--json"])
    assert rep["entity"]["page"] == "bank/entities/a-b.md" and len(rep["facts"]) == 1


def test_reflect_commits_as_zmem_when_git_has_no_identity(ws, monkeypatch):
    _log(ws, "2025-11-24", "- W @Ana: Likes jazz.\n", "2025-11-24T10:00:00+00:00")
    home = ws.parent.parent / "nohome"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Only In Home\n\temail = home@example.org\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")  # git itself sees no identity at all
    for who in ("AUTHOR", "COMMITTER"):
        for what in ("NAME", "EMAIL"):
            monkeypatch.delenv(f"GIT_{who}_{what}")
    res = zmem_proc("-C", str(ws), "reflect")  # a fresh process: libgit2 reads this HOME's config
    assert res.returncode == 0, res.stderr
    assert git(ws, "log", "-1", "--format=%an <%ae>") == "zmem <zmem@localhost>"
    assert git(ws, "status", "--porcelain") == ""


def test_reflect_exits_1_when_the_commit_fails(ws):
    _log(ws, "2025-11-24", "- W @Ana: Likes jazz.\n", "2025-11-24T10:00:00+00:00")
    hook = ws / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho 'rejected by policy' >&2\nexit 1\n")
    hook.chmod(0o755)
    res = run(["-C", str(ws), "reflect"])
    assert res.exit_code == 1
    err = res.stderr.splitlines()
    assert err[0].startswith("zmem: wrote 1 file (bank/entities/Ana.md) but could not commit: rejected by policy")
    assert err[1].startswith("hint: ") and len(err) == 2


def test_graph_export_to_a_missing_directory_is_a_user_error(ws):
    _log(ws, "2025-11-24", "- W @Ana: met @Bo\n", "2025-11-24T10:00:00+00:00")
    res = run(["-C", str(ws), "graph", "--export", str(ws / "no/such/dir/x.json")])
    assert res.exit_code == 1
    lines = res.stderr.splitlines()
    assert lines[0].startswith("zmem: cannot write ") and "No such file or directory" in lines[0]
    assert lines[1].startswith("hint: ") and "internal error" not in res.stderr


def test_index_always_reports_malformed_bullets(ws):
    write(ws, "memory/2025-11-24.md", DAY1)
    commit_all(ws, "facts")
    assert "memory/2025-11-24.md:8: unknown fact kind 'X'" in run(["-C", str(ws), "index", "--no-embed"]).stderr
    for args in (["index", "--no-embed"], ["index", "--no-embed", "--json"]):  # already indexed, as by the hook
        res = run(["-C", str(ws), *args])
        assert res.exit_code == 0 and "memory/2025-11-24.md:8: unknown fact kind 'X'" in res.stderr
    data = json.loads(res.stdout)
    assert data["updated"] == [] and any(w.startswith("memory/2025-11-24.md:8:") for w in data["warnings"])


def test_quoted_fact_bullets_are_reported_by_index_status_and_doctor(ws):
    _log(ws, "2025-11-24", "- W @Ana: Likes jazz.\n\n> - W @Peter: lives in Lisbon\n> As Ana said, jazz is life.\n",
         "2025-11-24T10:00:00+00:00")
    warning = "memory/2025-11-24.md:6: a quoted bullet (`> - …`) is not read as a fact; remove the `> ` to store it"
    assert warning in run(["-C", str(ws), "index", "--no-embed"]).stderr
    assert warning in run(["-C", str(ws), "status"]).stderr
    doc = run(["-C", str(ws), "doctor"]).stdout
    assert f"[WARN] file: {warning}" in doc and doc.count("memory/2025-11-24.md") == 1  # the prose is no warning
    facts, _ = _json(["-C", str(ws), "facts", "--json"])
    assert [f["text"] for f in facts["facts"]] == ["Likes jazz."]


def test_doctor_checks_opinions_and_page_markers(ws):
    doc = run(["-C", str(ws), "doctor"])
    assert doc.exit_code == 0
    assert "[ok  ] opinions: bank/opinions.md: 0 opinions, all readable" in doc.stdout
    assert "[ok  ] entity pages: 0 pages, zmem:begin/zmem:end markers in order" in doc.stdout
    write(ws, "bank/opinions.md", "# Opinions\n\n## Likes jazz.\n- entities: Ana\n- confidence: high\n- evidence:\n"
          "  - supports memory/2025-11-24.md#L4 (fact 3a9f1c2b07, c=1.5): Likes jazz.\n  - supports somewhere\n")
    write(ws, "bank/entities/Ana.md", "# Ana\n\n<!-- zmem:end -->\nhuman text\n")
    write(ws, "bank/entities/Bo.md", "# Bo\n\n<!-- zmem:begin (x) -->\na\n<!-- zmem:end -->\n<!-- zmem:begin -->\n")
    write(ws, "bank/entities/Cy.md", "# Cy\n\n<!-- zmem:begin (x) -->\nfacts\n<!-- zmem:end -->\nmine\n")
    commit_all(ws, "hand edits")
    doc = run(["-C", str(ws), "doctor"])
    assert doc.exit_code == 0  # reflect leaves such files alone: warnings, not failures
    lines = [x for x in doc.stdout.splitlines() if x.startswith(("[WARN] opinions", "[WARN] entity pages"))]
    assert lines == [
        "[WARN] opinions: bank/opinions.md:4: cannot read entity names in 'Ana' "
        "(write `- entities: @Peter @[Two Words]`); the opinion has none",
        "[WARN] opinions: bank/opinions.md:5: confidence 'high' is not a number in 0..1; kept at 0.60",
        "[WARN] opinions: bank/opinions.md:7: evidence strength c=1.5 is not a number in 0..1",
        "[WARN] opinions: bank/opinions.md:8: cannot read this evidence line "
        "(expected `  - supports PATH#Lnn (fact ID, c=0.9): text`)",
        "[WARN] entity pages: bank/entities/Ana.md:3: its zmem:begin/zmem:end markers are unbalanced; "
        "`zmem reflect` leaves this page alone until it has one `<!-- zmem:begin … -->` … `<!-- zmem:end -->` "
        "pair, or none",
        "[WARN] entity pages: bank/entities/Bo.md:3: it has two zmem blocks; `zmem reflect` leaves this page alone "
        "until it has one `<!-- zmem:begin … -->` … `<!-- zmem:end -->` pair, or none",
    ]
    # what doctor warns about is what reflect refuses: those pages stay as they were
    _log(ws, "2025-11-24", "- W @Ana: Likes jazz.\n- W @Bo: Plays drums.\n- W @Cy: Sings.\n",
         "2025-11-24T10:00:00+00:00")
    res, err = _json(["-C", str(ws), "reflect", "--json"])
    assert res["files"] == ["bank/entities/Cy.md", "bank/opinions.md"]
    assert "markers are unbalanced" in err and "two zmem blocks" in err
    assert (ws / "bank/entities/Ana.md").read_text() == "# Ana\n\n<!-- zmem:end -->\nhuman text\n"
    # the hand-written evidence cites a fact no note holds: only that line changes, marked retracted
    assert (ws / "bank/opinions.md").read_text() == (
        "# Opinions\n\n## Likes jazz.\n- entities: Ana\n- confidence: high\n- evidence:\n"
        "  - supports memory/2025-11-24.md#L4 (fact 3a9f1c2b07, c=1.50, retracted): Likes jazz.\n"
        "  - supports somewhere\n")


def test_entity_shows_the_pages_own_text(ws):
    write(ws, "bank/entities/Peter.md", "# Peter\n\nMet at the 2024 conference.\n")
    commit_all(ws, "page", date="2025-11-20T10:00:00+00:00")
    _log(ws, "2025-11-24", "- W @Peter: Lives in Lisbon.\n", "2025-11-24T10:00:00+00:00")
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    page = (ws / "bank/entities/Peter.md").read_text()
    write(ws, "bank/entities/Peter.md", page + "\nA note below the block.\n")
    commit_all(ws, "below")
    rep, _ = _json(["-C", str(ws), "entity", "Peter", "--json"])
    assert rep["page_text"] == "# Peter\n\nMet at the 2024 conference.\n\nA note below the block."
    text = run(["-C", str(ws), "entity", "Peter"]).stdout
    assert "Met at the 2024 conference." in text and "A note below the block." in text and "zmem:begin" not in text


def test_suspected_duplicates_in_doctor_and_reflect(ws):
    _log(ws, "2025-11-24", "- W @José: cooks\n- W @Jose: bakes\n", "2025-11-24T10:00:00+00:00")
    res = run(["-C", str(ws), "reflect"])
    assert res.exit_code == 0 and "@Jose and @José look like one entity" in res.stderr
    doc = run(["-C", str(ws), "doctor"])
    assert "[WARN] entities: @Jose and @José look like one entity spelled two ways" in doc.stdout


def test_entity_resolves_by_page_title(ws):
    write(ws, "bank/entities/Zed.md", "# Zed Page\n\nOnly a page.\n")
    commit_all(ws, "zed")
    rep, _ = _json(["-C", str(ws), "entity", "Zed Page", "--json"])
    assert rep["entity"]["page"] == "bank/entities/Zed.md" and rep["entity"]["name"] == "Zed Page"
    assert _json(["-C", str(ws), "entity", "zed", "--json"])[0]["entity"]["page"] == "bank/entities/Zed.md"
    assert rep["page_text"] == "# Zed Page\n\nOnly a page."
    _log(ws, "2025-11-24", "- W @Quinn: no page yet\n", "2025-11-24T10:00:00+00:00")
    assert _json(["-C", str(ws), "entity", "Quinn", "--json"])[0]["page_text"] is None


def test_facts_origin_table_has_origin_columns(ws):
    write(ws, "memory/2025-11-24.md", DAY1)
    sha = commit_all(ws, "facts", date="2025-11-24T21:04:11+00:00")
    out = run(["-C", str(ws), "facts", "--origin"]).stdout
    header = out.splitlines()[0].split()
    assert header[-3:] == ["commit", "author", "date"]
    assert sha[:10] in out and "Test Author" in out and "2025-11-24 21:04" in out


def test_opinion_matching_rule():
    from zmem.text.opinions import Opinion, compare, match
    cases = [
        ("likes tea", "likes coffee", None),
        ("Prefers short replies", "Prefers long replies", None),
        ("Is reliable", "Is unreliable", "contradicts"),
        ("Is honest", "Is dishonest", "contradicts"),
        ("Is reliable", "Is not unreliable", "supports"),
        ("Prefers email", "Prefers email over phone calls but hates meetings", "supports"),
        ("Prefers email", "Does not prefer email over phone calls", "contradicts"),
        ("Prefers concise replies on WhatsApp.", "prefers concise replies on WhatsApp!", "supports"),
        ("Prefers concise replies on WhatsApp.", "No longer prefers concise replies on WhatsApp.", "contradicts"),
        ("Prefers concise replies on WhatsApp.", "Prefers concise reply on Whatsap", "supports"),  # plural, typo
        ("Likes coffee", "Dislikes coffee", "contradicts"),
        ("Prefere café sem açúcar", "Não prefere cafe sem acucar", "contradicts"),  # accents folded
        ("喜欢喝茶", "不喜欢喝茶", "contradicts"),
        ("喜欢喝茶", "喜欢喝咖啡", None),
        ("Prefers email", "Hates email", None),
    ]
    for a, b, expected in cases:
        assert compare(a, b)[0] == expected, (a, b)
        assert compare(b, a)[0] == expected, (b, a)  # symmetric
    ops = [Opinion("Likes tea", ["Ana"]), Opinion("Is reliable", ["Ana"]), Opinion("Prefers email", ["Ana"])]
    assert match(ops, "Likes coffee", {"ana"}) is None
    assert match(ops, "Is unreliable", {"ana"}) == (1, True)
    assert match(ops, "Prefers email over phone calls but hates meetings", {"ana"}) == (2, False)
    assert match(ops, "Likes tea", {"bo"}) is None  # other entities: never the same opinion


def test_reflect_keeps_different_opinions_apart(ws):
    _log(ws, "2025-11-24", "- O(c=0.8) @Ana: Likes tea.\n- O(c=0.8) @Ana: Prefers email.\n",
         "2025-11-24T10:00:00+00:00")
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    _log(ws, "2025-11-25", "- O(c=0.9) @Ana: Likes coffee.\n"
                           "- O(c=0.9) @Ana: Prefers email over phone calls but hates meetings.\n",
         "2025-11-25T10:00:00+00:00")
    res, _ = _json(["-C", str(ws), "reflect", "--json"])
    by = {o["statement"]: o for o in res["opinions"]}
    assert by["Likes coffee."]["new"] and by["Prefers email."]["after"] > by["Prefers email."]["before"]
    assert by["Prefers email."]["evidence"] == ["supports memory/2025-11-25.md#L5"]


def test_table_cells_that_look_like_numbers_stay_as_written(ws):
    # tabulate reads any cell as a number unless told: a commit id like 2425273e94 printed as
    # 2.42527e+100; only the confidence and score columns are numbers
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n## Retain\n\n- O(c=0.80) @Peter: 1e10\n- W @Peter: 007\n")
    commit_all(ws, "numbers")
    for args in (["facts"], ["facts", "--origin"], ["recall", "Peter", "--kind", "W", "--format", "table"]):
        out = run(["-C", str(ws), *args, "--format", "table"] if args[0] == "facts" else ["-C", str(ws), *args]).stdout
        # a cell reading 7 alone (not a commit id such as 7a3f..., which the --origin table shows)
        assert "1e+10" not in out and not re.search(r"(^|\s)7(\s|$)", out, re.M), out
    out = run(["-C", str(ws), "facts", "--format", "table"]).stdout
    assert "1e10" in out and "007" in out and " 0.8 " in out, out  # the confidence is still a number


def test_entity_names_keep_their_combining_marks(ws):
    nfd = unicodedata.normalize("NFD", "José")
    write(ws, "memory/2025-03-01.md", RETAIN.format(day="2025-03-01", facts=(
        "- W @राहुल: Lives in Pune.\n"
        f"- W @{nfd}: Plays the guitar.\n"
        "- W @José: Lives in Madrid.")))
    commit_all(ws, "facts")
    rows = _json(["-C", str(ws), "facts", "--json"])[0]["facts"]
    assert {tuple(r["entities"]) for r in rows} >= {("राहुल",)}
    ent = _json(["-C", str(ws), "entity", "राहुल", "--json"])[0]
    assert [f["text"] for f in ent["facts"]] == ["Lives in Pune."]
    jose = _json(["-C", str(ws), "entity", "José", "--json"])[0]  # decomposed and composed: one entity
    assert sorted(f["text"] for f in jose["facts"]) == ["Lives in Madrid.", "Plays the guitar."]


def test_bracketed_names_work_as_arguments_and_opinions_names_unknown_entities(ws):
    write(ws, "memory/2025-03-02.md", RETAIN.format(day="2025-03-02", facts=(
        "- O(c=0.8) @[João Silva]: Prefers email to calls.\n- W @[João Silva]: Lives in Porto.")))
    commit_all(ws, "facts")
    ent = _json(["-C", str(ws), "entity", "@[João Silva]", "--json"])[0]
    assert ent["entity"]["name"] == "João Silva"
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    ops = _json(["-C", str(ws), "opinions", "--entity", "@[João Silva]", "--json"])[0]["opinions"]
    assert [o["statement"] for o in ops] == ["Prefers email to calls."]
    res = run(["-C", str(ws), "opinions", "--entity", "Nobody"])
    assert res.exit_code == 1 and "no entity named 'Nobody'" in res.stderr and "hint:" in res.stderr


def test_multi_line_fact_sources_use_the_citation_format(ws):
    write(ws, "memory/2025-04-01.md", RETAIN.format(day="2025-04-01", facts=(
        "- W @Ana: Moved to Porto in March\n  and started a new job there.")))
    commit_all(ws, "facts")
    row = _json(["-C", str(ws), "facts", "--json"])[0]["facts"][0]
    assert row["source"] == "memory/2025-04-01.md#L5-L6"
    back = _json(["-C", str(ws), "get", row["source"], "--json"])[0]
    assert "Moved to Porto" in back["text"] and "new job" in back["text"]


@pytest.mark.slow
def test_an_entity_name_too_long_for_a_file_name_gets_a_shortened_page(ws):
    from zmem.text.retain import MAX_SLUG_BYTES, entity_key, entity_slug
    long_b, long_c = "b" * 300, "b" * 299 + "c"
    for name in (long_b, long_c):
        res = run(["-C", str(ws), "append", f"hi from {name[-1]}", "--retain", "W", "--entity", name])
        assert res.exit_code == 0, res.output + res.stderr
    res = run(["-C", str(ws), "reflect", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    pages = sorted(p["path"] for p in json.loads(res.stdout)["pages"])
    assert pages == sorted(f"bank/entities/{entity_slug(n)}.md" for n in (long_b, long_c))
    assert len(set(pages)) == 2  # names that begin alike do not share a page
    for p in pages:
        assert len(p.split("/")[-1].encode()) <= MAX_SLUG_BYTES + 3 and (ws / p).is_file()
    # the same entity in another spelling gets the same page; the page is known as that entity's
    assert entity_slug("B" * 300).lower() == entity_slug(long_b).lower()
    assert entity_key(entity_slug("B" * 300)) == entity_key(entity_slug(long_b))
    got = json.loads(run(["-C", str(ws), "entity", long_b, "--json"]).stdout)
    assert got["entity"]["page"] == f"bank/entities/{entity_slug(long_b)}.md" and len(got["facts"]) == 1
    # later facts update that page instead of failing or making another
    assert run(["-C", str(ws), "append", "more", "--retain", "W", "--entity", "B" * 300]).exit_code == 0
    res = run(["-C", str(ws), "reflect", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    assert [(p["path"], p["created"]) for p in json.loads(res.stdout)["pages"]] == [
        (f"bank/entities/{entity_slug(long_b)}.md", False)]
    assert "more" in (ws / f"bank/entities/{entity_slug(long_b)}.md").read_text()
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    assert entity_slug("short name") == "short-name"  # short names are as they were
