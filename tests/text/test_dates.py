"""Dates and spans users type (`--since 3d`, `--as-of 2025-07-10`, `diff 99999999d`): out of range is an
error naming what was typed, with a hint; the last day a date can name is memory as it stands."""
from __future__ import annotations

from helpers.workspace import commit_all, recall_json, run, write


def test_dates_out_of_range_are_clear_errors(ws):
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- W @Peter lives in Lisbon.\n")
    commit_all(ws)
    for args in (["recall", "Mac", "--since", "3000y"], ["recall", "Mac", "--until", "9999999w"],
                 ["recall", "Mac", "--as-of", "99999999d"], ["log", "@Peter", "--since", "99999999d"],
                 ["diff", "99999999d", "HEAD"], ["reflect", "--since", "99999999d", "--dry-run"]):
        res = run(["-C", str(ws), *args])
        span = next(a for a in args if a[0].isdigit())
        assert res.exit_code == 1 and span in res.stderr and "hint:" in res.stderr, (args, res.output)
    # the last day a date can name is after every commit: memory as it stands
    assert recall_json(ws, "Mac Studio", "--as-of", "9999-12-31")["results"]
    res = run(["-C", str(ws), "diff", "9999-12-31", "HEAD"])
    assert res.exit_code == 0, res.output
