"""What hooks run. Git's: the installed shims run `python -m zmem.hookrun NAME ARGS` (detached; also
`zmem hook NAME` for other hook managers), which never fails git and is silent on success. Agents':
`zmem hook claude-code` and `zmem hook codex` read the hook's JSON on stdin (agent_hook): at
SessionStart they give the session-start context, at PreCompact, PostCompact, SessionEnd, Stop and
SubagentStop they index the session transcript in the background; they never fail the agent."""
from __future__ import annotations

import datetime as dt
import glob
import json
import os
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from zmem.errors import ZmemError, describe

# Git exports these to hooks; a detached `zmem index` must find the repository on its own.
_GIT_HOOK_ENV = ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_PREFIX")


def run_hook(directory, name: str, args: list[str], *, lock_timeout: float = 1.0) -> None:
    """Catch up every workspace of the repository. Never raises: whatever goes wrong (even finding
    the workspaces) is logged, and git's command still succeeds."""
    for var in _GIT_HOOK_ENV:
        os.environ.pop(var, None)
    try:
        workspaces = _workspaces(directory)
    except Exception as e:  # noqa: BLE001 - a hook must never fail the git command
        _failed(_fallback_state_dir(directory), name, args, e)
        return
    for ws in workspaces:
        _catch_up_one(ws, name, args, lock_timeout)


def _fallback_state_dir(directory) -> Path | None:
    """Where to log when the workspaces could not be found: an existing .zmem/ where the hook runs."""
    try:
        state = Path(directory or os.getcwd()) / ".zmem"
        return state if state.is_dir() else None
    except OSError:
        return None


def _workspaces(directory):
    """The workspace at the repository's top (where git runs hooks; never $ZMEM_WORKSPACE, which
    may name another workspace) and any registered ones in its subdirectories. None at all: the
    hooks outlived the workspace; nothing to do."""
    from zmem.git.repo import open_repo, registered_workspaces
    from zmem.workspace.core import find_workspace, looks_like_workspace
    top = Path(directory or os.getcwd()).resolve()
    found = {}
    try:
        if looks_like_workspace(top):
            ws = find_workspace(top)
            found[ws.root] = ws
    except ZmemError as e:
        if (top / ".zmem").is_dir():
            _log(top / ".zmem", f"skipped: {e.message}")
    try:
        repo = open_repo(top)
    except ZmemError:
        return list(found.values())
    for rel in registered_workspaces(repo):
        try:  # one registered workspace gone or broken must not hide the others
            ws = find_workspace(repo.workdir / rel)
        except ZmemError as e:
            state = repo.workdir / rel / ".zmem"
            if state.is_dir():  # still a workspace (an invalid zmem.toml, …): say why it was skipped
                _log(state, f"skipped: {e.message}")
            continue
        found.setdefault(ws.root, ws)
    return list(found.values())


def _catch_up_one(ws, name: str, args: list[str], lock_timeout: float) -> None:
    from zmem.index.catchup import catch_up, spawn_detached_index
    try:
        result = catch_up(ws, lock_timeout=lock_timeout, max_inline=ws.config.inline_max_files)
        if result.deferred:
            spawn_detached_index(ws)  # also embeds
        elif ws.config.embeddings.get("provider", "auto") != "none":
            from zmem.index.embedding import needs_embedding, spawn_embed_job
            if needs_embedding(ws):
                spawn_embed_job(ws)  # never wait on a model or a remote API inside git
        problems = result.warnings if not result.stale else []
        if problems:
            _log(ws.state_dir, f"{name}: " + "; ".join(problems))
    except Exception as e:  # noqa: BLE001 - a hook must never fail the git command
        _failed(ws.state_dir, name, args, e)


def _failed(state_dir: Path | None, name: str, args: list[str], e: Exception) -> None:
    """The hooks' one error handler: log and say on stderr (git shows it) why the hook did nothing,
    in the two lines every command uses; a bug's traceback goes to the log."""
    problem = describe(e)
    message = problem.message
    if problem.bug:
        hint = "this is a bug in zmem (the traceback is in .zmem/hook.log); `zmem index` repairs the index"
        logged = f"{message}\n{traceback.format_exc()}"
    else:
        hint = problem.hint or "`zmem index` repairs the index once that is fixed"
        logged = f"{message} (hint: {hint})"
    if state_dir is not None:
        _log(state_dir, f"{name} {' '.join(args)}: {logged}")
    try:
        print(f"zmem: hook {name} failed: {message}\nhint: {hint}", file=sys.stderr)
    except (OSError, ValueError):
        pass


def _log(state_dir: Path, message: str) -> None:
    if os.path.islink(state_dir):  # a committed link: every command refuses it, and nothing is written through it
        return
    try:
        state_dir.mkdir(exist_ok=True)
        with open(state_dir / "hook.log", "a", encoding="utf-8") as f:
            f.write(f"{dt.datetime.now().isoformat(timespec='seconds')} {message}\n")
    except OSError:
        pass


# ----------------------------------------------------------------------------- agents' hooks

# agent -> where its session transcripts are, as a [sessions] dir entry
AGENT_HOOKS = {"claude-code": "~/.claude/projects", "codex": "~/.codex/sessions"}
CONTEXT_EVENTS = frozenset({"SessionStart"})
TRANSCRIPT_EVENTS = frozenset({"PreCompact", "PostCompact", "SessionEnd", "Stop", "SubagentStop"})


@dataclass
class AgentHookResult:
    """What `zmem hook claude-code|codex` does with one event: stdout for the agent (SessionStart's
    JSON with the context), notes for its stderr, and which action ran (context, index or none)."""
    event: str
    action: str
    stdout: str = ""
    notes: list[str] = field(default_factory=list)


def read_payload(text: str, agent: str = "claude-code") -> tuple[str, dict]:
    """(hook_event_name, the payload) of the JSON an agent's hook gets on stdin."""
    try:
        payload = json.loads(text) if text.strip() else None
    except (ValueError, RecursionError):
        payload = None
    if not isinstance(payload, dict) or not isinstance(payload.get("hook_event_name"), str):
        shown = text.strip()[:60] or "nothing"
        raise ZmemError(f"expected the hook's JSON with a hook_event_name on stdin, got {shown!r}",
                        hint=f'e.g. echo \'{{"hook_event_name": "SessionStart"}}\' | zmem hook {agent}')
    return payload["hook_event_name"], payload


def agent_hook(directory, agent: str, text: str, *, scope: str = "private", budget: int | None = None
               ) -> AgentHookResult:
    """One agent hook event (the JSON text its hook gets on stdin), for the workspace at directory.
    SessionStart: the session-start context (Memory.context) as the hookSpecificOutput JSON Claude
    Code and Codex add to the session, nothing when there is nothing to read. The transcript events:
    `zmem index --sessions` detached, when [sessions] covers the payload's transcript_path. Other
    events: nothing. A user error (no workspace, transcripts off) is a ZmemError."""
    event, payload = read_payload(text, agent)
    if event in CONTEXT_EVENTS:
        from zmem.memory import Memory
        with Memory.open(directory) as memory:
            ctx = memory.context(scope=scope, budget=budget)
        out = json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": ctx.text}},
                         ensure_ascii=False) if ctx.text else ""
        return AgentHookResult(event, "context", out, list(ctx.warnings))
    if event not in TRANSCRIPT_EVENTS:
        return AgentHookResult(event, "none")
    from zmem.workspace.core import find_workspace
    from zmem.workspace.session_settings import settings_for
    ws = find_workspace(directory)
    settings = settings_for(ws)
    folder = AGENT_HOOKS.get(agent, "~/.claude/projects")
    if not settings.enabled:
        from zmem.workspace.config import user_config_path
        raise ZmemError("session transcripts are off, so this session's transcript was not indexed",
                        hint=f'add to {user_config_path()} the table [sessions] with the keys enabled = true and '
                             f'dir = ["{folder}"] (docs/agent-hooks.md)')
    transcript = payload.get("transcript_path")
    if isinstance(transcript, str) and transcript and not _covered(settings.dirs, transcript):
        shown = transcript if len(transcript) <= 200 else transcript[:200] + "…"
        raise ZmemError(f"{shown} is not under a [sessions] dir ({', '.join(settings.dirs)}), so it was not "
                        "indexed", hint=f'add its folder to [sessions] dir, e.g. dir = ["{folder}"]')
    from zmem.query.sessions import spawn_session_index
    spawn_session_index(ws)
    return AgentHookResult(event, "index")


def _covered(dirs, transcript: str) -> bool:
    """Is the transcript file one of the [sessions] dirs' (a dir or glob it is in, or the file itself)?"""
    try:
        path = Path(transcript).expanduser().resolve()
    except (ValueError, OSError, RuntimeError):  # a NUL byte, a loop, ~user unknown: no file of a folder
        return False
    for d in dirs:
        for match in glob.glob(os.path.expanduser(d)):
            found = Path(match).resolve()
            if path == found or found in path.parents:
                return True
    return False


WAIT_SECONDS = 60.0  # how long a detached hook queues behind a busy writer


def _next_in_line(state_dir: Path):
    """For a detached hook: the open `hook-wait` file once this hook is the one waiting for the index
    (its lock free), or None when another hook already waits: that one's catch-up starts after this
    commit was made, so it takes it in, and this hook has nothing to do. Without this, a burst of
    commits (an agent appending in a loop) started a catch-up process each, all queued on the lock
    (175 alive at once at ~10 commits/s), each paying zmem's imports. Unknown (no .zmem/ here, no
    flock): an open file anyway, and the hook runs as before."""
    import fcntl
    import time
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW  # nothing written through a link
    try:
        wait = os.fdopen(os.open(state_dir / "hook-wait", flags, 0o644), "a")
    except OSError:
        return open(os.devnull)
    try:
        fcntl.flock(wait, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        wait.close()
        return None
    except OSError:
        return wait
    try:
        with os.fdopen(os.open(state_dir / "lock", flags, 0o644), "a") as lock:  # wait, not holding it
            deadline = time.monotonic() + WAIT_SECONDS
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(lock, fcntl.LOCK_UN)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
    except OSError:
        pass
    return wait


def main() -> None:
    """Entry point of the shim: no click, so the hook pays only for what it uses."""
    if len(sys.argv) >= 2:  # detached by the shim: nobody waits, so queue behind a busy writer
        state_dir = Path.cwd() / ".zmem"  # git runs hooks at the repository's top
        mine = state_dir.is_dir() and not state_dir.is_symlink()  # a linked .zmem is refused: run_hook says so
        wait = _next_in_line(state_dir) if mine else open(os.devnull)
        if wait is None:
            return
        wait.close()  # the next hook may wait now, while this one catches up
        run_hook(None, sys.argv[1], sys.argv[2:], lock_timeout=WAIT_SECONDS)


if __name__ == "__main__":
    main()
