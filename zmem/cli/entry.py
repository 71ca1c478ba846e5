"""The `zmem` entry point. Agents run one process per recall, and `import click` with the command
definitions is ~25-30 ms of the ~130 ms such a process spends: the plainest recall, `zmem [-C DIR]
recall WORDS... [--json] [-k N]` printed to a pipe, is answered here without click. Everything else goes
to the click command line (cli/app.py, the commands in cli/commands/), which stays the one place
arguments, --help and errors are defined: any option, a word starting with `-`, a terminal, an error,
all take that path, so what a user sees there is unchanged; this path prints exactly what the click command prints for the same
arguments (tests/cli/test_entry.py compares them)."""
from __future__ import annotations

import os
import sys


def main() -> None:
    try:
        plain = plain_recall(sys.argv[1:])
        if plain is None:
            from zmem.cli.app import main as click_main  # ~80 ms of imports a Ctrl-C can land in
    except KeyboardInterrupt:  # what the command line says of it (errors.describe), before it is loaded
        sys.stderr.write("zmem: interrupted\n")
        sys.exit(130)
    if plain is None:
        click_main()
        return
    sys.exit(_recall(*plain))


def plain_recall(args: list[str]) -> tuple[str | None, list[str], bool, int | None] | None:
    """(-C DIR or None, the query words, --json, -k N or None) when args are a recall this module
    answers the way the click command would: only words, --json, one `-k N`/`--k N` with N a plain
    number from 1 to 1000, and a leading -C naming a directory; stdout and stderr pipes or files in
    UTF-8 on a POSIX system (click writes to such a stream as it is). None for anything else."""
    directory = None
    if args[:1] == ["-C"] and len(args) > 2:
        directory, args = args[1], args[2:]
        if not os.path.isdir(directory):  # click's checks and messages for the rest
            return None
    if args[:1] != ["recall"]:
        return None
    words: list[str] = []
    as_json, k = False, None
    rest = iter(args[1:])
    for a in rest:
        if a == "--json":
            as_json = True
        elif a in ("-k", "--k") and k is None:
            n = next(rest, "")
            if not (n.isascii() and n.isdigit() and n[0] != "0" and int(n) <= 1000):
                return None
            k = int(n)
        # a word starting with `-` is an option (or `--`) to click; a lone surrogate is refused there
        elif not a or a.startswith("-") or any("\udc80" <= c <= "\udcff" for c in a):
            return None
        else:
            words.append(a)
    if not words:
        return None
    if os.name != "posix" or not all(_plain_stream(s) for s in (sys.stdout, sys.stderr)):
        return None
    return directory, words, as_json, k


def _plain_stream(stream) -> bool:
    import codecs
    try:
        return (not stream.isatty() and stream.errors is not None
                and codecs.lookup(stream.encoding).name == "utf-8")
    except (AttributeError, ValueError, LookupError, TypeError):  # replaced, closed, no encoding
        return False


def _recall(directory: str | None, words: list[str], as_json: bool, k: int | None) -> int:
    """The click command `recall` with its defaults, printed as it prints to a pipe; the exit code."""
    try:
        from zmem.memory import Memory
        with Memory.open(directory, start_watcher=True) as mem:
            mem.check_ahead()  # the stat sweep in a child process, on the other core, while this one searches
            res = _recall_once(mem, words, k)
            if not mem.confirmed():  # something changed: caught up now, asked again
                res = _recall_once(mem, words, k)
            if as_json:
                import json
                out = json.dumps(res.to_json(), ensure_ascii=False, indent=2) + "\n"
            else:
                from zmem.cli.render import hit_lines
                out = "".join("".join(parts) + "\n" for h in res.results for parts in hit_lines(h))
            from zmem.cli.watchnote import watcher_note
            note = watcher_note(mem)
    except KeyboardInterrupt as e:
        return _failed(e)
    except Exception:  # nothing printed yet: the click command line runs it again and says what it says
        from zmem.cli.app import main as click_main
        click_main()
        return 0
    try:
        if res.warnings or not (out or as_json):
            from zmem.cli.app import warn
            for w in res.warnings:
                warn(w)
            if not res.results and not as_json:
                import click
                click.echo("no results", err=True)
        sys.stdout.write(out)
        sys.stdout.flush()
        if note:
            from zmem.cli.terminal import for_stderr
            sys.stderr.write(f"note: {for_stderr(note)}\n")
    except BrokenPipeError:
        from zmem.cli.terminal import settle_stdout
        settle_stdout()
        sys.stderr.close()  # the reader went away (e.g. `| head`), as the click command line does
        return 0
    except (Exception, KeyboardInterrupt) as e:
        if os.environ.get("ZMEM_DEBUG") and not isinstance(e, KeyboardInterrupt):
            raise
        return _failed(e)
    return 0


def _recall_once(mem, words: list[str], k: int | None):
    return mem.recall(" ".join(words), k=k, since=None, until=None, path=None, max_chars=None, mode=None,
                      explain=False, kind=None, entity=None, as_of=None, scope="private", source=None, rerank=None)


def _failed(e: BaseException) -> int:
    """An interruption or a failure while printing, said as the click command line says it."""
    from zmem.cli.common import BUG_HINT, say
    from zmem.cli.terminal import settle_stdout
    from zmem.errors import CommandLine, describe
    problem = describe(e, CommandLine(lambda command: {}))  # neither names a parameter
    settle_stdout()
    say(problem.message, BUG_HINT if problem.bug else problem.hint)
    return problem.exit_code
