"""Defects an audit of the history and structured-memory commands found, each reproduced with
real git repositories and the real CLI: local days in --as-of and diff, diff pairing across files,
`log OLD_PATH` after `git mv`, entity names with combining marks, `@[Multi Word]` arguments,
`path:3-5` ranges, warnings in JSON, and citation format."""
from __future__ import annotations

import json
import unicodedata

import pytest

from helpers.workspace import commit_all, git, run, write, zmem_proc

RETAIN = "# {day}\n\n## Retain\n\n{facts}\n"


def _json(args, env=None):
    if env:  # a time zone must reach a fresh process: time.tzset() would leak into other tests
        proc = zmem_proc(*args, env=env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)
    res = run(args)
    assert res.exit_code == 0, res.output + res.stderr
    return json.loads(res.stdout)


@pytest.mark.slow
def test_as_of_and_diff_days_are_local_days_like_git(ws):
    write(ws, "memory/2025-07-09.md", "# d\n\n- morning note\n")
    first = commit_all(ws, "morning", date="2025-07-09T10:00:00-07:00")
    write(ws, "memory/2025-07-10.md", RETAIN.format(day="2025-07-10", facts="- W @Peter: Evening note."))
    evening = commit_all(ws, "evening", date="2025-07-10T20:00:00-07:00")  # 03:00 UTC on the 11th
    la = {"TZ": "America/Los_Angeles"}
    got = _json(["-C", str(ws), "recall", "Evening", "--as-of", "2025-07-10", "--json"], env=la)
    assert got["as_of"]["commit"] == evening and got["results"][0]["path"] == "memory/2025-07-10.md"
    d = _json(["-C", str(ws), "diff", "2025-07-09", "2025-07-10", "--json"], env=la)
    assert (d["from"]["commit"], d["to"]["commit"]) == (first, evening)
    assert [f["text"] for f in d["facts"]["added"]] == ["Evening note."]
    assert d["to"]["date"].startswith("2025-07-10T20:00:00-07:00")  # shown in local time, as git log --date=local
    # in UTC the same evening is the next day
    utc = _json(["-C", str(ws), "recall", "Evening", "--as-of", "2025-07-10", "--json"], env={"TZ": "UTC"})
    assert utc["as_of"]["commit"] == first and utc["results"] == []


def test_diff_does_not_pair_a_retraction_with_an_unrelated_fact_in_another_file(ws):
    write(ws, "memory/2025-05-01.md", RETAIN.format(day="2025-05-01",
                                                    facts="- W @Peter: Lives in Lisbon and works on the warelay project."))
    base = commit_all(ws, "lisbon")
    write(ws, "memory/2025-05-01.md", RETAIN.format(day="2025-05-01", facts="- W @Peter: Works remotely."))
    commit_all(ws, "retract")
    write(ws, "memory/2025-05-09.md", RETAIN.format(day="2025-05-09", facts="- W @Peter: Likes Lisbon"))
    commit_all(ws, "likes")
    f = _json(["-C", str(ws), "diff", base, "--json"])["facts"]
    assert [x["text"] for x in f["retracted"]] == ["Lives in Lisbon and works on the warelay project."]
    assert sorted(x["text"] for x in f["added"]) == ["Likes Lisbon", "Works remotely."]
    assert f["changed"] == []
    # an edit in place is still a change
    write(ws, "memory/2025-05-09.md", RETAIN.format(day="2025-05-09", facts="- W @Peter: Likes Lisbon a lot"))
    last = commit_all(ws, "edit")
    f = _json(["-C", str(ws), "diff", f"{last}~1", last, "--json"])["facts"]
    assert [(x["from"]["text"], x["to"]["text"]) for x in f["changed"]] == [("Likes Lisbon", "Likes Lisbon a lot")]


def test_log_of_a_moved_file_says_where_its_facts_went(ws):
    facts = "- W @Lucía: Vai a Paris em março.\n- W @Lucía: Gosta de chá."
    write(ws, "memory/2026-11-01.md", RETAIN.format(day="2026-11-01", facts=facts))
    commit_all(ws, "add")
    (ws / "memory/trips").mkdir()
    git(ws, "mv", "memory/2026-11-01.md", "memory/trips/2026-11-01-trips.md")
    move = commit_all(ws, "move")
    events = _json(["-C", str(ws), "log", "memory/2026-11-01.md", "--json"])["events"]
    assert events[0]["commit"] == move
    fx = events[0]["facts"]
    assert fx["retracted"] == []
    assert [(m["text"], m["to_path"], m["to_line"]) for m in fx["moved"]] == [
        ("Vai a Paris em março.", "memory/trips/2026-11-01-trips.md", 5),
        ("Gosta de chá.", "memory/trips/2026-11-01-trips.md", 6)]
    text = run(["-C", str(ws), "log", "memory/2026-11-01.md"]).stdout
    assert "moved to memory/trips/2026-11-01-trips.md#L5" in text and "(retracted)" not in text


def test_entity_names_keep_their_combining_marks(ws):
    nfd = unicodedata.normalize("NFD", "José")
    write(ws, "memory/2025-03-01.md", RETAIN.format(day="2025-03-01", facts=(
        "- W @राहुल: Lives in Pune.\n"
        f"- W @{nfd}: Plays the guitar.\n"
        "- W @José: Lives in Madrid.")))
    commit_all(ws, "facts")
    rows = _json(["-C", str(ws), "facts", "--json"])["facts"]
    assert {tuple(r["entities"]) for r in rows} >= {("राहुल",)}
    ent = _json(["-C", str(ws), "entity", "राहुल", "--json"])
    assert [f["text"] for f in ent["facts"]] == ["Lives in Pune."]
    jose = _json(["-C", str(ws), "entity", "José", "--json"])  # decomposed and composed: one entity
    assert sorted(f["text"] for f in jose["facts"]) == ["Lives in Madrid.", "Plays the guitar."]


def test_bracketed_names_work_as_arguments_and_opinions_names_unknown_entities(ws):
    write(ws, "memory/2025-03-02.md", RETAIN.format(day="2025-03-02", facts=(
        "- O(c=0.8) @[João Silva]: Prefers email to calls.\n- W @[João Silva]: Lives in Porto.")))
    commit_all(ws, "facts")
    ent = _json(["-C", str(ws), "entity", "@[João Silva]", "--json"])
    assert ent["entity"]["name"] == "João Silva"
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    ops = _json(["-C", str(ws), "opinions", "--entity", "@[João Silva]", "--json"])["opinions"]
    assert [o["statement"] for o in ops] == ["Prefers email to calls."]
    res = run(["-C", str(ws), "opinions", "--entity", "Nobody"])
    assert res.exit_code == 1 and "no entity named 'Nobody'" in res.stderr and "hint:" in res.stderr


def test_colon_ranges_are_ranges_and_bad_ones_are_errors(ws):
    lines = _json(["-C", str(ws), "get", "memory/2025-11-24.md:3-5", "--json"])
    assert (lines["from"], lines["end_line"]) == (3, 5)
    blamed = _json(["-C", str(ws), "blame", "memory/2025-11-24.md:3-5", "--json"])["ranges"]
    assert [(r["path"], r["start_line"], r["end_line"]) for r in blamed] == [("memory/2025-11-24.md", 3, 5)]
    for bad in ("memory/2025-11-24.md:3-x", "memory/2025-11-24.md:5-3"):
        res = run(["-C", str(ws), "blame", bad])
        assert res.exit_code == 1 and "bad line range" in res.stderr and "hint:" in res.stderr
    res = run(["-C", str(ws), "blame", "memory/2025-11-24.md#L99"])
    assert res.exit_code == 1 and "hint: cite a line from 1 to 6" in res.stderr and "--from" not in res.stderr


def test_diff_and_log_json_carry_the_shallow_clone_note(ws, tmp_path):
    for i in range(3):
        write(ws, f"memory/2025-01-0{i + 1}.md", RETAIN.format(day=f"2025-01-0{i + 1}", facts=f"- W @Peter: Note {i}."))
        commit_all(ws, f"c{i}")
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{ws}", str(clone))
    d = _json(["-C", str(clone), "diff", "HEAD~1", "--json"])
    assert any("shallow clone" in w for w in d["warnings"])
    log = _json(["-C", str(clone), "log", "@Peter", "--json"])
    assert any("shallow clone" in w for w in log["warnings"])


def test_multi_line_fact_sources_use_the_citation_format(ws):
    write(ws, "memory/2025-04-01.md", RETAIN.format(day="2025-04-01", facts=(
        "- W @Ana: Moved to Porto in March\n  and started a new job there.")))
    commit_all(ws, "facts")
    row = _json(["-C", str(ws), "facts", "--json"])["facts"][0]
    assert row["source"] == "memory/2025-04-01.md#L5-L6"
    back = _json(["-C", str(ws), "get", row["source"], "--json"])
    assert "Moved to Porto" in back["text"] and "new job" in back["text"]


def test_blame_follows_retracted_evidence_to_where_the_fact_last_was(ws):
    write(ws, "memory/2025-11-25.md", RETAIN.format(day="2025-11-25", facts="- O(c=0.9) @Peter: Prefers tea."))
    commit_all(ws, "opinion")
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    write(ws, "memory/2025-11-25.md", RETAIN.format(day="2025-11-25", facts="- W @Peter: Drinks water."))
    commit_all(ws, "retract")
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    lines = (ws / "bank/opinions.md").read_text(encoding="utf-8").splitlines()
    n = next(i for i, line in enumerate(lines, 1) if "retracted" in line)
    blamed = _json(["-C", str(ws), "blame", f"bank/opinions.md#L{n}", "--json"])["ranges"][0]
    [evidence] = blamed["evidence"]
    assert evidence["path"] == "memory/2025-11-25.md" and evidence["rev"]
    assert "Prefers tea." in evidence["lines"][0]["text"]  # the line as it was, not today's line 5


def test_reflect_says_evidence_was_re_cited_when_only_a_line_moved(ws):
    write(ws, "memory/2025-11-26.md", RETAIN.format(day="2025-11-26", facts="- O(c=0.8) @Peter: Prefers tea."))
    commit_all(ws, "opinion")
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    write(ws, "memory/2025-11-26.md", "# 2025-11-26\n\n- a note above\n\n## Retain\n\n- O(c=0.8) @Peter: Prefers tea.\n")
    commit_all(ws, "shift")
    res = run(["-C", str(ws), "reflect"])
    assert res.exit_code == 0 and "opinion c 0.80, evidence re-cited: Prefers tea." in res.stdout, res.stdout


def test_blame_json_carries_the_shallow_clone_note(ws, tmp_path):
    for i in range(3):
        write(ws, f"memory/2025-02-0{i + 1}.md", f"# d\n\n- note {i}\n")
        commit_all(ws, f"c{i}")
    clone = tmp_path / "shallow-blame"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{ws}", str(clone))
    out = _json(["-C", str(clone), "blame", "memory/2025-02-01.md#L3", "--json"])
    assert any("shallow clone" in w for w in out["warnings"])


def test_diff_from_a_date_before_the_history_is_everything_added(ws):
    write(ws, "memory/2025-11-25.md", RETAIN.format(day="2025-11-25", facts="- W @Peter: Lives in Lisbon."))
    commit_all(ws, "fact", date="2025-11-25T10:00:00+00:00")
    d = _json(["-C", str(ws), "diff", "2020-01-01", "HEAD", "--json"])
    assert d["from"] == {"commit": None, "date": None}
    assert [f["text"] for f in d["facts"]["added"]] == ["Lives in Lisbon."] and d["facts"]["retracted"] == []
    text = run(["-C", str(ws), "diff", "2020-01-01"]).stdout
    assert text.startswith("from before the first commit (memory was empty)") and "+ world: Lives in Lisbon." in text
