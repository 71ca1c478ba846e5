"""Errors a user can cause, as data: what went wrong, the parameter involved and a hint, with an
exit code. A message names a parameter by its library name (`arg("as_of")`) and each front end
renders it in its own terms: the command line as a flag (`--as-of`), the MCP server as the tool's
parameter (`as_of`). `describe` turns any exception into the lines a front end shows, in one place.
No click in here."""
from __future__ import annotations

import enum
import errno
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass


class ExitCode(enum.IntEnum):
    OK = 0
    ERROR = 1        # expected error: message + hint
    USAGE = 2        # bad command line (click's own code)
    BUG = 3          # unexpected exception inside zmem
    INTERRUPTED = 130


# A parameter mention inside a message: JSON between two NULs. JSON never holds a raw NUL, and a
# command line cannot, so a mention is found exactly; it is rendered before anyone reads it.
_MARK = "\x00"
_MENTION = re.compile(_MARK + "(.*?)" + _MARK)


def arg(name: str, *value) -> str:
    """The parameter `name` (its library name), optionally with a value, for a message or a hint:
    `--confidence 0.8` on the command line, `confidence=0.8` over MCP."""
    return _mention(["arg", name, *value])


def example(command: str, **params) -> str:
    """A call of `command` with these parameters, in order, for a hint: `zmem recall --entity Peter
    "where"` on the command line, `entity="Peter", query="where"` over MCP."""
    return _mention(["example", command, list(params.items())])


def _mention(parts: list) -> str:
    return _MARK + json.dumps(parts, ensure_ascii=False) + _MARK


TRY_AGAIN = _mention(["again"])  # "run the command again", "call the tool again"


class Surface:
    """How a front end names parameters. This one writes them as named arguments, as the Python
    API (and, with its own names, the MCP server) takes them: `as_of="2025-11-30"`."""

    again = "call it again"

    def __init__(self, names: dict[str, str] | None = None):
        self.names = names or {}  # library name -> this front end's, where they differ

    def name(self, param: str, *value) -> str:
        """The parameter, or the parameter given that value: `as_of`, `as_of="2025-11-30"`."""
        name = self.names.get(param, param)
        return f"{name}={json.dumps(value[0], ensure_ascii=False)}" if value else name

    def example(self, command: str, params: list[tuple[str, object]]) -> str:
        return ", ".join(self.name(p, v) for p, v in params)


LIBRARY = Surface()


class CommandLine(Surface):
    """Parameters as the command line takes them. flags(command) maps each library name to its
    option (`--as-of`) or, for an argument, its name (`QUERY`), for `command` ("recall", "model
    import"), or for the running command when None; it comes from the click definitions."""

    again = "run the command again"

    def __init__(self, flags: Callable[[str | None], dict[str, str]], prog: str = "zmem"):
        super().__init__()
        self.flags, self.prog = flags, prog

    def name(self, param: str, *value, command: str | None = None) -> str:
        """`--as-of`, `--as-of 2025-11-30`, `--entity A --entity B`, `--force` (True), `--no-commit`
        (commit False), `QUERY` or `"where"` (an argument)."""
        flags = self.flags(command)
        if value == (False,) and f"no_{param}" in flags:
            return flags[f"no_{param}"]
        option = flags[param] if param in flags else "--" + param.replace("_", "-")
        if not option.startswith("-"):  # an argument
            return f'"{value[0]}"' if value else option
        if not value or value[0] is True:
            return option
        values = value[0] if isinstance(value[0], (list, tuple)) else value
        return " ".join(f"{option} {v}" for v in values)

    def example(self, command: str, params: list[tuple[str, object]]) -> str:
        return " ".join([self.prog, command] + [self.name(p, v, command=command) for p, v in params])


def render(text: str, surface: Surface = LIBRARY) -> str:
    """A message or hint with its parameter mentions written for `surface`."""
    if not isinstance(text, str) or _MARK not in text:
        return text

    def one(m: re.Match) -> str:
        try:
            kind, *rest = json.loads(m.group(1))
            if kind == "arg":
                return surface.name(*rest)
            if kind == "example":
                return surface.example(rest[0], [tuple(p) for p in rest[1]])
            if kind == "again":
                return surface.again
        except (ValueError, TypeError, IndexError):
            pass
        return m.group(0)  # not a mention: a NUL in some text the message quotes
    return _MENTION.sub(one, text)


class ZmemError(Exception):
    """An error the user can act on: what went wrong (message), the parameter involved (param, a
    library name such as "as_of"; None when none is) and what to do (hint). Messages and hints
    mention parameters with arg() and example(); `message` and `hint` read them as the Python API
    names them, render(surface) as a front end does."""

    exit_code = ExitCode.ERROR

    def __init__(self, message: str, hint: str = "", exit_code: int | None = None, *, param: str | None = None):
        super().__init__(render(message))
        self._message, self._hint = message, hint
        self.param = param
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        return render(self._message)

    @property
    def hint(self) -> str:
        return render(self._hint)

    def render(self, surface: Surface) -> tuple[str, str]:
        """(message, hint) as `surface` names the parameters."""
        return render(self._message, surface), render(self._hint, surface)


class WorkspaceError(ZmemError):
    """No workspace, bare repository, path outside the memory sources."""


class IndexUnusable(ZmemError):
    """The index cannot be used: newer schema, damaged file, lock held, not writable."""


class IndexBusy(IndexUnusable):
    """Another process holds a lock on the index: trying again may succeed."""


class ConfigError(ZmemError):
    """zmem.toml or user config is invalid."""


@dataclass
class Problem:
    """What a front end says about a failure: `zmem: message`, `hint: hint`, and its exit code.
    bug: an unexpected exception (the front end adds where its traceback went)."""

    message: str
    hint: str
    exit_code: int
    param: str | None = None
    bug: bool = False


def is_sqlite_error(e: BaseException) -> bool:
    """SQLite's own exceptions (stdlib or pysqlite3): the derived index failed, not the notes."""
    return type(e).__module__.startswith(("sqlite3", "pysqlite3"))


def cwd_error(e: OSError | None = None) -> WorkspaceError:
    """The current directory is gone (or unusable): anything that needed it fails with this."""
    gone = e is None or e.errno == errno.ENOENT
    what = "the current directory no longer exists" if gone else f"the current directory cannot be used: {e.strerror or e}"
    return WorkspaceError(what, hint="cd to an existing directory, or pass the workspace with -C DIR")


def _cwd_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    except OSError:
        pass
    return False


def describe(e: BaseException, surface: Surface = LIBRARY) -> Problem:
    """Any exception as the two lines every front end shows, parameters named for `surface`."""
    if isinstance(e, FileNotFoundError) and _cwd_gone():  # anything that needed the current directory
        e = cwd_error()
    if isinstance(e, ZmemError):
        message, hint = e.render(surface)
        return Problem(message, hint, int(e.exit_code), e.param)
    if isinstance(e, KeyboardInterrupt):
        return Problem("interrupted", "", int(ExitCode.INTERRUPTED))
    if is_sqlite_error(e):  # the index is derived: rebuild it
        return Problem(f"the index could not be used: {e}", "run `zmem index --full` to rebuild it from the Markdown files",
                       int(ExitCode.ERROR))
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):  # e.g. output to a full disk
        return Problem(f"cannot write: {e.strerror or e}", "the disk is full or a size limit was reached (`df -h`, "
                       "`ulimit -f`); free some space, then run it again", int(ExitCode.ERROR))
    return Problem(f"internal error: {type(e).__name__}: {e}", "", int(ExitCode.BUG), bug=True)
