"""Settings of a committed zmem.toml that await `zmem trust` say so (run `zmem trust`, or move them to
your own config), and a trusted zmem.toml that a pull changed says it changed since you trusted it; a damaged trust list
reads as empty and `zmem trust` rewrites it."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, recall_json, run, write


def _settings(server, sessions: Path) -> str:
    return (f'[embeddings]\nprovider = "openai"\nmodel = "fake-embed"\nbase_url = "{server.base_url}"\n'
            f'api_key_env = "ZMEM_TEST_KEY"\n\n[sessions]\nenabled = true\ndir = "{sessions}"\n\n'
            '[llm]\nmodel = "fake-chat"\n')


def _trust_warning(root) -> str:
    warnings = [w for w in recall_json(root, "gateway")["warnings"] if "zmem.toml" in w]
    assert len(warnings) == 1, warnings
    return warnings[0]


def _error(res) -> tuple[str, str]:
    lines = res.stderr.splitlines()
    assert res.exit_code == 1 and len(lines) == 2 and lines[1].startswith("hint: "), res.stderr
    return lines[0], lines[1]


def test_settings_awaiting_trust_say_run_zmem_trust_first(ws, server, tmp_path, monkeypatch):
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / "a.jsonl").write_text('{"role": "user", "content": "the plover"}\n')
    write(ws, "zmem.toml", _settings(server, sessions))
    commit_all(ws)
    monkeypatch.setenv("ZMEM_TEST_KEY", "sk-test")
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"

    warning = _trust_warning(ws)
    assert "embeddings.base_url" in warning and "sessions.enabled" in warning and "llm.model" in warning
    assert "run `zmem trust`" in warning and str(user) in warning
    assert warning.index("zmem trust") < warning.index(str(user))  # trust first, then the alternative
    assert server.embedding_calls() == []

    message, hint = _error(run(["-C", str(ws), "recall", "plover", "--source", "sessions"]))
    assert message == "zmem: session transcripts are not enabled: zmem.toml sets sessions.enabled, but is not trusted yet"
    assert hint.startswith("hint: run `zmem trust`") and str(user) in hint and "add [sessions]" not in hint
    message, hint = _error(run(["-C", str(ws), "index", "--sessions"]))
    assert "not trusted yet" in message and "zmem trust" in hint
    message, hint = _error(run(["-C", str(ws), "reflect", "--llm", "--dry-run"]))
    assert message == "zmem: `zmem reflect --llm` needs a chat model: zmem.toml sets llm.model, but is not trusted yet"
    assert hint.startswith("hint: run `zmem trust`")
    assert "zmem trust" in run(["-C", str(ws), "doctor"]).stdout

    assert run(["-C", str(ws), "trust"]).exit_code == 0
    out = recall_json(ws, "gateway")
    assert not any("zmem.toml" in w for w in out["warnings"]), out["warnings"]
    assert run(["-C", str(ws), "index"]).exit_code == 0  # transcripts and embeddings, both trusted now
    assert server.embedding_calls()


def test_without_a_setting_anywhere_the_hint_says_where_to_add_it(ws):
    message, hint = _error(run(["-C", str(ws), "recall", "x", "--source", "sessions"]))
    assert message == "zmem: session transcripts are not enabled" and "add [sessions] enabled = true" in hint


@pytest.mark.slow
def test_a_pull_that_changes_a_trusted_zmem_toml_says_it_changed_since_you_trusted_it(ws, server, tmp_path):
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    write(ws, "zmem.toml", _settings(server, sessions))
    commit_all(ws, "settings")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ws), str(clone))
    assert run(["-C", str(clone), "trust"]).exit_code == 0
    assert not any("zmem.toml" in w for w in recall_json(clone, "gateway")["warnings"])

    write(ws, "zmem.toml", _settings(server, sessions).replace("fake-embed", "other-embed"))
    commit_all(ws, "another model")
    git(clone, "pull", "-q", "--ff-only")

    warning = _trust_warning(clone)
    assert warning.startswith("zmem.toml changed since you trusted it (run `zmem trust` to trust the new version)")
    assert "embeddings.model" in warning and "cloned repository" not in warning
    message, hint = _error(run(["-C", str(clone), "recall", "x", "--source", "sessions"]))
    assert message.endswith("zmem.toml sets sessions.enabled, but changed since you trusted it")
    assert hint.startswith("hint: run `zmem trust` to trust the new version")

    assert run(["-C", str(clone), "trust"]).exit_code == 0
    assert not any("zmem.toml" in w for w in recall_json(clone, "gateway")["warnings"])
    assert run(["-C", str(clone), "trust", "--revoke"]).exit_code == 0  # revoked: not trusted, not "changed"
    assert "changed since" not in _trust_warning(clone) and "run `zmem trust`" in _trust_warning(clone)


@pytest.mark.parametrize("store", ["[" * 100000, "[1, 2]", "{broken"])
def test_a_damaged_trust_list_is_read_as_empty_and_trust_rewrites_it(ws, store):
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "trusted.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(store)
    (ws / "zmem.toml").write_text('[embeddings]\nprovider = "local"\nmodel_path = "m.gguf"\n')
    res = run(["-C", str(ws), "recall", "anything", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    assert "zmem trust" in " ".join(json.loads(res.stdout)["warnings"])
    res = run(["-C", str(ws), "trust"])
    assert res.exit_code == 0, res.output + res.stderr
    assert list(json.loads(path.read_text())) == [str((ws / "zmem.toml").resolve())]
