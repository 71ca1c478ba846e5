"""Session transcripts: OpenClaw-shaped JSONL indexed incrementally by byte offset, secrets
redacted, hits citing file and line, thresholds, --source, and the trust rule."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers.workspace import run, sessions_config, wait_for, write


def _msg(role, text, ts=1764237600000):
    return json.dumps({"type": "message", "timestamp": ts,
                       "message": {"role": role, "content": [{"type": "text", "text": text}]}}) + "\n"


def _recall(ws, *args):
    res = run(["-C", str(ws), "recall", *args, "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    return json.loads(res.stdout), res.stderr


def _wait_indexed(ws, query, want, timeout=30.0):
    got: list = []

    def indexed() -> bool:
        got[:] = [_recall(ws, query, "--source", "sessions")[0]]
        return len(got[0]["results"]) >= want
    assert wait_for(indexed, timeout, interval=0.2), f"{query!r}: not indexed within {timeout} s"
    return got[0]


def test_transcripts_are_indexed_redacted_and_cited(ws):
    sessions = sessions_config()
    log = sessions / "abc.jsonl"
    log.write_text(
        json.dumps({"type": "session", "id": "abc"}) + "\n"
        + _msg("user", "What is the wifi password? It is password: hunter2hunter")
        + json.dumps({"type": "message", "message": {"role": "toolResult", "content": "zebrafish tool output"}}) + "\n"
        + "not json at all\n"
        + _msg("assistant", "The zebrafish tank is in the Lisbon office; key sk-proj-abcdefghijklmnopqrstuvwx")
        + json.dumps({"role": "user", "content": "plain shape: the heron left"}) + "\n")
    got = _wait_indexed(ws, "zebrafish", 1)
    (hit,) = got["results"]  # the tool result is not indexed
    assert hit["source"] == "sessions" and hit["start_line"] == 5
    assert hit["path"] == "~/.openclaw/agents/main/sessions/abc.jsonl"
    assert hit["citation"] == "~/.openclaw/agents/main/sessions/abc.jsonl#L5-L5"
    assert "[REDACTED:openai-key]" in hit["snippet"] and "sk-proj" not in hit["snippet"]
    got, _ = _recall(ws, "wifi", "--source", "sessions")
    assert "hunter2hunter" not in got["results"][0]["snippet"] and "[REDACTED:password]" in got["results"][0]["snippet"]
    assert _recall(ws, "heron", "--source", "sessions")[0]["results"][0]["start_line"] == 6
    # default with sessions enabled: memory and sessions together; --source memory: notes only
    write(ws, "memory/2025-11-28.md", "- zebrafish food ordered\n")
    both, _ = _recall(ws, "zebrafish")
    assert {r["source"] for r in both["results"]} == {"memory", "sessions"}
    assert {r["source"] for r in _recall(ws, "zebrafish", "--source", "memory")[0]["results"]} == {"memory"}
    # group scope never searches transcripts; get refuses them
    got, err = _recall(ws, "zebrafish", "--scope", "group")
    assert {r["source"] for r in got["results"]} == {"memory"} and "private" in err
    assert run(["-C", str(ws), "get", str(log)]).exit_code == 1


@pytest.mark.slow
def test_incremental_by_offset_and_thresholds(ws):
    sessions = sessions_config("delta_messages = 5\ndelta_bytes = 100000\n")
    log = sessions / "s.jsonl"
    log.write_text("".join(_msg("user", f"message {i} about kestrels") for i in range(3)))
    res = run(["-C", str(ws), "index", "--sessions", "--json"])
    assert json.loads(res.stdout)["sessions"]["messages"] == 3
    # below the thresholds: not indexed yet, and recall does not wait
    with log.open("a") as f:
        f.write(_msg("user", "ospreys one"))
    got, err = _recall(ws, "ospreys", "--source", "sessions")
    assert got["results"] == [] and "being indexed" not in err
    # past delta_messages: indexed in the background, only the new part (offset-based)
    with log.open("a") as f:
        f.writelines(_msg("user", f"ospreys {i}") for i in range(5))
    _, err = _recall(ws, "ospreys", "--source", "sessions")
    assert "being indexed in the background" in err
    got = _wait_indexed(ws, "ospreys", 6)
    lines = sorted(r["start_line"] for r in _recall(ws, "ospreys", "--source", "sessions", "-k", "20")[0]["results"])
    assert lines == [4, 5, 6, 7, 8, 9]
    assert len(_recall(ws, "kestrels", "--source", "sessions", "-k", "20")[0]["results"]) == 3  # not duplicated
    # a half-written last line waits; a rewritten (shorter) file starts over
    with log.open("a") as f:
        f.write('{"role": "user", "content": "partial lin')
    res = run(["-C", str(ws), "index", "--sessions", "--json"])
    assert json.loads(res.stdout)["sessions"]["messages"] == 0
    log.write_text(_msg("user", "fresh start with plovers"))
    run(["-C", str(ws), "index", "--sessions"])
    assert _recall(ws, "kestrels", "--source", "sessions")[0]["results"] == []
    assert _recall(ws, "plovers", "--source", "sessions")[0]["results"][0]["start_line"] == 1


def test_sessions_from_an_untrusted_zmem_toml_are_ignored(ws):
    (ws / "zmem.toml").write_text('[sessions]\nenabled = true\ndir = "/"\n')
    res = run(["-C", str(ws), "recall", "anything", "--source", "sessions"])
    assert res.exit_code == 1 and "not enabled" in res.stderr and "hint:" in res.stderr


def test_kind_entity_and_as_of_search_memory_by_default_with_sessions_enabled(ws):
    sessions_config()
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- W @Peter: Peter adopted a kestrel.\n")
    from helpers.workspace import commit_all
    commit_all(ws, "facts")
    got, _ = _recall(ws, "kestrel", "--entity", "Peter")
    assert got["results"] and all(r["path"] == "memory/2025-11-28.md" for r in got["results"])
    got, _ = _recall(ws, "kestrel", "--kind", "world")
    assert got["results"]
    got, _ = _recall(ws, "Peter", "--as-of", "HEAD")
    assert got["results"]
    # only an explicit --source sessions/all with them is an error
    for source in ("sessions", "all"):
        res = run(["-C", str(ws), "recall", "kestrel", "--entity", "Peter", "--source", source])
        assert res.exit_code == 1 and "session transcripts" in res.stderr and "--source memory" in res.stderr


@pytest.mark.slow
def test_kind_entity_and_as_of_work_over_mcp_with_sessions_enabled(ws):
    import asyncio

    import pytest
    pytest.importorskip("mcp")
    from helpers.mcp_client import call, session
    sessions_config()
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- W @Peter: Peter adopted a kestrel.\n")
    from helpers.workspace import commit_all
    commit_all(ws, "facts")

    async def go():
        async with session(ws) as s:
            return (await call(s, "memory_search", query="kestrel", entity="Peter"),
                    await call(s, "memory_search", query="kestrel", kind="world"),
                    await call(s, "memory_recall_as_of", query="kestrel", as_of="HEAD"))
    for out in asyncio.run(go()):
        assert out["results"] and out["results"][0]["path"] == "memory/2025-11-28.md"
        assert not any("memory_get cannot read back" in w for w in out["warnings"])  # no session hit here


def test_redaction_of_assignments_json_keys_and_phrases():
    from zmem.query.sessions import redact
    cases = {
        "DB_PASSWORD=hunter2secret": "hunter2secret",
        "export ANTHROPIC_API_KEY=abcdEFGHijklMNOPqrst1234": "abcdEFGHijklMNOPqrst1234",
        "AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMIK7MDENG": "wJalrXUtnFEMIK7MDENG",
        '{"password": "s3cr3tpass", "api_key": "zzzzzzzzzzzzzz"}': "s3cr3tpass",
        "passphrase: purple-monkey-dishwasher": "purple-monkey-dishwasher",
        "the wifi password for the office is correcthorsebattery": "correcthorsebattery",
        "It is password: hunter2hunter": "hunter2hunter",
        "my password is hunter2": "hunter2",
    }
    for text, secret in cases.items():
        out = redact(text)
        assert secret not in out and "[REDACTED:password]" in out, (text, out)
    out = redact('{"password": "s3cr3tpass", "api_key": "zzzzzzzzzzzzzz"}')
    assert "zzzz" not in out and out == '{"password": "[REDACTED:password]", "api_key": "[REDACTED:password]"}'
    assert redact("DB_PASSWORD=hunter2secret") == "DB_PASSWORD=[REDACTED:password]"  # the name stays readable
    # ordinary sentences stay readable
    for text in ("I sent you a password reset link yesterday; the password reset is done.",
                 "Your password is wrong, and the token count is 500 with max_tokens=4096.",
                 "Remember to rotate the token and change your password tomorrow.",
                 "The monkey: banana. A key: idea of the plan."):
        assert redact(text) == text


# "password <noun> is X" is about a password manager/policy/field, not a password; the value is
# hidden only after "password is/was/:/=" directly or "password for/to/of/on X is".
_PASSWORD_REDACTED = [
    ("FOO_API_KEY=abcdEFGHijkl1234", "abcdEFGHijkl1234"),
    ("DB_PASSWORD=hunter2secret", "hunter2secret"),
    ('{"api_key": "zzzzzzzzzzzzzz"}', "zzzzzzzzzzzzzz"),
    ("passphrase: purple-monkey-dishwasher", "purple-monkey-dishwasher"),
    ("my password is hunter2", "hunter2"),
    ("the password was hunter2", "hunter2"),
    ("the password for the router is Xr7pq9zz", "Xr7pq9zz"),
    ("the wifi password for the office is correcthorsebattery", "correcthorsebattery"),
]
_PASSWORD_KEPT = [
    "my password manager is 1Password",
    "the password policy is strict",
    "password reset is done via email",
    "the password field is empty",
    "I use Bitwarden as password manager",
]


@pytest.mark.parametrize("text,secret", _PASSWORD_REDACTED)
def test_password_rule_redacts_real_secrets(text, secret):
    from zmem.query.sessions import redact
    out = redact(text)
    assert secret not in out and "[REDACTED:password]" in out, out


@pytest.mark.parametrize("text", _PASSWORD_KEPT)
def test_password_rule_keeps_sentences_about_passwords(text):
    from zmem.query.sessions import redact
    assert redact(text) == text


@pytest.mark.parametrize("text,secret", [
    ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456", "abcdefghijklmnopqrstuvwxyz123456"),
    ("key sk-proj-abcdefghijklmnopqrstuvwxyz0123", "sk-proj-abcdefghijklmnopqrstuvwxyz0123"),
])
def test_token_shapes_stay_redacted(text, secret):
    from zmem.query.sessions import redact
    out = redact(text)
    assert secret not in out and "[REDACTED:" in out, out

def test_relative_dir_is_resolved_against_the_workspace_and_an_unmatched_dir_warns(ws, tmp_path):
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[sessions]\nenabled = true\ndir = ["transcripts", "~/nowhere/*/sessions"]\n')
    write(ws, "transcripts/a.jsonl", _msg("user", "the albatross landed"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = run(["-C", str(ws), "index", "--sessions", "--json"], cwd=elsewhere)
    assert json.loads(res.stdout)["sessions"]["messages"] == 1
    res = run(["-C", str(ws), "recall", "albatross", "--source", "sessions", "--json"], cwd=elsewhere)
    got = json.loads(res.stdout)
    assert got["results"][0]["path"] == str(ws / "transcripts/a.jsonl")
    # the dir that matches nothing is named once, in one warning
    assert [w for w in got["warnings"] if "matches no session files" in w] == [
        "[sessions] dir matches no session files (*.jsonl): ~/nowhere/*/sessions (relative paths are resolved "
        "against the workspace root)"]
    assert res.stderr.count("matches no session files") == 1
    # status and doctor say so too
    st = json.loads(run(["-C", str(ws), "status", "--json"]).stdout)["sessions"]
    assert st["enabled"] and st["files"] == 1 and "~/nowhere/*/sessions" in st["warning"]
    doc = run(["-C", str(ws), "doctor"])
    assert "[WARN] sessions: [sessions] dir matches no session files" in doc.output
    # all good: no warning
    path.write_text('[sessions]\nenabled = true\ndir = "transcripts/"\n')
    _, err = _recall(ws, "albatross", "--source", "sessions")
    assert "matches no session files" not in err


def test_plain_index_brings_enabled_transcripts_up_to_date_and_sessions_alone_indexes_only_them(ws):
    """`zmem index` is everything enabled: new messages below the delta thresholds are indexed by it,
    so the next recall finds them at once (before, only `index --sessions` did, and recall started a
    background job and missed them)."""
    sessions = sessions_config()  # thresholds: 100 kB or 50 messages
    log = sessions / "s.jsonl"
    log.write_text(_msg("user", "first talk about herons"))
    assert json.loads(run(["-C", str(ws), "index", "--json"]).stdout)["sessions"]["messages"] == 1
    with log.open("a") as f:
        f.write(_msg("assistant", "the cormorant dries its wings"))  # 1 message: far below the thresholds
    write(ws, "memory/2025-12-01.md", "# 2025-12-01\n\n- saw a cormorant at the pier\n")
    res = run(["-C", str(ws), "index", "--json", "--no-embed"])
    assert res.exit_code == 0, res.output + res.stderr
    out = json.loads(res.stdout)
    assert out["sessions"]["messages"] == 1 and out["updated"] == ["memory/2025-12-01.md"], out
    got, err = _recall(ws, "cormorant")
    assert {r["source"] for r in got["results"]} == {"memory", "sessions"}, got["results"]
    assert "being indexed" not in err
    # --sessions alone: the transcripts only (what recall starts in the background), no notes read
    with log.open("a") as f:
        f.write(_msg("user", "a grebe dived"))
    write(ws, "memory/2025-12-02.md", "# 2025-12-02\n\n- a grebe in the harbour\n")
    out = json.loads(run(["-C", str(ws), "index", "--sessions", "--json"]).stdout)
    assert out["sessions"]["messages"] == 1 and out["updated"] == [] and out["embeddings"] is None, out
    res = run(["-C", str(ws), "index", "--sessions"])
    assert res.exit_code == 0 and res.stdout.startswith("sessions: 0 messages"), res.stdout
    out = json.loads(run(["-C", str(ws), "index", "--json"]).stdout)
    assert out["updated"] == ["memory/2025-12-02.md"] and out["sessions"]["messages"] == 0, out
