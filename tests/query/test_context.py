"""Session-start context (`zmem context`, Memory.context()): today's and yesterday's logs, MEMORY.md
in the private scope only, recent Retain facts, within a character budget, newest first when cut,
each part under a citation `zmem get` reads back exactly."""
from __future__ import annotations

import datetime as dt
import json

from helpers.workspace import commit_all, get_text, run, run_json, write

TODAY = dt.date.today()


def day(n: int) -> str:
    return (TODAY - dt.timedelta(days=n)).isoformat()


def log(n: int) -> str:
    return f"memory/{day(n)}.md"


def context(ws, *args) -> dict:
    out, _ = run_json(["-C", str(ws), "context", *args, "--json"])
    return out


def test_private_context_has_todays_and_yesterdays_logs_and_memory_md_each_cited_exactly(ws):
    write(ws, "MEMORY.md", "# Memory\n\n- Peter lives in Lisbon.\n")
    write(ws, log(0), f"# {day(0)}\n\n## Notes\n\n- Shipped the context command.\n")
    write(ws, log(1), f"# {day(1)}\n\n## Notes\n\n- Reviewed the plugin.\n")
    commit_all(ws)
    out = context(ws)
    assert [(s["kind"], s["path"]) for s in out["sections"]] == [("today", log(0)), ("yesterday", log(1)),
                                                                  ("memory", "MEMORY.md")]
    assert out["truncated"] is False and out["omitted"] == [] and out["scope"] == "private"
    assert out["chars"] == len(out["text"]) <= out["budget"] == 8000
    for s in out["sections"]:
        cited = get_text(ws, s["citation"]).rstrip("\n")
        assert f"{s['citation']}" in out["text"] and cited in out["text"]
        assert s["chars"] == len(cited)
    assert out["text"].index("Shipped") < out["text"].index("Reviewed") < out["text"].index("Lisbon")
    # the plain output is the same text
    res = run(["-C", str(ws), "context"])
    assert res.exit_code == 0 and res.stdout == out["text"] + "\n"


def test_group_scope_leaves_out_memory_md_and_private_paths(ws):
    write(ws, "MEMORY.md", "# Memory\n\n- The alarm code is zebra-4411.\n")
    write(ws, "zmem.toml", '[scopes]\nprivate = ["memory/' + day(1) + '.md"]\n')
    run(["-C", str(ws), "trust"])
    write(ws, log(0), "- A public note about the zoo.\n")
    write(ws, log(1), "- A private note about the vet.\n")
    out = context(ws, "--scope", "group")
    assert [s["path"] for s in out["sections"]] == [log(0)]
    assert "zebra-4411" not in out["text"] and "vet" not in out["text"] and "zoo" in out["text"]
    assert out["omitted"] == []  # left out by the scope, not by the budget
    assert {s["path"] for s in context(ws)["sections"]} == {log(0), log(1), "MEMORY.md"}  # private: all of them


def test_a_budget_keeps_the_newest_lines_of_a_log_and_says_what_was_cut(ws):
    write(ws, log(0), "".join(f"- note {i:03d} about the day\n" for i in range(1, 201)))
    write(ws, "MEMORY.md", "# Memory\n\n- Long-term: Peter prefers tea.\n")
    out = context(ws, "--budget", "1000")
    assert len(out["text"]) <= 1000 and out["truncated"] is True
    (today, memory) = out["sections"]
    assert today["kind"] == "today" and today["truncated"] and today["end_line"] == 200 and today["start_line"] > 1
    assert "note 200" in out["text"] and "note 001" not in out["text"]
    assert f"lines 1-{today['start_line'] - 1} left out" in out["text"]
    assert get_text(ws, today["citation"]).rstrip("\n") in out["text"]
    assert memory["kind"] == "memory" and "Peter prefers tea" in out["text"]  # the log took half, not all


def test_recent_retain_facts_come_newest_first_and_are_not_repeated_from_a_shown_log(ws):
    write(ws, log(0), "## Retain\n\n- W @Peter: Is in Porto today.\n")
    write(ws, log(3), "## Retain\n\n- B @Ana: Booked the flights.\n- O(c=0.8) @Ana: Likes window seats.\n")
    write(ws, log(5), "## Retain\n\n- W @Peter: Bought a bike.\n")
    write(ws, log(9), "## Retain\n\n- W @Peter: Something from long ago.\n")
    out = context(ws)
    facts = [s for s in out["sections"] if s["kind"] == "fact"]
    assert [(f["path"], f["start_line"]) for f in facts] == [(log(3), 4), (log(3), 3), (log(5), 3)]
    assert facts[0]["fact"] == {"kind": "opinion", "entities": ["Ana"], "confidence": 0.8}
    assert out["text"].count("Is in Porto") == 1  # in today's log, not again as a fact
    assert "long ago" not in out["text"]
    assert f"{log(3)}#L4-L4: - O(c=0.8) @Ana: Likes window seats." in out["text"]
    # a budget for the log and one fact: the older facts are left out, and named
    small = context(ws, "--budget", str(len(out["text"]) - 40))
    kept = [s["citation"] for s in small["sections"] if s["kind"] == "fact"]
    assert kept == [f["citation"] for f in facts[:len(kept)]] and len(kept) < 3
    assert [o["citation"] for o in small["omitted"]] == [f["citation"] for f in facts[len(kept):]]


def test_a_budget_smaller_than_anything_gives_empty_text_and_every_part_omitted(ws):
    write(ws, log(0), "- a note\n")
    out = context(ws, "--budget", "10")
    assert out["text"] == "" and out["sections"] == [] and out["truncated"] is True
    assert [o["path"] for o in out["omitted"]] == [log(0), "MEMORY.md"]  # (zmem init's MEMORY.md)
    res = run(["-C", str(ws), "context", "--budget", "10"])  # a person is told why there is nothing
    assert res.exit_code == 0 and res.stdout == ""
    assert f"warning: nothing fit in --budget 10: 2 parts left out ({log(0)}#L1-L1, …)" in res.stderr


def test_a_workspace_with_nothing_to_read_gives_no_context_and_exit_0(ws):
    (ws / "MEMORY.md").unlink()  # zmem init's; the fixture's logs are older than a week
    out = context(ws)
    assert out["text"] == "" and out["sections"] == [] and out["truncated"] is False
    res = run(["-C", str(ws), "context"])
    assert res.exit_code == 0 and res.stdout == ""


def test_a_git_ignored_log_is_left_out_as_get_refuses_it(ws):
    write(ws, log(0), "- an ignored scratch note\n")
    write(ws, ".gitignore", f"{log(0)}\n")
    write(ws, log(1), "- yesterday's note\n")
    out = context(ws)
    assert [s["path"] for s in out["sections"]] == [log(1), "MEMORY.md"]


def test_a_budget_below_one_is_a_usage_error_with_a_hint(ws):
    res = run(["-C", str(ws), "context", "--budget", "0"])
    assert res.exit_code == 2 and "--budget" in res.stderr and "hint:" in res.stderr


def test_memory_context_of_the_library_matches_the_command(ws):
    import zmem
    write(ws, log(0), "- the library and the command agree\n")
    with zmem.Memory.open(ws) as mem:
        lib = mem.context(budget=500).to_json()
    assert lib == context(ws, "--budget", "500")
    assert json.loads(json.dumps(lib)) == lib


def test_a_fact_is_shown_whole_or_not_at_all(ws):
    write(ws, log(2), "## Retain\n\n- W @Peter: First line of a long fact\n  that goes on over a second line\n"
          "  and a third one about herons.\n")
    full = context(ws)
    (fact,) = [s for s in full["sections"] if s["kind"] == "fact"]
    assert (fact["start_line"], fact["end_line"]) == (3, 5)
    cut = context(ws, "--budget", str(len(full["text"]) - 10))
    assert [s for s in cut["sections"] if s["kind"] == "fact"] == []
    assert [o["citation"] for o in cut["omitted"] if o["kind"] == "fact"] == [fact["citation"]]
    assert "herons" not in cut["text"] and "First line of a long fact" not in cut["text"]


def test_a_log_that_is_not_utf8_is_shown_with_u_fffd_and_the_warning_says_shown_not_indexed(ws):
    (ws / "memory").mkdir(exist_ok=True)
    (ws / log(0)).write_bytes(b"- caf\xe9 with Peter\n")
    out, _ = run_json(["-C", str(ws), "context", "--json"])
    assert "- caf\ufffd with Peter" in out["text"]
    assert out["warnings"] == [f"{log(0)}:1: invalid UTF-8; undecodable bytes shown as U+FFFD"]
    assert get_text(ws, out["sections"][0]["citation"]) == "- caf\ufffd with Peter\n"


def test_a_symlinked_memory_md_is_left_out_with_a_warning_saying_why(ws, tmp_path):
    real = tmp_path / "dotfiles-MEMORY.md"
    real.write_text("# Memory\n\n- kept in my dotfiles\n")
    (ws / "MEMORY.md").unlink()
    (ws / "MEMORY.md").symlink_to(real)
    write(ws, log(0), "- a note\n")
    out = context(ws)
    assert "kept in my dotfiles" not in out["text"] and [s["path"] for s in out["sections"]] == [log(0)]
    assert out["warnings"] == ["MEMORY.md: left out: refusing to read through a symlink: MEMORY.md"]
    assert context(ws, "--scope", "group")["warnings"] == []  # group reads no MEMORY.md: nothing to warn of
