"""`zmem append`: a note or a Retain fact into today's daily log, committed."""
from __future__ import annotations

import sys

import click

from zmem.errors import ZmemError
from zmem.text.kinds import KINDS
from zmem.cli.terminal import echo, echo_json
from zmem.cli.common import _memory, json_option, warn


@click.command()
@click.argument("text", nargs=-1, required=True)
@click.option("--retain", type=click.Choice(list(KINDS), case_sensitive=False), default=None,
              help="Add it as a typed fact under ## Retain: W world, B experience, O opinion, S observation, "
                   "R relation (TEXT is `@Subject predicate @Object`).")
@click.option("--entity", "entities", multiple=True, metavar="NAME", help="An entity the entry is about (repeatable).")
@click.option("--confidence", type=click.FloatRange(0, 1), default=None, help="Confidence in [0, 1] of an opinion (--retain O).")
@click.option("--no-commit", is_flag=True, help="Write the file but do not commit it.")
@json_option("Print a JSON object describing what was written.")
@click.pass_context
def append(ctx, text, retain, entities, confidence, no_commit, as_json):
    """Append TEXT to today's daily log (memory/YYYY-MM-DD.md) and commit it.

    Plain notes go under `## Notes`; with --retain, a fact such as `- O(c=0.9) @Peter: …` goes under
    `## Retain`. The file is created when missing. Concurrent appends queue and lose nothing. TEXT
    `-` reads the text from standard input.
    """
    body = _stdin_text() if text == ("-",) else " ".join(text)
    mem = _memory(ctx)
    out = mem.append(body, retain=retain, entities=entities, confidence=confidence, commit=not no_commit)
    for w in out.warnings:
        warn(w)
    if as_json:
        echo_json(out.to_json(), indent=None)
    else:
        echo(f"{out.citation}  {out.text}" + (f"  (committed {out.commit[:10]})" if out.committed else ""))


def _stdin_text() -> str:
    """Standard input as text, refused unless it is UTF-8, as an argument is (ZmemGroup.make_context): read
    with the locale's decoder, bytes that are not UTF-8 became U+FFFD in the reply or surrogates in the
    note, and a note that is not UTF-8 makes every later command warn about its file."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # replaced by a text-only stream (an embedding program): already decoded
        return sys.stdin.read()
    raw = stream.read()
    try:  # universal newlines, as the text stream reads them; a leading byte order mark (what Windows
        # tools such as PowerShell write first) is no part of the note, as decode_note drops it from a file
        return raw.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise ZmemError(f"standard input is not valid UTF-8: byte {raw[e.start]:#04x} at offset {e.start} "
                        f"(line {line}); nothing was written",
                        hint="convert it first, e.g. `iconv -f latin1 -t utf-8 FILE | zmem append -`") from None
