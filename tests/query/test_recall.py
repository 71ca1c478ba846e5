"""Recall's inputs as users write them, with the real CLI on real git repositories: `--path` as plain
directories, files and globs, date ranges, queries no parser expects, lines longer than a snippet,
and files it cannot search named in every answer."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.workspace import commit_all, recall_json, run, write


def test_every_recall_names_the_files_it_cannot_search(ws):
    toml = (ws / "zmem.toml").read_text(encoding="utf-8")
    (ws / "zmem.toml").write_text(toml.replace("# max_file_mb = 32", "max_file_mb = 0.05"), encoding="utf-8")
    write(ws, "memory/2025-01-01.md", "- banana77 " * 10000)
    commit_all(ws, "big")
    first = recall_json(ws, "banana77")
    second = recall_json(ws, "banana77")  # nothing changed: the catch-up has nothing to say this time
    for out in (first, second):
        assert out["results"] == []
        assert any("memory/2025-01-01.md" in w and "max_file_mb" in w for w in out["warnings"]), out["warnings"]


def test_path_filter_takes_plain_directories_and_files(ws):
    write(ws, "bank/people/ana.md", "# Ana\n\n- zebra1 keeper\n")
    write(ws, "memory/2025-03-01.md", "# d\n\n- zebra1 seen in the park\n")
    commit_all(ws, "paths")
    for path, expected in [("memory/", {"memory/2025-03-01.md"}), ("memory", {"memory/2025-03-01.md"}),
                           ("bank", {"bank/people/ana.md"}), ("bank/people/", {"bank/people/ana.md"}),
                           ("./bank/people/ana.md", {"bank/people/ana.md"}), ("bank/**", {"bank/people/ana.md"}),
                           ("memory/2025-*", {"memory/2025-03-01.md"})]:
        got = {r["path"] for r in recall_json(ws, "zebra1", "--path", path)["results"]}
        assert got == expected, path


def test_an_empty_date_range_is_an_error(ws):
    res = run(["-C", str(ws), "recall", "gateway", "--since", "2025-12-01", "--until", "2025-11-01"])
    assert res.exit_code == 1 and "since 2025-12-01 is after until 2025-11-01" in res.stderr and "hint:" in res.stderr


def test_one_very_long_line_does_not_crowd_out_other_hits(ws):
    """A 5,000-word line is cut into many chunks that share one citation; recall still returns k
    distinct hits, the other matching notes included."""
    words = " ".join(f"photo backup server word{i}" for i in range(1250))
    write(ws, "memory/2025-11-20.md", "# 2025-11-20\n\n- The photo backup server is the old NAS.\n")
    write(ws, "memory/2025-11-21.md", f"# 2025-11-21\n\n{words}\n")
    write(ws, "memory/2025-11-22.md", "# 2025-11-22\n\n- A server for photos: backup nightly.\n")
    commit_all(ws)
    hits = recall_json(ws, "photo backup server", "--k", "3")["results"]
    assert len(hits) == 3 and len({h["citation"] for h in hits}) == 3
    assert {"memory/2025-11-20.md", "memory/2025-11-22.md"} <= {h["path"] for h in hits}


def test_a_line_longer_than_a_snippet_is_shown_around_the_query_word(ws):
    line = " ".join(f"word{i}" for i in range(3000))
    write(ws, "memory/2025-11-23.md", f"# 2025-11-23\n\n{line}\n")
    commit_all(ws)
    hit = recall_json(ws, "word1999")["results"][0]
    assert hit["start_line"] == hit["end_line"] == 3 and len(hit["snippet"]) <= 700
    assert "word1999" in hit["snippet"] and hit["snippet"].startswith("…") and hit["snippet"].endswith("…")
    whole = run(["-C", str(ws), "get", hit["citation"]]).stdout
    assert hit["snippet"].strip("…") in whole  # the cited line holds what the snippet shows


HOSTILE = ['"', '"unbalanced', "(((", "a AND b OR NOT c", "NEAR(a b)", "*", "-", "title:foo", "^x", "🙂🙃",
           "!!!", "a" * 5000, " ".join(["word"] * 1000), "'; DROP TABLE chunks; --", "col:val AND (x", "\\", "\x00"]


@pytest.mark.slow
def test_hostile_queries_never_raise(ws):
    for q in HOSTILE:
        res = run(["-C", str(ws), "recall", q, "--json"])
        assert res.exit_code == 0, (q, res.output)
        assert isinstance(json.loads(res.stdout)["results"], list)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=200))
def test_any_text_is_a_safe_query(ws, query):
    from zmem.index.catchup import open_index
    from zmem.query.search import recall
    from zmem.workspace.core import find_workspace
    if not query.strip():
        return
    conn = open_index(find_workspace(ws))
    try:
        assert isinstance(recall(conn, query, k=3).results, list)
    finally:
        conn.close()
