"""What the everyday reading commands load as fresh processes (issue 14: each <= 200 ms at 10k files):
no git library, no table library (zmem prints its tables itself: cli/table.py), nothing that reads
package metadata, no fuzzy matcher when no two entity names are alike. Facts, not timings."""
from __future__ import annotations

import pytest

from helpers.fresh import fresh
from helpers.workspace import commit_all, run, write

NOT_NEEDED = ("pygit2", "zmem.git.repo", "tabulate", "wcwidth", "importlib.metadata", "rapidfuzz", "numpy")


def loaded(report: dict) -> list[str]:
    return [m for m in report["modules"] if m in NOT_NEEDED or m.split(".")[0] in NOT_NEEDED]


@pytest.mark.slow
def test_facts_entity_log_diff_status_load_only_what_they_need(ws):
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- O(c=0.8) @Peter: Prefers short answers.\n"
          "- W @Ana: Ana moved to Porto.\n")
    commit_all(ws, "facts")
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    for args in (["facts"], ["facts", "--entity", "Peter", "--json"], ["entity", "Peter"], ["log", "@Peter"],
                 ["diff", "HEAD~1", "HEAD", "--entity", "Peter"], ["status"]):
        assert run(["-C", str(ws), *args]).exit_code == 0  # once before: `log` reads the history in first
        report, proc = fresh("-C", str(ws), *args)
        assert report["code"] in (0, None), (args, proc.stderr)
        assert proc.stdout, args
        assert loaded(report) == [], args
