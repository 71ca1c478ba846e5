"""History across the merges `zmem sync` makes, on real clones of a real bare hub: blame and a
file's log follow every parent (who wrote a line, in which commit); --as-of recall, `log @Entity`
and `diff` follow the first-parent line, which sync keeps as the hub's history (the upstream side
of each merge is its first parent), so every clone gives the same answers."""
from __future__ import annotations

import json

import pytest

from helpers.workspace import git, write
from helpers.hub import make_hub, sync, zmem


def _at(monkeypatch, day: str) -> None:
    for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(var, f"{day}T12:00:00+00:00")


def _json(root, *args) -> dict:
    return json.loads(zmem("-C", str(root), *args, "--json").stdout)


def _hits(root, query: str, day: str) -> list[str]:
    return [r["citation"].split("@")[0] for r in _json(root, "recall", query, "--as-of", day)["results"]]


@pytest.mark.slow
def test_blame_log_diff_and_as_of_are_right_on_merged_history_and_the_same_on_every_clone(tmp_path, monkeypatch):
    _at(monkeypatch, "2025-01-01")
    a, b = make_hub(tmp_path, 2)
    _at(monkeypatch, "2025-01-10")
    write(a, "memory/2025-01-10.md", "# 2025-01-10\n\n## Retain\n- W @Peter: Alpha lives in Lisbon.\n")
    sync(a)  # on the hub on the 10th
    _at(monkeypatch, "2025-01-12")
    write(b, "memory/2025-01-12.md", "# 2025-01-12\n\n## Retain\n- W @Peter: Beta plays chess.\n")
    git(b, "add", "-A")
    git(b, "commit", "-q", "-m", "b writes beta offline")
    beta_commit = git(b, "rev-parse", "HEAD")
    zmem("-C", str(b), "index", "--history")  # on before the merge: the merge moves b's commit off its line
    _at(monkeypatch, "2025-01-15")
    proc = zmem("-C", str(b), "sync", "--json")
    assert json.loads(proc.stdout)["merge"] == "merge" and "HEAD moved off" not in proc.stderr
    merge = git(b, "rev-parse", "HEAD")
    alpha_commit = git(a, "rev-parse", "HEAD")
    assert git(b, "rev-parse", "HEAD^1") == alpha_commit and git(b, "rev-parse", "HEAD^2") == beta_commit
    _at(monkeypatch, "2025-01-16")
    assert sync(a)["merge"] == "fast-forward"
    answers = []
    for root in (a, b):
        # blame and a file's log: the commit that wrote the line, whoever merged it
        line = _json(root, "blame", "memory/2025-01-12.md:4")["ranges"][0]["lines"][0]
        assert (line["commit"], line["summary"], line["date"][:10]) == (beta_commit, "b writes beta offline", "2025-01-12")
        line = _json(root, "blame", "memory/2025-01-10.md:4")["ranges"][0]["lines"][0]
        assert (line["commit"], line["date"][:10]) == (alpha_commit, "2025-01-10")
        events = _json(root, "log", "memory/2025-01-12.md")["events"]
        assert [(e["commit"], e["date"][:10]) for e in events] == [(beta_commit, "2025-01-12")]
        # as-of: what the hub's line held that day; beta reached it with the merge on the 15th
        assert _hits(root, "Alpha", "2025-01-11") == ["memory/2025-01-10.md"]
        assert _hits(root, "Beta", "2025-01-13") == []
        assert _hits(root, "Beta", "2025-01-15") == ["memory/2025-01-12.md"]
        entity = _json(root, "log", "@Peter")["events"]
        added = {e["text"]: (e["commit"], e["date"][:10]) for e in entity if e["event"] == "added"}
        assert added == {"Alpha lives in Lisbon.": (alpha_commit, "2025-01-10"),
                         "Beta plays chess.": (merge, "2025-01-15")}
        diff = _json(root, "diff", "2025-01-11", "2025-01-15")
        assert [f["text"] for f in diff["facts"]["added"]] == ["Beta plays chess."] and not diff["facts"]["retracted"]
        assert (diff["from"]["commit"], diff["to"]["commit"]) == (alpha_commit, merge)
        answers.append((entity, diff))
    assert answers[0] == answers[1]  # the same history on both clones
    assert not git(a, "status", "--porcelain") and not git(b, "status", "--porcelain")
