"""`zmem reflect` and the bytes and line numbers of the files it rewrites, in real git repositories
through the CLI: a lone CR is no line break, CRLF and a byte order mark are kept, undecodable
pages are skipped with a warning, and every citation reflect writes reads back (`zmem get`) the
fact it names — also for facts kept in the very files it rewrites, whose lines it moves."""
from __future__ import annotations

import json
import re
from pathlib import Path

from helpers.workspace import commit_all, get_text, git, reflect_json, run, run_json, write


def _unchanged(root):
    """A second run and a from-scratch preview change nothing."""
    again, _ = reflect_json(root)
    assert again["files"] == [] and again["commit"] is None
    dry = run(["-C", str(root), "reflect", "--since", "all", "--dry-run"])
    assert dry.exit_code == 0 and dry.stdout == "nothing to change\n", dry.stdout


def _put(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


CITATION = re.compile(r"(?<![\w/.])((?:memory|bank)/[^\s#@(),]+\.md)(@[0-9a-f]{7,40})?#L(\d+)(?:-(\d+))?")


def _citations_resolve(root: Path) -> int:
    """Every citation the last reflect commit wrote (in the files it changed and in its message)
    names a fact as the index now reads it, and `zmem get` of it prints that fact's line; where the
    citing line quotes the fact, the quote is that fact's text. Returns how many were checked."""
    facts = {f["source"]: f for f in run_json(["-C", str(root), "facts", "--json"])[0]["facts"]}
    assert git(root, "log", "-1", "--format=%B").startswith("zmem reflect:")
    texts = {rel: (root / rel).read_bytes().decode("utf-8", "replace")
             for rel in git(root, "show", "--name-only", "--format=", "HEAD").splitlines()}
    texts["the commit message"] = git(root, "log", "-1", "--format=%B")
    checked = 0
    for where, text in texts.items():
        for line in text.split("\n"):
            for m in CITATION.finditer(line):
                citation = m.group(0)
                if m.group(2):  # retracted evidence, cited where it last was in a commit
                    assert get_text(root, citation).strip(), (where, line)
                    continue
                assert citation in facts, f"{where}: {line!r} cites {citation}, which holds no fact"
                fact = facts[citation]
                got = " ".join(get_text(root, citation).split())
                bare = re.sub(r"@\[?([^\]\s]*)\]?", r"\1", got)  # relations drop the @: `Peter knows Ana`
                assert fact["text"] in got or fact["text"] in bare, (where, line, fact)
                quote = re.search(r"(?: · \w+(?: \(c=[\d.]+\))?|^- \d{4}-\d\d-\d\d(?: → [\d-]+)?): (.*) — ", line) \
                    or re.search(r"\(fact [0-9a-f]+[^)]*\): (.*)$", line)
                if quote:
                    assert quote.group(1).rstrip("…\r")[:40] in fact["text"], (where, line, fact)
                checked += 1
    return checked


def _blamed_to(root, rel, line) -> str:
    return git(root, "blame", "--porcelain", "-L", f"{line},{line}", "HEAD", "--", rel).split()[0]


# ----------------------------------------------------------------------------- a lone CR


def test_a_lone_cr_in_a_page_stays_and_its_citations_hold(ws):
    page = b"# Peter\n\nold\rnote\n\n## Retain\n- W @Peter: likes tea\n"  # L6: a lone CR breaks no line
    _put(ws, "bank/entities/Peter.md", page)
    commit_all(ws, "page")
    res, _ = reflect_json(ws)
    assert res["commit"] and res["files"] == ["bank/entities/Peter.md"]
    data = (ws / "bank/entities/Peter.md").read_bytes()
    assert data.startswith(page)  # the person's bytes, the CR too; the block follows them
    assert b"- undated \xc2\xb7 world: likes tea \xe2\x80\x94 bank/entities/Peter.md#L6\n" in data
    assert "- W @Peter: likes tea" in get_text(ws, "bank/entities/Peter.md#L6")
    (fact,) = run_json(["-C", str(ws), "facts", "--json"])[0]["facts"]
    assert fact["source"] == "bank/entities/Peter.md#L6"
    assert _citations_resolve(ws) == 2  # the page's line and the Zmem-Evidence trailer
    _unchanged(ws)


# ----------------------------------------------------------------------------- CRLF and a BOM


def test_crlf_pages_and_opinions_keep_their_line_endings_and_their_blame(ws):
    page = "\ufeff# Peter\r\n\r\nMet at the 2024 conference.\r\n\r\n## Retain\r\n- W @Peter: likes tea\r\n"
    _put(ws, "bank/entities/Peter.md", page.encode())
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n## Retain\n- O(c=0.6) @Peter: Prefers concise replies.\n")
    person = commit_all(ws, "day 1", date="2025-11-24T10:00:00+00:00")
    reflect_json(ws)
    crlf = (ws / "bank/opinions.md").read_text().replace("\n", "\r\n").encode()  # a person's editor saves CRLF
    _put(ws, "bank/opinions.md", crlf)
    editor = commit_all(ws, "CRLF", date="2025-11-25T10:00:00+00:00")
    write(ws, "memory/2025-11-26.md", "# 2025-11-26\n\n## Retain\n- O(c=0.9) @Peter: prefers concise replies!\n"
          "- O(c=0.7) @Peter: Likes green tea.\n")
    commit_all(ws, "day 2", date="2025-11-26T10:00:00+00:00")
    res, _ = reflect_json(ws)
    assert res["files"] == ["bank/entities/Peter.md", "bank/opinions.md"]

    for rel in res["files"]:
        data = (ws / rel).read_bytes()
        assert b"\n" not in data.replace(b"\r\n", b""), f"{rel}: a line ending in LF alone"
    data = (ws / "bank/entities/Peter.md").read_bytes()
    assert data.startswith(page.encode()) and b"likes tea \xe2\x80\x94 bank/entities/Peter.md#L6\r\n" in data
    # opinions.md: the changed opinion's confidence and updated lines are replaced, nothing else
    numstat = git(ws, "diff", "--numstat", "HEAD~1", "HEAD", "--", "bank/opinions.md").split("\t")
    assert numstat[1] == "2", numstat
    # so the person's lines are still credited to them, not to reflect
    for n in (1, 2, 3, 4, 5, 6):  # title, header, the opinion's heading
        assert _blamed_to(ws, "bank/opinions.md", n) == editor
    for n in (1, 2, 3, 4, 5, 6):
        assert _blamed_to(ws, "bank/entities/Peter.md", n) == person
    blame = run_json(["-C", str(ws), "blame", "bank/entities/Peter.md#L6", "--json"])[0]
    assert person[:10] in json.dumps(blame)
    assert _citations_resolve(ws) >= 6
    _unchanged(ws)


def test_crlf_memory_md_keeps_its_line_endings_when_proposals_are_applied(ws):
    _put(ws, "MEMORY.md", b"\xef\xbb\xbf# MEMORY\r\n\r\nA person's line.\r\n")
    for day in ("2025-11-24", "2025-11-25", "2025-11-26"):
        write(ws, f"memory/{day}.md", f"# {day}\n\n## Retain\n- W @Peter: Works from the Lisbon office.\n")
    commit_all(ws, "days", date="2025-11-26T10:00:00+00:00")
    res, _ = reflect_json(ws, "--apply-proposals")
    assert res["proposals_applied"] and "MEMORY.md" in res["files"]
    data = (ws / "MEMORY.md").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf# MEMORY\r\n\r\nA person's line.\r\n\r\n## Durable")
    assert b"\n" not in data.replace(b"\r\n", b"") and b"Works from the Lisbon office." in data


# ----------------------------------------------------------------------------- invalid UTF-8


def test_a_page_with_invalid_utf8_is_left_alone_with_a_warning(ws):
    page = b"# Peter\n\ncaf\xe9\n\n## Retain\n- W @Peter: likes tea\n"
    _put(ws, "bank/entities/Peter.md", page)
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n## Retain\n- W @Ana: Sings fado with @Peter.\n")
    commit_all(ws, "init", date="2025-11-24T10:00:00+00:00")
    res, err = reflect_json(ws)
    assert "bank/entities/Peter.md:3: invalid UTF-8; reflect leaves this file alone" in err
    assert "save it as UTF-8, then run `zmem reflect --since all`" in err and "Traceback" not in err
    assert (ws / "bank/entities/Peter.md").read_bytes() == page
    assert res["commit"] and res["files"] == ["bank/entities/Ana.md"]  # the rest goes on
    assert "Sings fado with @Peter." in (ws / "bank/entities/Ana.md").read_text()

    # opinions.md too: its bytes stay, and pages still list the opinions it holds
    _put(ws, "bank/opinions.md", b"# Opinions \xff\n\n## Likes fado.\n- entities: @Ana\n- confidence: 0.70\n")
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Retain\n- O(c=0.9) @Ana: Likes fado.\n")
    commit_all(ws, "more", date="2025-11-25T10:00:00+00:00")
    res, err = reflect_json(ws)
    assert "bank/opinions.md:1: invalid UTF-8; reflect leaves this file alone" in err
    assert (ws / "bank/opinions.md").read_bytes().startswith(b"# Opinions \xff\n") and res["opinions"] == []
    assert "- c=0.70: Likes fado. — bank/opinions.md" in (ws / "bank/entities/Ana.md").read_text()

    # saved as UTF-8, `--since all` catches up
    _put(ws, "bank/entities/Peter.md", page.replace(b"\xe9", "é".encode()))
    _put(ws, "bank/opinions.md", b"# Opinions\n\n## Likes fado.\n- entities: @Ana\n- confidence: 0.70\n")
    commit_all(ws, "fixed", date="2025-11-26T10:00:00+00:00")
    res, err = reflect_json(ws, "--since", "all")
    assert "invalid UTF-8" not in err and "bank/entities/Peter.md" in res["files"] and res["opinions"]
    assert _citations_resolve(ws) >= 4


# ----------------------------------------------------------------------------- facts in the files reflect rewrites


def test_opinions_md_facts_are_cited_where_they_stand(ws):
    """The audit's case: bank/opinions.md holds only a Retain section; reflect adds an opinion to it."""
    write(ws, "bank/opinions.md", "## Retain\n- O(c=0.8) @Peter: likes green tea\n")
    commit_all(ws, "init")
    res, _ = reflect_json(ws)
    assert res["files"] == ["bank/entities/Peter.md", "bank/opinions.md"]
    text = (ws / "bank/opinions.md").read_text()
    assert text.startswith("## Retain\n- O(c=0.8) @Peter: likes green tea\n\n## likes green tea\n")
    assert "supports bank/opinions.md#L2 (fact" in text
    assert "likes green tea — bank/opinions.md#L2" in (ws / "bank/entities/Peter.md").read_text()
    assert _citations_resolve(ws) == 3
    _unchanged(ws)


def test_every_citation_reflect_writes_reads_back_its_fact(ws):
    """Facts below a page's block, and below an opinion that gains evidence in bank/opinions.md,
    move when reflect writes: pages (the page's own and other pages), evidence lines, notes and
    trailers cite them where they are once written."""
    write(ws, "bank/entities/Peter.md", "# Peter\n\nA person's note.\n\n<!-- zmem:begin -->\n<!-- zmem:end -->\n\n"
          "## Retain\n- W @Peter: Lives in Lisbon.\n- R @Peter knows @Ana: since 2020\n")
    write(ws, "bank/opinions.md", "# Opinions\n\n## Likes green tea.\n- entities: @Peter\n- confidence: 0.60\n"
          "- evidence: (none yet)\n\n## Sings well.\n- entities: @Ana\n- confidence: 0.80\n- evidence: (none yet)\n\n"
          "## Retain\n- O(c=0.9) @Peter: Likes green tea a lot.\n- W @Peter @Ana: Share a pot every Sunday.\n"
          "- O(c=0.8) @Ana: Sings well.\n")
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n## Retain\n- O(c=0.8) @Peter: likes green tea\n"
          "- W @Peter @Ana: Met at the fado bar (2025-11-24).\n")
    commit_all(ws, "init", date="2025-11-24T10:00:00+00:00")
    res, _ = reflect_json(ws)
    assert set(res["files"]) == {"bank/entities/Ana.md", "bank/entities/Peter.md", "bank/opinions.md"}
    facts = {f["text"]: f["source"] for f in run_json(["-C", str(ws), "facts", "--json"])[0]["facts"]}
    # both files' facts moved down when reflect wrote them
    assert facts["Lives in Lisbon."] != "bank/entities/Peter.md#L9"
    assert facts["Likes green tea a lot."] != "bank/opinions.md#L14"
    peter, ana = (ws / "bank/entities/Peter.md").read_text(), (ws / "bank/entities/Ana.md").read_text()
    assert f"Lives in Lisbon. — {facts['Lives in Lisbon.']}" in peter
    assert facts["Peter knows Ana: since 2020"] in ana and facts["Share a pot every Sunday."] in ana
    opinions = (ws / "bank/opinions.md").read_text()
    assert f"supports {facts['Likes green tea a lot.']} (fact" in opinions
    (o,) = [o for o in res["opinions"] if o["statement"] == "Likes green tea."]
    assert f"supports {facts['Likes green tea a lot.']}" in o["evidence"]
    assert f"Zmem-Evidence: {facts['Lives in Lisbon.']}" in git(ws, "log", "-1", "--format=%B")
    assert _citations_resolve(ws) >= 12
    _unchanged(ws)

    # a later run that grows the blocks again moves them again
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Retain\n- O(c=0.9) @Peter: likes green tea!\n"
          "- W @Peter: Visited Porto.\n- W @Ana: Sings on Fridays.\n")
    commit_all(ws, "day 2", date="2025-11-25T10:00:00+00:00")
    res, _ = reflect_json(ws)
    assert set(res["files"]) == {"bank/entities/Ana.md", "bank/entities/Peter.md", "bank/opinions.md"}
    # "Sings well." gained nothing, but its evidence sits below an opinion that did: only that line is re-cited
    before = facts["Sings well."]
    facts = {f["text"]: f["source"] for f in run_json(["-C", str(ws), "facts", "--json"])[0]["facts"]}
    assert facts["Sings well."] != before
    (o,) = [o for o in res["opinions"] if o["statement"] == "Sings well."]
    assert o["evidence"] == [f"re-cited {before} -> {facts['Sings well.']}"] and o["before"] == o["after"]
    assert "1 opinion re-cited" in git(ws, "log", "-1", "--format=%B")
    assert _citations_resolve(ws) >= 14
    _unchanged(ws)
    again, _ = reflect_json(ws, "--since", "all")
    assert again["files"] == []


def test_opinions_render_keeps_every_line_it_does_not_change():
    from zmem.text import opinions as op_mod
    text = ("\ufeff# Mine\r\n## Likes tea.\r\n- entities: @Ana\r\n- confidence: 0.60\r\n\r\n\r\n"
            "## Likes jazz.\n- entities: @Ana\n- confidence: 0.70\n- note without a newline")
    parsed = op_mod.parse(text)
    assert [o.statement for o in parsed.opinions] == ["Likes tea.", "Likes jazz."]
    assert parsed.render(set(), {0, 1}) == text  # two blank lines, mixed endings, no final newline, the BOM
    parsed.opinions[0].confidence = 0.65
    assert parsed.render(set(), {0}) == text.replace("0.60\r\n", "0.65\r\n")
    parsed.opinions.append(op_mod.Opinion("Likes fado.", ["Ana"], 0.6))
    assert parsed.render(set(), {0}) == text.replace("0.60\r\n", "0.65\r\n") + \
        "\r\n\r\n## Likes fado.\r\n- entities: @Ana\r\n- confidence: 0.60\r\n- evidence: (none yet)\r\n"


def test_readers_of_opinions_md_take_any_bytes_and_count_lines_as_get_does(ws):
    """`zmem opinions`, `zmem entity` and doctor read an opinions.md with a lone CR and invalid
    UTF-8 (exit 0, no traceback), and the line each opinion cites is its heading for `zmem get`."""
    _put(ws, "bank/opinions.md", b"# Opinions\r\nnote\rstill line 2\n\n## Peter likes caf\xe9 tea\n"
                                 b"- confidence: 0.70\n- entities: @Peter\n")
    write(ws, "memory/2025-11-24.md", "## Retain\n- W @Peter: drinks tea\n")
    commit_all(ws, "opinions")
    data, _ = run_json(["-C", str(ws), "opinions", "--json"])
    (op,) = data["opinions"]
    assert op["statement"] == "Peter likes caf\ufffd tea" and op["confidence"] == 0.7
    assert op["source"] == "bank/opinions.md#L4"
    assert get_text(ws, op["source"]).startswith("## Peter likes caf")
    entity, _ = run_json(["-C", str(ws), "entity", "Peter", "--json"])
    assert [o["source"] for o in entity["opinions"]] == ["bank/opinions.md#L4"]
    doctor = run(["-C", str(ws), "doctor"])
    assert "Traceback" not in doctor.output + doctor.stderr and "1 opinion, all readable" in doctor.stdout


def test_a_retain_section_in_opinions_md_is_no_opinion(ws):
    """`## Retain` in bank/opinions.md holds facts, as in any bank/ page: `zmem opinions` does not
    list it as an opinion called "Retain", and reflect's new evidence and opinions go around it."""
    write(ws, "bank/opinions.md", "# Opinions\n\n## Peter likes tea\n- entities: @Peter\n- confidence: 0.70\n"
                                  "- evidence: (none yet)\n\n## Retain\n- O(c=0.8) @Peter: likes green tea\n")
    commit_all(ws, "init")
    listed, _ = run_json(["-C", str(ws), "opinions", "--json"])
    assert [o["statement"] for o in listed["opinions"]] == ["Peter likes tea"]
    reflect_json(ws)
    text = (ws / "bank/opinions.md").read_text()
    assert "## Retain\n- O(c=0.8) @Peter: likes green tea\n" in text
    listed, _ = run_json(["-C", str(ws), "opinions", "--json"])
    assert sorted(o["statement"] for o in listed["opinions"]) == ["Peter likes tea", "likes green tea"]
    assert _citations_resolve(ws) >= 2
    facts, _ = run_json(["-C", str(ws), "facts", "--json"])
    assert [f["text"] for f in facts["facts"] if f["kind"] == "opinion"] == ["likes green tea"]
    _unchanged(ws)
