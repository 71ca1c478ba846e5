"""Click commands only: parse -> call the library -> render -> exit code. Here: the root group `zmem`,
the one error handler and main; the commands are in zmem/cli/commands/, a module per command group,
and what they share (option decorators, parameter types, the command's Memory) in zmem/cli/common.py."""
from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path

import click

from zmem import __version__
from zmem.errors import ExitCode, ZmemError
from zmem.cli.terminal import settle_stdout
from zmem.cli.common import report, say, warn  # noqa: F401 - zmem.cli.entry says the plain recall's warnings with warn
from zmem.cli.commands import (append, facts, history, hooks, index, mcp, model, recall, status, sync, watch,
                               workspace)

EXIT_CODES_HELP = "Exit codes: 0 ok, 1 expected error (with a hint), 2 usage, 3 internal bug, 130 interrupted."


def _usage_exit(e: click.UsageError, ctx):
    """Bad arguments or an unknown command: the same two-line shape as other errors, exit 2."""
    where = e.ctx.command_path if e.ctx is not None else ctx.command_path if ctx is not None else "zmem"
    click.echo(f"zmem: {e.format_message()}", err=True)
    option = getattr(e, "option_name", "") or ""
    if isinstance(e, click.NoSuchOption) and re.match(r"-\.?\d", option):
        # text that starts with a minus sign ("-5 degrees"), not an option: after `--` it is text
        text = next((a for a in sys.argv[1:] if a.startswith(option)), option)
        click.echo(f"hint: put `--` before text that starts with `-`: {where} -- {_quoted(text)}", err=True)
    else:
        click.echo(f"hint: see `{where} --help` for the arguments and options", err=True)
    raise click.exceptions.Exit(int(ExitCode.USAGE))


def _quoted(arg: str) -> str:
    import shlex
    return shlex.quote(arg)


class ZmemGroup(click.Group):
    """Turns library errors into `zmem: message` + `hint: ...` and documented exit codes."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            # bytes that are not UTF-8 reach Python as lone surrogates: SQLite cannot take them and
            # a note must not be written with them
            bad = next((a for a in args if isinstance(a, str) and re.search("[\udc80-\udcff]", a)), None)
            if bad is not None:
                raise click.UsageError(f"an argument is not valid UTF-8: {bad.encode('utf-8', 'surrogateescape')!r}")
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as e:  # an option of `zmem` itself, or the check above
            _usage_exit(e, None)

    def invoke(self, ctx):
        with _error_handler(ctx):
            return super().invoke(ctx)


@contextlib.contextmanager
def _error_handler(ctx):
    """The command line's one error handler: every failure as `zmem: message` and `hint: ...` on
    stderr with its documented exit code, parameters named as flags (errors.describe says what)."""
    try:
        yield
    except (click.exceptions.Exit, click.exceptions.Abort):
        raise
    except click.UsageError as e:
        _usage_exit(e, ctx)
    except click.ClickException as e:
        say(e.format_message(), f"see `{ctx.command_path} --help`")
        raise click.exceptions.Exit(e.exit_code)
    except BrokenPipeError:
        settle_stdout()
        sys.stderr.close()  # the reader went away (e.g. `| head`); nothing left to say
        raise click.exceptions.Exit(0)
    except (Exception, KeyboardInterrupt) as e:
        if os.environ.get("ZMEM_DEBUG") and not isinstance(e, (ZmemError, KeyboardInterrupt)):
            raise  # a bug (or the index failing): one line, the traceback only on request
        raise click.exceptions.Exit(report(ctx, e).exit_code)


@click.group(cls=ZmemGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=EXIT_CODES_HELP)
@click.option("-C", "directory", type=click.Path(file_okay=False), metavar="DIR",
              help="Workspace directory (default: $ZMEM_WORKSPACE, else the nearest enclosing workspace).")
@click.version_option(__version__, "-V", "--version", prog_name="zmem")
@click.pass_context
def cli(ctx, directory):
    """zmem: a git-native memory for AI agents.

    Memory is Markdown in a git repository (MEMORY.md, memory/YYYY-MM-DD.md, bank/); zmem keeps a
    derived SQLite index fresh from git and answers recall with exact path#Lstart-Lend citations.
    """
    ctx.ensure_object(dict)
    ctx.obj["dir"] = directory


# the commands, a module per group (zmem/cli/commands/), in the order `zmem --help` used to define them
for command in (workspace.init, workspace.demo, index.index, index.embed, index.trust, model.model, recall.recall,
                recall.get, recall.context, append.append, facts.facts, facts.entity, facts.graph, facts.opinions, facts.reflect,
                history.blame_cmd, history.log_cmd, history.diff_cmd, watch.watch_cmd, sync.sync_cmd, mcp.mcp_cmd,
                status.status, status.doctor, hooks.hooks, hooks.hook):
    cli.add_command(command)


# ----------------------------------------------------------------------------- completion


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell):
    """Print the completion script for SHELL.

    bash: `zmem completion bash > ~/.local/share/bash-completion/completions/zmem`;
    zsh: `zmem completion zsh > "${fpath[1]}/_zmem"`; fish: `zmem completion fish > ~/.config/fish/completions/zmem.fish`.
    """
    from zmem.cli.completion import render_completion
    click.echo(render_completion(cli, shell, prog="zmem"), nl=False)


def main() -> None:
    prog = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "zmem"
    cli(prog_name="git zmem" if prog == "git-zmem" else "zmem")
