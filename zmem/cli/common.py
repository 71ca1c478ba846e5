"""What the command modules share: option decorators and parameter types, the command's Memory,
warnings, progress and errors on stderr. (app.py holds the root group and the error handler.)"""
from __future__ import annotations

import functools
import math
import sys

import click

from zmem.errors import CommandLine, describe
from zmem.text.kinds import KINDS
from zmem.cli.terminal import for_stderr, settle_stdout

BUG_HINT = "this is a bug in zmem; rerun with ZMEM_DEBUG=1 for the traceback and report it"


def report(ctx, e: BaseException):
    """Say a failure as `zmem: message` and `hint: ...` on stderr, parameters named as flags
    (errors.describe says what); the Problem, whose exit_code the caller exits with or not."""
    problem = describe(e, CommandLine(functools.partial(_flags, ctx)))
    settle_stdout()
    say(problem.message, BUG_HINT if problem.bug else problem.hint)
    return problem


def say(message: str, hint: str) -> None:
    click.echo(f"zmem: {for_stderr(message)}", err=True)
    if hint:
        click.echo(f"hint: {for_stderr(hint)}", err=True)


def _flags(ctx, command: str | None) -> dict[str, str]:
    """Library parameter name -> its option (longest spelling) or an argument's name, from the
    click definitions of `command` ("model import"), or of the command that ran when None (every
    subcommand of a group: the one that ran is not known once its context is gone); then `zmem`'s own."""
    root = ctx.find_root().command
    if command is None:
        ran = root.get_command(ctx, ctx.invoked_subcommand) if ctx.invoked_subcommand else None
        commands = [ran, *getattr(ran, "commands", {}).values()] if ran else []
    else:
        found = root
        for name in command.split():
            found = found.get_command(ctx, name) if isinstance(found, click.Group) else None
        commands = [found] if found else []
    flags: dict[str, str] = {}
    for cmd in [*commands, root]:
        for p in cmd.params:
            option = isinstance(p, click.Option)
            flags.setdefault(p.name, max(p.opts, key=len) if option else p.human_readable_name)
    return flags



class Count(click.IntRange):
    """A whole number in a range, whose usage errors say so plainly ("'abc' is not a valid integer", "0 is
    not between 1 and 1000", "0 is less than 1"), where click's IntRange says "not a valid integer range"
    and shows the metavar INTEGER RANGE."""
    name = "integer"

    def convert(self, value, param, ctx):
        number = click.INT.convert(value, param, ctx)
        if (self.min is not None and number < self.min) or (self.max is not None and number > self.max):
            self.fail(f"{number} is less than {self.min}." if self.max is None else
                      f"{number} is not between {self.min} and {self.max}.", param, ctx)
        return number


class Seconds(click.FloatRange):
    """A number of seconds in a range, and a real one: `nan` and `inf` (which float() reads and a
    FloatRange lets through, since no comparison with NaN is true) are usage errors naming the option."""

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number of seconds.", param, ctx)
        return rv


class Interval(click.ParamType):
    """A duration: seconds, or a number with s, m or h (`90`, `60s`, `5m`, `1h`), at least 1 s."""
    name = "interval"
    UNITS = {"s": 1, "m": 60, "h": 3600}

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            return float(value)
        text = str(value).strip().lower()
        unit = self.UNITS.get(text[-1:], None)
        try:
            seconds = float(text[:-1] if unit else text) * (unit or 1)
        except ValueError:
            seconds = math.nan
        if not math.isfinite(seconds) or seconds < 1:
            self.fail(f"{value!r} is not an interval of at least 1 s (e.g. 60s, 5m, 1h).", param, ctx)
        return seconds


KIND_CHOICES = [*KINDS.values(), *KINDS]  # a kind by name or by its one-letter code


def warn(message: str) -> None:
    click.echo(f"warning: {for_stderr(message)}", err=True)


def _progress(label: str):
    """A progress callback for stderr when it is a terminal (agents read transcripts: no noise)."""
    if not sys.stderr.isatty():
        return None

    def report(done: int, total: int) -> None:
        if done == total or done % 50 == 0:
            click.echo(f"\r{label}: {done}/{total}", err=True, nl=done == total)
    return report


def _memory(ctx, directory=None, start_watcher=True):
    """The command's zmem.Memory (of -C DIR, or directory), closed when the command ends. Its freshness
    check may start a watcher (watch.auto): only reading commands run that check (Memory.fresh)."""
    from zmem.memory import Memory
    mem = ctx.with_resource(Memory.open(directory or ctx.obj.get("dir"), start_watcher=start_watcher))
    if start_watcher:
        ctx.call_on_close(functools.partial(_announce_watcher, mem))  # (before the Memory closes)
    return mem


def _announce_watcher(mem) -> None:
    from zmem.cli.watchnote import watcher_note
    said = watcher_note(mem)
    if said:
        click.echo(f"note: {for_stderr(said)}", err=True)


SCOPE_CHOICE = click.Choice(["private", "group"])


def json_option(help: str = "Print a JSON object."):
    return click.option("--json", "as_json", is_flag=True, help=help)


def format_option(default: str):
    """--format text|table|json|md, and --json for --format json."""
    def decorate(f):
        f = json_option("Same as --format json.")(f)
        return click.option("--format", "fmt", type=click.Choice(["text", "table", "json", "md"]), default=default,
                            show_default=True, help="Output format.")(f)
    return decorate


def scope_option(help: str):
    return click.option("--scope", type=SCOPE_CHOICE, default="private", show_default=True, help=help)


def _one_line(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[:n - 1] + "…"
