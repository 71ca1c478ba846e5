"""More bad input: whatever a user can type or leave in a file gets a clear error (exit 1 with a
hint, or 2 for bad arguments) or a warning naming file and line, never an internal error (exit 3),
and the rest still works."""
from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import recall_json, run


def _sessions_config(extra: str = "") -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    sessions = Path(os.environ["HOME"]) / ".openclaw/agents/main/sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[sessions]\nenabled = true\ndir = "~/.openclaw/agents/*/sessions"\n{extra}')
    return sessions


def _msg(role, text, **extra):
    return json.dumps({"type": "message", **extra,
                       "message": {"role": role, "content": [{"type": "text", "text": text}]}}) + "\n"


def test_a_deeply_nested_transcript_line_is_skipped_with_a_warning_and_the_rest_is_indexed(ws):
    sessions = _sessions_config()
    (sessions / "x.jsonl").write_text(_msg("user", "the okapi sleeps in the barn") + "[" * 100000 + "\n"
                                      + _msg("assistant", "noted about the okapi") + '{"a": ' * 50000 + "\n")
    # a first line longer than what the pending check reads ahead still makes the file due
    (sessions / "y.jsonl").write_text("[" * 200000 + "\n" + _msg("user", "an okapi in the second file"))
    res = run(["-C", str(ws), "index", "--sessions", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    assert "internal error" not in res.stderr
    warnings = json.loads(res.stdout)["warnings"]
    where = "~/.openclaw/agents/main/sessions/"
    assert {where + "x.jsonl:2: skipped: JSON nested too deeply", where + "x.jsonl:4: skipped: JSON nested too deeply",
            where + "y.jsonl:1: skipped: JSON nested too deeply"} <= set(warnings)
    got = recall_json(ws, "okapi", "--source", "sessions")
    assert {(h["path"][len(where):], h["start_line"]) for h in got["results"]} == {
        ("x.jsonl", 1), ("x.jsonl", 3), ("y.jsonl", 2)}
    assert not any("being indexed" in w for w in got["warnings"])  # nothing left pending
    # a final line without newline nested too deeply is not "complete JSON": it waits, no crash either
    with open(sessions / "x.jsonl", "a") as f:
        f.write("[" * 100000)
    os.utime(sessions / "x.jsonl", (1, 1))
    assert run(["-C", str(ws), "index", "--sessions"]).exit_code == 0
    got = recall_json(ws, "okapi", "--source", "sessions")
    assert len(got["results"]) == 3 and not any("being indexed" in w for w in got["warnings"])


def test_a_transcript_timestamp_no_clock_can_show_is_dropped_not_a_crash(ws):
    sessions = _sessions_config()
    (sessions / "t.jsonl").write_text(_msg("user", "the tapir is huge", timestamp=1e300)
                                      + '{"role": "user", "content": "the tapir naps", "timestamp": NaN}\n')
    res = run(["-C", str(ws), "index", "--sessions"])
    assert res.exit_code == 0, res.output + res.stderr
    hits = recall_json(ws, "tapir", "--source", "sessions")["results"]
    assert len(hits) == 2
