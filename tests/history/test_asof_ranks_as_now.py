"""`recall --as-of HEAD` lists what `zmem recall` lists: the past is ranked as the present is (words standing
together, both lists completed, similarities centred on the index's centroid, the adaptive fusion and its
floor, named days first), so a difference between two as-of answers is a difference in memory, not in
ranking. Real repositories with several commits, embedded through the loopback server's concept vectors
(helpers.embed_server)."""
from __future__ import annotations

import json

import pytest

from helpers.workspace import commit_all, index_notes, run, write

LETTERS = "bcdfghjklmnpqrstvwxz"
QUERIES = [
    "which log entry says the machine runs the gateway",  # reworded: the vectors decide
    "espresso",  # one keyword
    "espresso gateway",  # words standing apart in the daily logs, together in the hub note
    "what did I note on 2025-11-03",  # a named day: its notes first
]


def word(i: int) -> str:
    return "zo" + LETTERS[i % 20] + LETTERS[i // 20 % 20] + "a"


@pytest.fixture
def past_ws(ws, server):
    """40 log notes (enough windows for a centroid and a null sample) and daily logs, written over three
    commits, one of them editing a note the questions find."""
    notes = {f"bank/log-{i}.md": f"# Log {i}\n\n- Entry log: {word(2 * i)} {word(2 * i + 1)}.\n" for i in range(40)}
    notes["bank/hub.md"] = "# Hub\n\n- Entry log: the gateway.\n"
    index_notes(ws, server, notes)
    for day in range(1, 6):
        write(ws, f"memory/2025-11-0{day}.md", f"# 2025-11-0{day}\n\n- Ana drinks espresso at {word(day)}.\n"
              f"- The gateway log had an entry about {word(day + 9)}.\n\n- Gateway:\n- {word(day + 20)} entry.\n")
    write(ws, "bank/setup.md", "# Setup\n\n- Which box hosts the relay: the machine.\n")
    commit_all(ws)
    write(ws, "bank/hub.md", "# Hub\n\n- Entry log: the gateway, and an espresso.\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index", "--json"]).exit_code == 0
    return ws


def recall(ws, *args) -> dict:
    # four hits: the loopback's concept vectors give most other notes a cosine of exactly 0, and the order
    # of such ties is arbitrary (sqlite-vec's scan now, the history's keys then); and the fifth citation is
    # decided by ~0.02 of keyword score, which history's BM25 statistics (both versions of the edited hub
    # note) shift (docs/history.md, `recall --as-of`)
    res = run(["-C", str(ws), "recall", *args, "-k", "4", "--json", "--explain"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("mode", ["bm25", "hybrid", "vector"])
def test_as_of_head_lists_what_recall_lists(past_ws, mode):
    for query in QUERIES:
        now = recall(past_ws, query, "--mode", mode)
        then = recall(past_ws, query, "--mode", mode, "--as-of", "HEAD")
        assert then["mode"] == now["mode"] == mode, query
        assert [(h["path"], h["start_line"], h["end_line"]) for h in then["results"]] == \
               [(h["path"], h["start_line"], h["end_line"]) for h in now["results"]], (mode, query)
        for a, b in zip(then["results"], now["results"]):
            assert a["citation"].startswith(b["path"] + "@")  # the past's citation names its commit
            # the same vector evidence; keyword scores may differ a little: history's BM25 statistics count
            # every version a note ever had (here the hub note's two)
            assert a["explain"].get("vector_score") == pytest.approx(b["explain"].get("vector_score"), abs=1e-4)
            if mode == "vector":
                assert a["score"] == pytest.approx(b["score"], abs=1e-4)
    if mode == "bm25":  # words standing apart are marked (and weigh) then as now
        apart = [h["explain"].get("words_together") for h in recall(past_ws, QUERIES[2], "--mode", mode)["results"]]
        assert any(apart) and apart == [h["explain"].get("words_together") for h in recall(
            past_ws, QUERIES[2], "--mode", mode, "--as-of", "HEAD")["results"]]
        # no word matches: keyword recall says nothing, then as now
        assert recall(past_ws, "submarine periscope", "--mode", mode, "--as-of", "HEAD")["results"] == []


def test_as_of_an_earlier_commit_ranks_its_own_versions(past_ws):
    # before the hub note named espresso: only the daily logs say it, each citing its own line
    then = recall(past_ws, "espresso", "--mode", "hybrid", "--as-of", "HEAD~1")
    assert then["results"] and all(h["path"].startswith("memory/") for h in then["results"])
    assert all("espresso" in h["snippet"] for h in then["results"])
    now = recall(past_ws, "espresso", "--mode", "hybrid")
    assert "bank/hub.md" in [h["path"] for h in now["results"]]


def test_as_of_vector_recall_is_centred_as_recall_is(past_ws):
    # the hub note is close to every question about log entries; centred, the note the question is about
    # comes first in the past as it does now
    then = recall(past_ws, QUERIES[0], "--mode", "vector", "--as-of", "HEAD")
    assert then["results"][0]["path"] == "bank/setup.md"
    assert then["results"][0]["explain"]["vector_similarity"] != pytest.approx(then["results"][0]["score"])




def test_as_of_looks_deeper_when_candidates_repeat_a_line(ws):
    # the chunks of one very long line share its citation: the first candidates give one hit, so both recalls
    # look further down the list for the other notes rather than return fewer than asked
    write(ws, "bank/long.md", "# Long\n\n" + " ".join(f"alpha {word(i)}" for i in range(6000)) + "\n")
    for i in range(3):
        write(ws, f"bank/short-{i}.md", f"# Short {i}\n\n- alpha and {word(i)} in a short note.\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index", "--json"]).exit_code == 0
    now = recall(ws, "alpha", "--mode", "bm25")
    then = recall(ws, "alpha", "--mode", "bm25", "--as-of", "HEAD")
    assert len(now["results"]) == 4 and "bank/long.md" in [h["path"] for h in now["results"]]  # every note
    assert [(h["path"], h["start_line"]) for h in then["results"]] == \
           [(h["path"], h["start_line"]) for h in now["results"]]


@pytest.fixture
def people_ws(ws, server):
    """An entity page, Retain facts about Peter over several days, and notes naming him; then a commit that
    adds a fact (he moved again)."""
    notes = {"bank/entities/Peter.md": "# Peter\n\nThe human I work for, based in Lisbon.\n\n- Calls in the morning.\n"}
    for day in range(1, 8):
        notes[f"memory/2025-09-0{day}.md"] = (
            f"# 2025-09-0{day}\n\n## Notes\n\n- Peter asked about the {word(day)} report.\n- Lunch with Ana.\n"
            + ("\n## Retain\n\n- W @Peter: Moved to Porto.\n- O(c=0.7) @Peter: Prefers calls in the morning.\n"
               if day == 4 else
               f"\n## Retain\n\n- O(c=0.8) @Peter: Likes the {word(day)} summary.\n" if day % 2 else ""))
    index_notes(ws, server, notes)
    write(ws, "memory/2025-09-09.md", "# 2025-09-09\n\n## Retain\n\n- W @Peter: Moved to Madrid.\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index", "--json"]).exit_code == 0
    return ws


@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_a_named_entity_comes_first_then_as_now(people_ws, mode):
    for query in ("Peter", "where did Peter move", "Peter calls in the morning"):
        now = recall(people_ws, query, "--mode", mode)
        then = recall(people_ws, query, "--mode", mode, "--as-of", "HEAD")
        assert [(h["path"], h["start_line"], h["end_line"]) for h in then["results"]] == \
               [(h["path"], h["start_line"], h["end_line"]) for h in now["results"]], (mode, query)
        assert [h["explain"]["entity"] for h in then["results"]] == [h["explain"]["entity"] for h in now["results"]]
    hits = recall(people_ws, "Peter", "--mode", mode, "--as-of", "HEAD")["results"]
    assert hits[0]["path"] == "bank/entities/Peter.md"  # the page, then his facts
    assert all("@Peter" in h["snippet"] for h in hits[1:])
    # before the last commit he had moved to Porto only: the fact that says so leads
    moved = recall(people_ws, "where did Peter move", "--mode", mode, "--as-of", "HEAD~1")["results"]
    assert "Moved to Porto" in moved[0]["snippet"] and moved[0]["citation"].startswith("memory/2025-09-04.md@")
    assert not any("Madrid" in h["snippet"] for h in moved)
    assert "Madrid" in recall(people_ws, "where did Peter move", "--mode", mode)["results"][0]["snippet"]
