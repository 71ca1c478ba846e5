"""Session transcripts as writers really leave them, through the real CLI on real git repositories:
replaced by a larger file, rewritten in place at the same size, appended by atomic replace, a final
line without newline, an unparsable tail, lines nested too deeply, timestamps no clock can show."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from helpers.workspace import recall_json, recall_proc, run, sessions_config, wait_for, zmem_proc


def _sessions(ws, extra="") -> Path:
    cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[sessions]\nenabled = true\ndir = "sessions"\n{extra}')
    (ws / "sessions").mkdir(exist_ok=True)
    return ws / "sessions"


def _line(text: str) -> str:
    return json.dumps({"role": "user", "content": text}) + "\n"


def _session_hits(ws, query) -> list[tuple[int, str]]:
    got, _ = recall_proc(ws, query, "--source", "sessions", "--k", "50")
    return sorted((r["start_line"], r["snippet"]) for r in got["results"])


def _index_sessions(ws) -> dict:
    proc = zmem_proc("-C", str(ws), "index", "--sessions", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["sessions"]


@pytest.mark.slow
def test_a_transcript_replaced_by_a_larger_one_starts_over(ws):
    sessions = _sessions(ws)
    a = sessions / "a.jsonl"
    a.write_text("".join(_line(f"old message {i} about pelican") for i in range(6)))
    assert _index_sessions(ws)["messages"] == 6
    tmp = sessions / "a.tmp"
    tmp.write_text("".join(_line(f"new conversation line {i} about flamingo") for i in range(12)))
    os.replace(tmp, a)  # atomically replaced, larger
    assert _index_sessions(ws)["messages"] == 12
    hits = _session_hits(ws, "pelican flamingo")
    assert hits == [(i + 1, f"new conversation line {i} about flamingo") for i in range(12)]


@pytest.mark.slow
def test_a_transcript_rewritten_in_place_at_the_same_size_starts_over(ws):
    sessions = _sessions(ws)
    a = sessions / "a.jsonl"
    a.write_text("".join(_line(f"old message {i} about pelican") for i in range(6)))
    ino = a.stat().st_ino
    assert _index_sessions(ws)["messages"] == 6
    with open(a, "r+") as f:  # same inode, same size, other words
        f.write("".join(_line(f"new message {i} about buzzard") for i in range(6)))
    assert a.stat().st_ino == ino
    # recall sees it is due (the old messages must go) without waiting for the thresholds
    _, err = recall_proc(ws, "buzzard", "--source", "sessions")
    assert "being indexed in the background" in err
    rewritten = [(i + 1, f"new message {i} about buzzard") for i in range(6)]
    assert wait_for(lambda: _session_hits(ws, "buzzard") == rewritten, 30, interval=0.2), "the rewrite was not indexed"
    assert _session_hits(ws, "pelican") == []


@pytest.mark.slow
def test_an_append_by_atomic_replace_keeps_what_was_indexed(ws):
    sessions = _sessions(ws, "delta_messages = 1\n")
    a = sessions / "a.jsonl"
    first = "".join(_line(f"kestrel {i}") for i in range(3))
    a.write_text(first)
    assert _index_sessions(ws)["messages"] == 3
    tmp = sessions / "a.tmp"
    tmp.write_text(first + _line("kestrel 3"))
    os.replace(tmp, a)  # a new inode, the same prefix: only the new line is indexed
    assert _index_sessions(ws)["messages"] == 1
    assert [line for line, _ in _session_hits(ws, "kestrel")] == [1, 2, 3, 4]


@pytest.mark.slow
def test_a_final_line_without_newline_is_indexed_once_quiet_and_never_respawns(ws):
    sessions = _sessions(ws)
    b = sessions / "b.jsonl"
    b.write_text('{"role":"user","content":"final toucan message"}')
    # just written: it may be half a line, so it waits, and recall starts nothing for it
    got, err = recall_proc(ws, "toucan", "--source", "sessions")
    assert got["results"] == [] and "being indexed" not in err
    old = time.time() - 10
    os.utime(b, (old, old))  # quiet for a while: a complete line
    _, err = recall_proc(ws, "toucan", "--source", "sessions")
    assert "1 session files have new messages, being indexed in the background" in err
    assert wait_for(lambda: _session_hits(ws, "toucan") == [(1, "final toucan message")], 30, interval=0.2), \
        "the final line was not indexed"
    for _ in range(2):  # nothing left to index: no warning, no background indexer
        _, err = recall_proc(ws, "toucan", "--source", "sessions")
        assert "being indexed" not in err
    # the writer finishes the line and goes on: numbering continues, nothing is indexed twice
    with open(b, "a") as f:
        f.write("\n" + _line("second toucan"))
    assert _index_sessions(ws)["messages"] == 1
    assert _session_hits(ws, "toucan") == [(1, "final toucan message"), (2, "second toucan")]


@pytest.mark.slow
def test_an_unparsable_tail_never_respawns_the_indexer(ws):
    sessions = _sessions(ws)
    c = sessions / "c.jsonl"
    c.write_text(_line("heron one") + '{"role": "user", "content": "half writ')
    old = time.time() - 10
    os.utime(c, (old, old))
    assert _index_sessions(ws)["messages"] == 1
    for _ in range(2):
        _, err = recall_proc(ws, "heron", "--source", "sessions")
        assert "being indexed" not in err


def _msg(role, text, **extra):
    return json.dumps({"type": "message", **extra,
                       "message": {"role": role, "content": [{"type": "text", "text": text}]}}) + "\n"


def test_a_deeply_nested_transcript_line_is_skipped_with_a_warning_and_the_rest_is_indexed(ws):
    sessions = sessions_config()
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
    sessions = sessions_config()
    (sessions / "t.jsonl").write_text(_msg("user", "the tapir is huge", timestamp=1e300)
                                      + '{"role": "user", "content": "the tapir naps", "timestamp": NaN}\n')
    res = run(["-C", str(ws), "index", "--sessions"])
    assert res.exit_code == 0, res.output + res.stderr
    hits = recall_json(ws, "tapir", "--source", "sessions")["results"]
    assert len(hits) == 2
