"""Agent transcripts and hook payloads as Claude Code and Codex write them (shapes from their hook
docs and real transcript files), for the session-transcript and agent-hook tests."""
from __future__ import annotations

import json
import os
from pathlib import Path

SESSION_ID = "5b1e8a3c-0d2f-4c7a-9e61-2f3b4c5d6e7f"


def claude_transcript_dir(project: str = "-home-user-src-app") -> Path:
    """~/.claude/projects/<project>/ (Claude Code names the folder after the project's path)."""
    d = Path(os.environ["HOME"]) / ".claude" / "projects" / project
    d.mkdir(parents=True, exist_ok=True)
    return d


def sessions_enabled(*dirs: str) -> None:
    """[sessions] enabled in the user config, for these dir entries."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[sessions]\nenabled = true\ndir = " + json.dumps(list(dirs)) + "\n")


def claude_line(kind: str, content, **extra) -> str:
    """One line of a Claude Code transcript: a user or assistant message (content a string or blocks)."""
    line = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/user/src/app",
            "sessionId": SESSION_ID, "version": "2.0.14", "gitBranch": "main", "type": kind,
            "message": {"role": kind, "content": content}, "uuid": f"u-{abs(hash(str(content))) % 10**8}",
            "timestamp": "2026-11-28T09:15:00.000Z", **extra}
    if kind == "assistant":
        line["message"] = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                           "content": content, "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 5}}
    return json.dumps(line) + "\n"


def codex_line(kind: str, payload: dict) -> str:
    """One line of a Codex rollout file."""
    return json.dumps({"timestamp": "2026-11-28T09:15:00.000Z", "type": kind, "payload": payload}) + "\n"


def claude_payload(event: str, transcript: Path | str | None = None, **extra) -> str:
    """The JSON Claude Code writes to a command hook's stdin."""
    base = {"session_id": SESSION_ID, "transcript_path": str(transcript or ""), "cwd": "/home/user/src/app",
            "permission_mode": "default", "hook_event_name": event}
    base.update({"SessionStart": {"source": "startup", "model": "claude-sonnet-4-5"},
                 "PreCompact": {"trigger": "auto", "custom_instructions": ""},
                 "SessionEnd": {"reason": "prompt_input_exit"},
                 "UserPromptSubmit": {"prompt": "hello"}}.get(event, {}))
    base.update(extra)
    return json.dumps(base)


def codex_payload(event: str, transcript: Path | str | None = None, **extra) -> str:
    """The JSON Codex writes to a command hook's stdin (transcript_path may be null)."""
    base = {"session_id": SESSION_ID, "transcript_path": str(transcript) if transcript else None,
            "cwd": "/home/user/src/app", "hook_event_name": event, "model": "gpt-5-codex",
            "permission_mode": "default"}
    base.update({"SessionStart": {"source": "startup"}, "Stop": {"turn_id": "t-1", "stop_hook_active": False,
                                                                 "last_assistant_message": "done"}}.get(event, {}))
    base.update(extra)
    return json.dumps(base)
