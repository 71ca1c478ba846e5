"""`zmem hook claude-code` and `zmem hook codex`, run as those agents run their hook commands: a
real process given the JSON they send on stdin. SessionStart prints the session-start context as
the hookSpecificOutput they add to the session; PreCompact, SessionEnd (Codex: Stop) index the
transcript in the background; every problem is two lines on stderr and exit 0, so the agent's
session goes on."""
from __future__ import annotations

import json
import os
from pathlib import Path

from helpers.agents import (claude_line, claude_payload, claude_transcript_dir, codex_payload,
                            sessions_enabled)
from helpers.workspace import commit_all, run, run_json, today_log, wait_for, write, zmem_proc


def hook(ws, agent, payload, *args):
    return zmem_proc("-C", str(ws), "hook", agent, *args, input=payload)


def test_session_start_gives_the_context_as_claude_code_and_codex_read_it(ws):
    write(ws, "MEMORY.md", "# Memory\n\n- Peter prefers tea.\n")
    write(ws, today_log(), "## Notes\n\n- Decided to ship the hook adapter.\n")
    commit_all(ws)
    expected, _ = run_json(["-C", str(ws), "context", "--json"])
    for agent, payload in (("claude-code", claude_payload("SessionStart")),
                           ("codex", codex_payload("SessionStart")),
                           ("claude-code", claude_payload("SessionStart", source="compact"))):
        proc = hook(ws, agent, payload)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        out = json.loads(proc.stdout)
        assert out == {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                              "additionalContext": expected["text"]}}
    group = json.loads(hook(ws, "claude-code", claude_payload("SessionStart"), "--scope", "group",
                            "--budget", "300").stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Peter prefers tea" not in group and len(group) <= 300 and "ship the hook adapter" in group


def test_session_start_with_nothing_to_read_prints_nothing(ws):
    (ws / "MEMORY.md").unlink()
    proc = hook(ws, "claude-code", claude_payload("SessionStart"))
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


def test_pre_compact_and_session_end_index_the_transcript_in_the_background(ws):
    sessions_enabled("~/.claude/projects")
    log = claude_transcript_dir() / "5b1e8a3c.jsonl"
    log.write_text(claude_line("user", "Remember the albatross ringing station."))

    def found(query):
        out, _ = run_json(["-C", str(ws), "recall", query, "--source", "sessions", "--json"])
        return out["results"]
    proc = hook(ws, "claude-code", claude_payload("PreCompact", log))
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert wait_for(lambda: found("albatross"), 30), "PreCompact did not index the transcript"
    assert found("albatross")[0]["citation"].endswith("/5b1e8a3c.jsonl#L1-L1")
    with log.open("a") as f:
        f.write(claude_line("assistant", [{"type": "text", "text": "The cormorant count is due Friday."}]))
    assert hook(ws, "claude-code", claude_payload("SessionEnd", log)).returncode == 0
    assert wait_for(lambda: found("cormorant"), 30), "SessionEnd did not index the new lines"
    assert found("cormorant")[0]["start_line"] == 2


def test_codex_stop_indexes_its_rollout(ws):
    sessions_enabled("~/.codex/sessions")
    day = Path(os.environ["HOME"]) / ".codex/sessions/2026/11/28"
    day.mkdir(parents=True)
    rollout = day / "rollout-2026-11-28T09-15-00-5b1e8a3c.jsonl"
    rollout.write_text(json.dumps({"timestamp": "2026-11-28T09:15:00Z", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Book the egret tour."}]}}) + "\n")
    proc = hook(ws, "codex", codex_payload("Stop", rollout))
    assert proc.returncode == 0 and proc.stderr == ""

    def found():
        out, _ = run_json(["-C", str(ws), "recall", "egret", "--source", "sessions", "--json"])
        return out["results"]
    assert wait_for(found, 30), "Stop did not index the rollout"


def test_problems_are_two_lines_on_stderr_and_exit_0(ws, tmp_path):
    log = claude_transcript_dir() / "s.jsonl"
    log.write_text(claude_line("user", "hello"))
    cases = {
        "off": hook(ws, "claude-code", claude_payload("PreCompact", log)),
        "not_json": hook(ws, "codex", "{not json"),
        "no_event": hook(ws, "claude-code", json.dumps({"session_id": "x"})),
        "no_workspace": zmem_proc("-C", str(tmp_path / "nowhere"), "hook", "claude-code",
                                  input=claude_payload("SessionStart")),
    }
    sessions_enabled("~/.openclaw/agents/*/sessions")
    cases["elsewhere"] = hook(ws, "claude-code", claude_payload("SessionEnd", log))
    for key, proc in cases.items():
        lines = proc.stderr.splitlines()
        assert proc.returncode == 0 and proc.stdout == "", (key, proc.stdout, proc.stderr)
        assert len(lines) == 2 and lines[0].startswith("zmem: ") and lines[1].startswith("hint: "), (key, lines)
        assert "Traceback" not in proc.stderr
    assert "[sessions]" in cases["off"].stderr and "~/.claude/projects" in cases["off"].stderr
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"  # the file this user's zmem reads,
    assert f"add to {config} the table [sessions]" in cases["off"].stderr  # and keys as TOML writes them
    assert 'enabled = true and dir = ["~/.claude/projects"]' in cases["off"].stderr
    assert "zmem hook codex" in cases["not_json"].stderr
    assert str(log) in cases["elsewhere"].stderr and "not under a [sessions] dir" in cases["elsewhere"].stderr


def test_other_events_do_nothing_and_empty_stdin_is_a_note_not_a_failure(ws):
    proc = hook(ws, "claude-code", claude_payload("UserPromptSubmit"))
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    res = run(["-C", str(ws), "hook", "claude-code"])  # click's runner: an empty stdin that is no terminal
    assert res.exit_code == 0 and "hook_event_name" in res.stderr and "hint:" in res.stderr


def test_a_person_typing_it_at_a_terminal_is_told_what_it_reads_with_exit_1(ws):
    import subprocess
    from helpers.workspace import zmem_exe
    main, terminal = os.openpty()
    try:
        proc = subprocess.run([zmem_exe(), "-C", str(ws), "hook", "codex"], stdin=terminal, capture_output=True,
                              text=True, timeout=60)
    finally:
        os.close(main)
        os.close(terminal)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == ["zmem: `zmem hook codex` reads the JSON its hook gets on stdin",
                                        """hint: e.g. echo '{"hook_event_name": "SessionStart"}' | zmem hook codex"""]


def test_a_transcript_path_that_names_no_file_is_refused_in_two_lines_not_an_internal_error(ws):
    sessions_enabled("~/.claude/projects")
    cases = {"nul": str(claude_transcript_dir() / "a\0b.jsonl"), "long": "/" + "a" * 5000,
             "unknown_user": "~nosuchuser-zmem/.claude/projects/x.jsonl"}
    for key, transcript in cases.items():
        proc = hook(ws, "claude-code", json.dumps({"hook_event_name": "PreCompact", "transcript_path": transcript}))
        lines = proc.stderr.splitlines()
        assert proc.returncode == 0 and proc.stdout == "", (key, proc.stderr)
        assert len(lines) == 2 and "not under a [sessions] dir" in lines[0], (key, lines)
        assert "internal error" not in proc.stderr and len(lines[0]) < 400, (key, lines)


def test_a_misspelt_agent_name_is_an_error_naming_the_right_one_not_a_silent_git_catch_up(ws):
    for name, meant in (("claude", "claude-code"), ("Codex", "codex"), ("frobnicate", None)):
        proc = hook(ws, name, claude_payload("SessionStart"))
        lines = proc.stderr.splitlines()
        assert proc.returncode == 1 and proc.stdout == "", (name, proc.stderr)
        assert lines[0] == f"zmem: unknown hook '{name}': not an agent's (claude-code, codex) nor a git hook's name"
        assert lines[1].startswith(f"hint: did you mean `zmem hook {meant}`?" if meant else "hint: agents' hooks run")
    proc = zmem_proc("-C", str(ws), "hook", "post-commit")  # git's names run as ever: silent, exit 0
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


def test_an_endless_stdin_is_refused_in_two_lines_not_read_until_memory_runs_out(ws):
    import subprocess
    from helpers.workspace import zmem_exe
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        proc = subprocess.run([zmem_exe(), "-C", str(ws), "hook", "claude-code"], stdin=yes.stdout,
                              capture_output=True, text=True, timeout=120)
    finally:
        yes.kill()
        yes.wait()
    lines = proc.stderr.splitlines()
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert lines == ["zmem: standard input holds more than 64 MiB: not a hook's JSON payload",
                     "hint: pipe the hook's JSON only, e.g. echo '{\"hook_event_name\": \"SessionStart\"}' "
                     "| zmem hook claude-code"]
