"""`zmem reflect --llm` against a real OpenAI-compatible chat server on loopback: the summary lands
inside the managed block, survives later runs without --llm, and a failing model only warns."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers.workspace import commit_all, run, write
from helpers.chat_server import ChatServer


@pytest.fixture
def chat():
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    with ChatServer() as server:
        path.write_text(f'[llm]\nmodel = "tiny-chat"\nbase_url = "{server.url}"\n')
        yield server


@pytest.mark.slow
def test_reflect_llm_summary(ws, chat):
    write(ws, "memory/2025-11-24.md", "## Retain\n- W @Peter: Lives in Lisbon.\n- O(c=0.7) @Peter: Prefers tea.\n")
    commit_all(ws, "facts", date="2025-11-24T10:00:00+00:00")
    res = run(["-C", str(ws), "reflect", "--llm", "--json"])
    assert res.exit_code == 0, res.stderr
    page = (ws / "bank/entities/Peter.md").read_text()
    assert "### Summary\nEntity: Peter has 2 known facts." in page
    assert "_Written by tiny-chat from 2 facts up to 2025-11-24._" in page
    assert chat.requests[0]["model"] == "tiny-chat" and chat.requests[0]["temperature"] == 0
    # a later run without --llm keeps the summary; a failing model warns and changes nothing else
    write(ws, "memory/2025-11-25.md", "## Retain\n- B @Peter: Ran a marathon.\n")
    commit_all(ws, "more", date="2025-11-25T10:00:00+00:00")
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    page = (ws / "bank/entities/Peter.md").read_text()
    assert "Entity: Peter has 2 known facts." in page and "Ran a marathon." in page
    chat.fail = True
    write(ws, "memory/2025-11-26.md", "## Retain\n- B @Peter: Swam.\n")
    commit_all(ws, "swim", date="2025-11-26T10:00:00+00:00")
    res = run(["-C", str(ws), "reflect", "--llm"])
    assert res.exit_code == 0 and "no summary (the chat model failed" in res.stderr
    assert "Swam." in (ws / "bank/entities/Peter.md").read_text()


def test_reflect_llm_without_a_model_is_a_clear_error(ws):
    res = run(["-C", str(ws), "reflect", "--llm"])
    assert res.exit_code == 1 and "needs a chat model" in res.stderr and "hint:" in res.stderr
