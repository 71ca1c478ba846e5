"""Printing note text: escaped for a terminal, the file's characters unchanged for a pipe.

A note may hold escape sequences (clear the screen, set the window title, hide text, rewrite the
clipboard): on a terminal they would act instead of showing. So when stdout is a terminal, every
control character but tab and newline is shown as `\\xNN` (C0, DEL, and the C1 range U+0080-U+009F
with U+009B, the one-character CSI), and the bidirectional embeddings, overrides and isolates
(U+202A-U+202E, U+2066-U+2069), which reorder what follows them on the screen ("Trojan Source"),
as `\\uNNNN`. The marks U+200E, U+200F and U+061C stay: right-to-left text needs them and they
cannot hide anything. Warnings and errors on a terminal's stderr are escaped alike. When stdout is
not a terminal nothing is changed, not even colour codes (click.echo would strip them):
`zmem get FILE > copy` keeps the file's lines.
"""
from __future__ import annotations

import json
import re
import sys

from zmem.text.lazyre import LazyPattern

# used for terminals only: output to a pipe (an agent's) never compiles it (~0.7 ms)
_UNSAFE = LazyPattern("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text: str) -> str:
    """text with every character that could act on a terminal shown as an escape instead."""
    return _UNSAFE.sub(_escape, text)


def _json_escape(m: re.Match) -> str:
    return f"\\u{ord(m.group()):04x}"


def stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


def for_stderr(text: str) -> str:
    """A message for stderr (warnings and errors quote notes, file names and symlink targets):
    escaped when stderr is a terminal."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    return visible(text) if tty else text


class Bold(str):
    """A part of a line echo() prints in bold on a terminal (plain when piped)."""


def echo(*parts: str, nl: bool = True) -> None:
    """Print parts as one line of stdout: on a terminal with visible() escapes (and Bold parts in
    bold), otherwise exactly as given."""
    import click  # here, not at import: the entry point's plain recall prints without click (cli/entry.py)
    if stdout_is_terminal():
        line = "".join(click.style(visible(p), bold=True) if isinstance(p, Bold) else visible(p) for p in parts)
    else:
        line = "".join(parts)
    click.echo(line, nl=nl, color=True)  # color=True: click strips nothing, a pipe gets the note's own bytes


def echo_table(rows, headers: list[str], numeric: tuple[int, ...] = ()) -> None:
    """rows as a table; on a terminal each cell escaped before the columns are measured, so the
    escapes keep them aligned. Only the numeric columns are read as numbers (right-aligned): in any
    other a commit id such as 2425273e94 or a note saying 1e10 is text, not 2.42527e+100."""
    from zmem.cli.table import simple_table
    if stdout_is_terminal():
        rows = [[visible(str(c)) for c in row] for row in rows]
    echo(simple_table(rows, headers, numeric))


def echo_json(data, indent: int | None = 2) -> None:
    """data as JSON: the same value either way, but on a terminal the characters
    visible() escapes are written as \\uNNNN escapes (json leaves C1 and bidi controls raw)."""
    import click
    text = json.dumps(data, ensure_ascii=False, indent=indent)
    click.echo(_UNSAFE.sub(_json_escape, text) if stdout_is_terminal() else text, color=True)


def settle_stdout() -> None:
    """Before an error exit: flush stdout, and when that fails (a full disk, a reader gone) point it at
    /dev/null, so that the interpreter's own flush at exit cannot fail again after zmem has said what
    went wrong (with a buffered stdout it printed "Exception ignored ... OSError" and exited 120)."""
    import os
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
