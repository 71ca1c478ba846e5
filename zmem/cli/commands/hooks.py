"""`zmem hooks install|uninstall|status`, and `zmem hook` that the installed git hooks run."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from zmem.errors import ZmemError
from zmem.cli.common import Count, _memory, json_option, report, scope_option, warn
from zmem.cli.terminal import echo


@click.group()
def hooks():
    """Install, remove or inspect zmem's git hooks (post-commit, post-merge, post-checkout, post-rewrite).

    A foreign hook already in place is kept and still runs first; uninstall restores it. When
    core.hooksPath is set, zmem refuses to install and says how to chain it instead.
    """


def _install_hooks(root, *, quiet_if_unchanged=False, quiet=False) -> None:
    from zmem.git import hooks as hooks_lib
    try:
        before = hooks_lib.status(root)
        names = _install(root)
    except ZmemError as e:
        warn(f"hooks not installed: {e.message}")
        if e.hint:
            click.echo(f"hint: {e.hint}", err=True)
        return
    if quiet or (quiet_if_unchanged and all(v.startswith("installed") for v in before.values())):
        return
    click.echo(f"installed git hooks: {', '.join(names)}")


def _install(root) -> list[str]:
    from zmem.git import hooks as hooks_lib
    from zmem.git.repo import open_repo, register_workspace
    # hooks run at the repository's top: register a subdirectory workspace so they find it, also
    # when core.hooksPath makes install refuse (a husky hook that runs `zmem hook` needs it too)
    register_workspace(open_repo(Path(root)))
    names = hooks_lib.install(root)
    skipped = [n for n in hooks_lib.HOOK_NAMES if n not in names]
    if skipped:
        warn(f"left {', '.join(skipped)} alone: a foreign hook and an older saved one ({hooks_lib.PREV_SUFFIX}) "
             "both exist, and zmem chains only one")
        click.echo("hint: merge them into one hook, then run `zmem hooks install` again "
                   "(every zmem command still catches up by itself)", err=True)
    return names


@hooks.command("install")
@click.pass_context
def hooks_install(ctx):
    """Install the hooks into the repository's common hooks directory (shared by worktrees)."""
    ws = _memory(ctx).workspace
    names = _install(ws.root)
    click.echo(f"installed git hooks: {', '.join(names)}")


@hooks.command("uninstall")
@click.pass_context
def hooks_uninstall(ctx):
    """Remove zmem's hooks only, restoring any hook they had moved aside."""
    from zmem.git import hooks as hooks_lib
    ws = _memory(ctx).workspace
    names = hooks_lib.uninstall(ws.root)
    click.echo(f"removed git hooks: {', '.join(names)}" if names else "no zmem hooks were installed")


@hooks.command("status")
@json_option()
@click.pass_context
def hooks_status(ctx, as_json):
    """Show, per hook, whether zmem's hook is installed, missing, outdated or foreign."""
    from zmem.git import hooks as hooks_lib
    ws = _memory(ctx).workspace
    st = hooks_lib.status(ws.root)
    if as_json:
        click.echo(json.dumps(st))
    else:
        for name, state in st.items():
            click.echo(f"{name:14} {state}")
    if any(state in ("outdated", "missing") or state.startswith("interpreter") for state in st.values()):
        click.echo(f"hint: `zmem hooks install` installs them to run this zmem ({sys.executable})", err=True)


PAYLOAD_LIMIT = 64 * 1024 * 1024  # bytes: a hook's JSON is a few hundred; PostToolUse's may hold a big file


def _payload() -> str:
    """The hook's JSON from stdin, read up to PAYLOAD_LIMIT: an endless or huge stdin (`yes |`) is
    refused instead of read into memory until the machine runs out."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text-only stream (an embedding program)
        return sys.stdin.read(PAYLOAD_LIMIT + 1)
    data = stream.read(PAYLOAD_LIMIT + 1)
    if len(data) > PAYLOAD_LIMIT:
        raise ZmemError(f"standard input holds more than {PAYLOAD_LIMIT // 1048576} MiB: not a hook's JSON payload",
                        hint="pipe the hook's JSON only, e.g. echo '{\"hook_event_name\": \"SessionStart\"}' "
                             "| zmem hook claude-code")
    return data.decode("utf-8", "replace")


# every hook git runs (githooks(5)): the installed ones are post-commit, post-merge, post-checkout
# and post-rewrite, and a hand-written hook may call `zmem hook` under any of these names
_GIT_HOOKS = frozenset((
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
    "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
    "pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
    "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
    "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
    "post-index-change"))


@click.command("hook")
@click.argument("name")
@click.argument("args", nargs=-1)
@scope_option("claude-code, codex: the SessionStart context's scope (group leaves MEMORY.md out).")
@click.option("--budget", type=Count(1, None), default=None, metavar="CHARS",
              help="claude-code, codex: the SessionStart context's size at most (default 8000).")
@click.pass_context
def hook(ctx, name, args, scope, budget):
    """Run by hooks: git's (NAME post-commit, …) and agents' (NAME claude-code or codex).

    Git: catch up the index after NAME. Never fails the git command and prints nothing on success;
    a large change is indexed by a detached process so git returns at once. Problems go to
    .zmem/hook.log.

    claude-code, codex: read the hook's JSON on stdin. SessionStart prints the session-start context
    (`zmem context`) as {"hookSpecificOutput": {"hookEventName", "additionalContext"}};
    PreCompact, PostCompact, SessionEnd, Stop and SubagentStop index the session's transcript in
    the background ([sessions] must cover its folder); other events do nothing. Always exits 0, so
    the agent's session goes on: a problem is `zmem:` and `hint:` lines on stderr. Set it up with
    `zmem -C ~/memory hook claude-code` as the hook command (docs/agent-hooks.md).
    """
    from zmem.hookrun import AGENT_HOOKS, run_hook
    if name not in AGENT_HOOKS:
        if name not in _GIT_HOOKS:  # a typo in an agent's hook command ran a silent catch-up
            import difflib
            close = difflib.get_close_matches(name.lower(), [*AGENT_HOOKS, *_GIT_HOOKS], n=1, cutoff=0.5)
            raise ZmemError(f"unknown hook {name!r}: not an agent's (claude-code, codex) nor a git hook's name",
                            hint=(f"did you mean `zmem hook {close[0]}`? " if close else "")
                            + "agents' hooks run `zmem hook claude-code` or `zmem hook codex`")
        run_hook(ctx.obj.get("dir"), name, list(args))
        return
    if sys.stdin is None or sys.stdin.isatty():  # a person typing it: say what it expects (exit 1)
        raise ZmemError(f"`zmem hook {name}` reads the JSON its hook gets on stdin",
                        hint=f'e.g. echo \'{{"hook_event_name": "SessionStart"}}\' | zmem hook {name}')
    from zmem.hookrun import agent_hook
    try:
        res = agent_hook(ctx.obj.get("dir"), name, _payload(), scope=scope, budget=budget)
    except Exception as e:  # noqa: BLE001 - an agent's hook never fails its session
        import os
        if os.environ.get("ZMEM_DEBUG") and not isinstance(e, ZmemError):
            raise
        report(ctx, e)
        return
    for note in res.notes:
        warn(note)
    if res.stdout:
        echo(res.stdout)
