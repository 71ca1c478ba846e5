"""Click commands only: parse -> call the library -> render -> exit code."""
from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path

import click

from zmem import __version__
from zmem.errors import ExitCode, ZmemError
from zmem.terminal import Bold, echo, echo_json, echo_table, for_stderr

EXIT_CODES_HELP = "Exit codes: 0 ok, 1 expected error (with a hint), 2 usage, 3 internal bug, 130 interrupted."


def _usage_exit(e: click.UsageError, ctx):
    """Bad arguments or an unknown command: the same two-line shape as other errors, exit 2."""
    where = e.ctx.command_path if e.ctx is not None else ctx.command_path if ctx is not None else "zmem"
    click.echo(f"zmem: {e.format_message()}", err=True)
    click.echo(f"hint: see `{where} --help` for the arguments and options", err=True)
    raise click.exceptions.Exit(int(ExitCode.USAGE))


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
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except click.UsageError as e:
            _usage_exit(e, ctx)
        except click.ClickException as e:
            click.echo(f"zmem: {e.format_message()}", err=True)
            click.echo(f"hint: see `{ctx.command_path} --help`", err=True)
            raise click.exceptions.Exit(e.exit_code)
        except ZmemError as e:
            click.echo(f"zmem: {for_stderr(e.message)}", err=True)
            if e.hint:
                click.echo(f"hint: {for_stderr(e.hint)}", err=True)
            raise click.exceptions.Exit(int(e.exit_code))
        except KeyboardInterrupt:
            click.echo("zmem: interrupted", err=True)
            raise click.exceptions.Exit(int(ExitCode.INTERRUPTED))
        except BrokenPipeError:
            sys.stderr.close()  # the reader went away (e.g. `| head`); nothing left to say
            raise click.exceptions.Exit(0)
        except Exception as e:
            if isinstance(e, FileNotFoundError) and _cwd_gone() and not os.environ.get("ZMEM_DEBUG"):
                from zmem.workspace import cwd_error  # anything that needed the current directory
                err = cwd_error()
                click.echo(f"zmem: {err.message}", err=True)
                click.echo(f"hint: {err.hint}", err=True)
                raise click.exceptions.Exit(int(ExitCode.ERROR))
            if type(e).__module__.startswith(("sqlite3", "pysqlite3")) and not os.environ.get("ZMEM_DEBUG"):
                click.echo(f"zmem: the index could not be used: {e}", err=True)  # it is derived: rebuild it
                click.echo("hint: run `zmem index --full` to rebuild it from the Markdown files", err=True)
                raise click.exceptions.Exit(int(ExitCode.ERROR))
            if os.environ.get("ZMEM_DEBUG"):  # a bug: one line, the traceback only on request
                raise
            click.echo(f"zmem: internal error: {type(e).__name__}: {e}", err=True)
            click.echo("hint: this is a bug in zmem; rerun with ZMEM_DEBUG=1 for the traceback and report it",
                       err=True)
            raise click.exceptions.Exit(int(ExitCode.BUG))


class Seconds(click.FloatRange):
    """A number of seconds in a range, and a real one: `nan` and `inf` (which float() reads and a
    FloatRange lets through, since no comparison with NaN is true) are usage errors naming the option."""

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number of seconds.", param, ctx)
        return rv


def _cwd_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    except OSError:
        pass
    return False


KIND_CHOICES = ["world", "experience", "opinion", "observation", "relation", "W", "B", "O", "S", "R"]


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


def _workspace(ctx):
    from zmem.workspace import find_workspace
    return find_workspace(ctx.obj.get("dir"))


def _catch_up(ws, *, quiet: bool = False) -> tuple[list[str], bool]:
    """Catch up before a command that reads the index or just wrote a note: (warnings, stale)."""
    from zmem.indexer import catch_up
    result = catch_up(ws, progress=None if quiet else _progress("indexing"))
    return result.warnings, result.stale


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


# ----------------------------------------------------------------------------- workspace


@cli.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--no-hooks", is_flag=True, help="Do not install the git hooks.")
@click.pass_context
def init(ctx, directory, no_hooks):
    """Make DIR (default: -C or the current directory) a zmem workspace.

    Runs `git init` if needed, creates MEMORY.md, memory/, bank/ and a commented zmem.toml without
    overwriting anything, ignores .zmem/, installs the git hooks and builds the index. Running it
    again changes nothing.
    """
    from zmem.indexer import catch_up
    from zmem.scaffold import init_layout, own_command
    from zmem.workspace import find_workspace
    from zmem.workspace import current_dir
    root = Path(directory or ctx.obj.get("dir") or ".")
    if not root.expanduser().is_absolute():
        current_dir()  # a relative directory needs the current one: say so if it was deleted
    report = init_layout(root)
    ws = find_workspace(report.root)
    if report.git_init:
        click.echo(f"initialized a git repository in {report.root}")
    for rel in report.created:
        click.echo(f"created {rel}")
    if report.gitignore_updated:
        click.echo("added .zmem/ to .gitignore")
    if report.gitattributes_updated:
        click.echo("added `memory/**/*.md merge=union` to .gitattributes (daily logs merge without conflicts)")
    for note in report.skipped:
        warn(note)
    if not no_hooks:
        _install_hooks(ws.root, quiet_if_unchanged=True)
    result = catch_up(ws, progress=_progress("indexing"))
    for w in result.warnings:
        warn(w)
    click.echo(f"workspace ready: {ws.root} ({_count_files(ws)} memory files indexed)")
    if report.created:
        zmem = own_command()[0]
        click.echo(f'next: git add -A && git commit -m "zmem workspace", then: {zmem} append "…" / {zmem} recall "…"')


def _count_files(ws) -> int:
    from zmem.indexer import open_index
    conn = open_index(ws)
    try:
        return conn.execute("SELECT count(*) FROM files").fetchone()[0]
    finally:
        conn.close()


@cli.command()
@click.argument("directory", required=False, default="zmem-demo", type=click.Path(file_okay=False))
def demo(directory):
    """Create an example workspace in DIR (default ./zmem-demo), index it, and recall from it.

    The example is a git repository of daily logs in English, Portuguese, Spanish and Chinese with
    one commit per day; the hooks are installed, so it behaves like a real workspace afterwards.
    """
    from zmem.indexer import catch_up, open_index
    from zmem.scaffold import DEMO_QUERIES, own_command, write_demo
    from zmem.search import recall
    from zmem.workspace import find_workspace
    root = Path(directory)
    written = write_demo(root)
    ws = find_workspace(root)
    _install_hooks(ws.root, quiet_if_unchanged=True, quiet=True)
    result = catch_up(ws)
    for w in result.warnings:
        warn(w)
    click.echo(f"demo workspace: {ws.root} ({len(written) or 'existing'} daily logs, git history, index built)")
    conn = open_index(ws)
    try:
        for q in DEMO_QUERIES:
            click.echo(f"\n$ zmem recall {q!r} --k 2")
            _render_text(recall(conn, q, k=2).results)
    finally:
        conn.close()
    zmem, bin_dir = own_command()
    click.echo(f"\nnext: cd {_shell_quote(str(ws.root))} && {zmem} recall \"Peter\" && {zmem} get memory/2025-11-24.md")
    if bin_dir:
        click.echo(f"(this zmem is not on PATH; to type just `zmem`: export PATH={_shell_quote(str(bin_dir))}:$PATH)")


def _shell_quote(s: str) -> str:
    import shlex
    return shlex.quote(s)


# ----------------------------------------------------------------------------- index


@cli.command()
@click.option("--full", is_flag=True, help="Rebuild from scratch into a temporary file and swap it in atomically.")
@click.option("--no-embed", is_flag=True, help="Update the text index only; leave embeddings for later.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but warnings and errors.")
@click.option("--history", "with_history", is_flag=True,
              help="Also build (or extend) the history index: every version of every memory file along "
                   "HEAD's first-parent chain, for --as-of, log and diff. Kept up to date from then on.")
@click.option("--sessions", "with_sessions", is_flag=True,
              help="Index only the agent session transcripts of [sessions] (everything new, ignoring the delta "
                   "thresholds); with --full or --history, those too. Without it they are indexed when enabled.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@click.pass_context
def index(ctx, full, no_embed, quiet, with_history, with_sessions, as_json):
    """Bring the index up to date with HEAD and the working tree.

    Every reading command does this catch-up by itself; the git hooks make it free. Only files whose
    git blob id changed are reindexed. With --full the whole index is rebuilt; an interrupted or
    failed rebuild leaves the previous index working. Everything enabled is brought up to date: the
    memory files, the history index once built, session transcripts when enabled, and embeddings
    (unless --no-embed).
    """
    from zmem.indexer import CatchUp, catch_up, open_index, rebuild
    from zmem.session_settings import settings_for
    ws = _workspace(ctx)
    progress = None if quiet else _progress("indexing")
    settings = settings_for(ws)
    only_sessions = with_sessions and not (full or with_history)  # what recall starts in the background
    if with_sessions and not settings.enabled:
        from zmem.config import sessions_off
        raise sessions_off(ws.config)
    if only_sessions:
        result, warnings = CatchUp(), []
    else:
        result = rebuild(ws, progress=progress) if full else catch_up(ws, lock_timeout=60, progress=progress)
        from zmem.status import stored_warnings
        conn = open_index(ws)
        try:  # every file's current warnings (malformed Retain bullets …), also of files a hook indexed already
            warnings = result.warnings + [w for w in stored_warnings(conn) if w not in result.warnings]
        finally:
            conn.close()
    for w in warnings:
        warn(w)
    hist = None
    if with_history:
        from zmem.history import ensure_history
        conn = open_index(ws)
        try:
            hist = ensure_history(ws, conn, progress=None if quiet else _progress("history"))
        finally:
            conn.close()
        if hist is None:
            raise ZmemError("another zmem process is updating the index", hint="run `zmem index --history` again")
        if hist.shallow:
            warn("this is a shallow clone: history before its oldest commit is missing "
                 "(`git fetch --unshallow` brings it)")
    sess = None
    if settings.enabled:
        from zmem.indexer import IndexLock, LockTimeout
        from zmem.sessions import index_sessions
        conn = open_index(ws)
        try:
            with IndexLock(ws, 60):
                sess = index_sessions(conn, settings, force=True)
        except LockTimeout:
            raise ZmemError("another zmem process is updating the index", hint="run the command again") from None
        finally:
            conn.close()
        for w in sess.skipped:  # transcript lines not taken (file:line), files that could not be read
            warn(w)
            warnings.append(w)
    report = None
    if not (no_embed or only_sessions):  # transcripts have no vectors
        from zmem.embedding import run_embed_job
        report = run_embed_job(ws, progress=None if quiet else _progress("embedding"))
        for w in report.warnings if report else ():
            warn(w)
            warnings.append(w)
        if report and report.error:
            warn(f"embedding stopped: {report.error}; " + (
                f"{report.pending} chunks await embedding: `zmem embed` retries (BM25 recall finds them meanwhile)"
                if report.provider else "nothing was embedded"))
    if as_json:
        click.echo(json.dumps({
            "head": result.head, "previous": result.previous, "full": full or result.full_scan,
            "updated": result.updated, "removed": result.removed, "warnings": warnings,
            "stale": result.stale, "seconds": round(result.seconds, 4),
            "embeddings": _embed_json(report),
            "sessions": None if sess is None else {"files": sess.files, "messages": sess.messages,
                                                    "bytes": sess.bytes, "seconds": round(sess.seconds, 3)},
            "history": None if hist is None else {"commits": hist.commits, "blobs": hist.blobs,
                                                  "rewound": hist.rewound, "shallow": hist.shallow,
                                                  "seconds": round(hist.seconds, 3)}}, ensure_ascii=False))
    elif not quiet:
        what = "rebuilt" if full else "NOT brought up to date" if result.stale else "up to date"
        if not only_sessions:
            click.echo(f"index {what} at {(result.head or '(no commits)')[:10]}: {len(result.updated)} files "
                       f"indexed, {len(result.removed)} removed in {result.seconds * 1000:.0f} ms")
        if report and report.provider:  # without one, the warning below says why nothing was embedded
            click.echo(_embed_line(report))
        if sess:
            click.echo(f"sessions: {sess.messages} messages from {sess.files} files in {sess.seconds:.2f} s")
        if hist:
            click.echo(f"history: {hist.commits} new commits, {hist.blobs} file versions parsed "
                       f"in {hist.seconds:.2f} s" + (f"; {hist.rewound} commits no longer on HEAD's chain dropped" if hist.rewound else ""))
    if result.stale:
        raise ZmemError("the index could not be brought up to date; recall answers from it say `stale`",
                        hint="the warnings above say why (a lock held by another process, permissions); "
                             "fix that, then run `zmem index` again")


def _embed_json(report) -> dict | None:
    if report is None:
        return None
    return {"provider": report.provider, "embedded": report.embedded, "from_cache": report.from_cache,
            "pending": report.pending, "error": report.error, "reembedded_all": report.reset}


@cli.command()
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but warnings and errors.")
@click.option("--background", is_flag=True, help="Exit at once if another embedding job is running (used by hooks).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@click.pass_context
def embed(ctx, quiet, background, as_json):
    """Embed the chunks that have no vector yet, with the configured provider.

    Hooks and recall start this in the background; run it yourself to wait for it. Unchanged text
    is never embedded twice (the cache is keyed by provider fingerprint and text hash); a new model
    re-embeds everything. If another embedding job is running, this one waits for it and then embeds
    what is left (with --background it exits at once). Exits 1 when the provider fails.
    """
    from zmem.embedding import give_up_after, run_embed_job
    ws = _workspace(ctx)
    _catch_up(ws, quiet=True)
    report = run_embed_job(ws, progress=None if quiet else _progress("embedding"), wait=not background,
                           give_up=give_up_after(ws, explicit=not background))
    for w in report.warnings if report else ():
        warn(w)
    if as_json:
        click.echo(json.dumps(_embed_json(report)))
    elif not quiet and (report is None or not report.error):
        if report is None:
            click.echo("nothing to do: no embedding provider configured" +
                       (", or another embedding job is running" if background else ""))
        else:
            click.echo(_embed_line(report))
    if report and report.error:
        raise ZmemError(f"embedding stopped: {report.error}; {_left(report)}",
                        hint="fix the [embeddings] settings or the provider (`zmem doctor` checks them), "
                             "then run `zmem embed` again; recall uses BM25 meanwhile")


def _embed_line(report) -> str:
    return (f"embeddings ({report.provider}): {report.embedded} windows embedded, {report.from_cache} from the cache, "
            f"{report.pending} chunks pending")


def _left(report) -> str:
    return f"{report.pending} chunks left for the next run" if report.provider else "nothing was embedded"


@cli.command()
@click.option("--revoke", is_flag=True, help="Stop trusting this workspace's zmem.toml.")
@click.pass_context
def trust(ctx, revoke):
    """Let this workspace's zmem.toml choose embedding endpoints and model files.

    A cloned memory repository must not be able to send your notes to a server of its choosing or
    load code: the [embeddings] section of a committed zmem.toml is ignored until you trust that
    exact file content (a later change to the file needs trusting again). Your own
    ~/.config/zmem/config.toml is always trusted.
    """
    from zmem.trust import trust as do_trust, untrust
    ws = _workspace(ctx)
    path = ws.root / "zmem.toml"
    if not path.is_file():
        raise ZmemError(f"no zmem.toml in {ws.root}", hint="nothing to trust; `zmem init` writes one")
    if revoke:
        click.echo("no longer trusted: " + str(path) if untrust(path) else f"{path} was not trusted")
        return
    do_trust(path)
    click.echo(f"trusted {path} (as it is now; trust it again after it changes)")


@cli.group()
def model():
    """Local embedding models: convert a sentence-transformers model for provider = "local" (GGUF) or "onnx"."""


@model.command("import")
@click.argument("source")
@click.option("--format", "fmt", type=click.Choice(["gguf", "onnx"]), default="gguf", show_default=True,
              help="gguf: a file for provider = \"local\" (llama.cpp); onnx: a directory for provider = \"onnx\" "
                   "(ONNX Runtime, no compiler).")
@click.option("--out", type=click.Path(), default=None,
              help="Where to write (default: ~/.cache/zmem/models/<name>.<outtype>.gguf, or <name>.onnx/ for onnx).")
@click.option("--outtype", type=click.Choice(["f16", "f32", "q8_0", "int8"]), default=None,
              help="Precision of the weight matrices: gguf f16 (default), f32 or q8_0 (a quarter of f32's size, "
                   "slightly less exact); onnx f32 (default) or int8.")
@click.option("--force", is_flag=True, help="Replace an existing output (never a file of the model itself).")
def model_import(source, fmt, out, outtype, force):
    """Convert a BERT-family sentence-transformers model directory (safetensors weights) into what a
    local provider loads, with no torch. SOURCE may be hf:ORG/NAME: taken from the local Hugging Face
    cache, or downloaded where a network exists (HF_HUB_OFFLINE=1 forbids it).
    """
    from zmem.config import user_cache_dir, user_config_path
    from zmem.modelimport import import_model, import_onnx, model_name, resolve_model_source
    src = resolve_model_source(source)
    outtype = outtype or ("f32" if fmt == "onnx" else "f16")
    if out is None:
        name = f"{model_name(src)}.{outtype}" if fmt == "gguf" or outtype != "f32" else model_name(src)
        out = user_cache_dir() / "models" / f"{name}.{fmt}"
    convert = import_onnx if fmt == "onnx" else import_model
    info = convert(src, Path(out), outtype=outtype, force=force)
    for warning in info["warnings"]:
        click.echo(f"zmem: warning: {warning}", err=True)
    click.echo(f"wrote {info['out']} ({info['arch']}, {info['dimensions']} dimensions, {info['layers']} layers, "
               f"{info['pooling']} pooling)")
    # JSON's string escaping suits a TOML basic string too (a path with quotes or backslashes)
    model_path = json.dumps(info["out"], ensure_ascii=False)
    provider = "onnx" if fmt == "onnx" else "local"
    click.echo(f'to use it, add to {user_config_path()}:\n[embeddings]\nprovider = "{provider}"\nmodel_path = {model_path}')


# ----------------------------------------------------------------------------- recall / get


@cli.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-k", "--k", "k", type=click.IntRange(1, 1000), default=None, help="Number of results (default 6).")
@click.option("--since", metavar="WHEN", help="Only notes from this day on: 7d, 2w, 3m, 1y or YYYY-MM-DD.")
@click.option("--until", metavar="WHEN", help="Only notes up to this day (same forms as --since).")
@click.option("--path", "path_glob", metavar="GLOB", help="Only files matching this glob (e.g. 'memory/2025-*'), or this file, or everything under this directory (e.g. bank/people).")
@click.option("--max-chars", type=click.IntRange(1, None), default=None,
              help="Cap the total characters of all snippets (recall within a token budget).")
@click.option("--mode", type=click.Choice(["hybrid", "bm25", "vector"]), default=None,
              help="Keywords, vectors, or both fused (default: recall.mode, hybrid; BM25 when there are no vectors).")
@click.option("--explain", is_flag=True, help="Show each hit's BM25 rank/score, vector rank/similarity and fused "
              "score, and the text/vector weights the query got (adaptive fusion).")
@click.option("--kind", type=click.Choice(KIND_CHOICES, case_sensitive=False), default=None,
              help="Only Retain facts of this kind (results are facts, not snippets).")
@click.option("--entity", metavar="NAME", default=None, help="Only Retain facts about this entity (@ optional).")
@click.option("--as-of", "as_of", metavar="DATE|REV", default=None,
              help="Recall from the memory as it stood at a commit: the last one on this branch at or before "
                   "DATE (YYYY-MM-DD, 7d), or REV. Citations read path@<sha>#Lx-Ly.")
@click.option("--scope", type=click.Choice(["private", "group"]), default="private", show_default=True,
              help="group: never return MEMORY.md or paths listed under [scopes] private (for shared chats).")
@click.option("--source", type=click.Choice(["memory", "sessions", "all"]), default=None,
              help="Search memory files, agent session transcripts, or both (default: all when [sessions] "
                   "is enabled, else memory; always memory with --kind, --entity or --as-of).")
@click.option("--format", "fmt", type=click.Choice(["text", "table", "json", "md"]), default="text",
              show_default=True, help="Output format.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.pass_context
def recall(ctx, query, k, since, until, path_glob, max_chars, mode, explain, kind, entity, as_of, scope, source,
           fmt, as_json):
    """Find the notes that answer QUERY, with path#Lstart-Lend citations.

    Hybrid recall fuses BM25 keyword ranks with vector similarity when an embedding provider is
    configured; otherwise it is BM25 alone (scores in (0, 1), higher is better; no threshold hides
    a keyword hit). Each snippet is at most 700 characters and its citation names exactly the lines
    it shows, so `zmem get PATH#Lx-Ly` reads them back. --since/--until filter by the day of daily
    logs (memory/YYYY-MM-DD.md); other files have no day and are left out by them.

    With --kind or --entity, recall searches `## Retain` facts instead and returns each fact with
    its kind, entities, confidence, day and source line. With --as-of, it answers from the memory
    as it was at that commit (hybrid like a current recall when vectors exist; the history index is
    built on first use).
    """
    from zmem.api import recall_workspace
    from zmem.search import parse_when
    ws = _workspace(ctx)
    text = " ".join(query)
    res = recall_workspace(ws, text, k=k, since=parse_when(since) if since else None,
                           until=parse_when(until, end=True) if until else None, path_glob=path_glob,
                           max_chars=max_chars, mode=mode, explain=explain, kind=kind, entity=entity, as_of=as_of,
                           scope=scope, source=source)
    fmt = "json" if as_json else fmt
    for w in res.warnings:
        warn(w)
    if fmt == "json":
        echo_json(res.to_json())
    elif not res.results:
        click.echo("no results", err=True)
    elif kind or entity:
        _render_facts([h.fact for h in res.results], fmt, scores=[h.score for h in res.results],
                      citations=[h.citation for h in res.results])
    elif fmt == "table":
        from zmem.search import one_line_snippet
        rows = [(h.citation, f"{h.score:.4g}", h.day or "", one_line_snippet(h.snippet, text, 70)) for h in res.results]
        echo_table(rows, ["citation", "score", "day", "snippet"], numeric=(1,))
    elif fmt == "md":
        for i, h in enumerate(res.results, 1):
            echo(f"{i}. **{h.citation}** (score {h.score:.4g}{', ' + h.day if h.day else ''})\n")
            echo("\n".join("   > " + line for line in h.snippet.split("\n")) + "\n")
    else:
        _render_text(res.results)


def _one_line(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[:n - 1] + "…"


def _render_text(hits) -> None:
    for h in hits:
        # a daily log titled by its day: the heading path (`2025-09-15 > Notes`) says the day once
        day = "" if h.day and (h.heading == h.day or (h.heading or "").startswith(h.day + " > ")) else h.day
        meta = " · ".join(x for x in (f"{h.score:.4g}", day or "", h.heading) if x)
        echo(Bold(h.citation), f"  {meta}")
        if h.explain:
            e = h.explain
            echo(f"    [bm25 rank {e['bm25_rank'] or '-'} score {e['bm25_score'] or '-'} · vector rank "
                       f"{e['vector_rank'] or '-'} similarity {e['vector_similarity'] or '-'} · fused {e['fused']}"
                       + (f" · weights text {e['text_weight']} vector {e['vector_weight']} (keyword evidence "
                          f"{e['keyword_evidence']})" if "text_weight" in e else "") + "]")
        echo("\n".join("    " + line for line in h.snippet.split("\n")))


@cli.command()
@click.argument("path")
@click.option("--from", "start", type=click.IntRange(1, None), default=None, help="First line (1-based; default 1).")
@click.option("--lines", "count", type=click.IntRange(1, None), default=None, help="Number of lines (default: to the end).")
@click.option("--rev", metavar="REV", default=None, help="Read the file as it was at this commit, branch or tag.")
@click.option("--scope", type=click.Choice(["private", "group"]), default="private", show_default=True,
              help="group: refuse private files (MEMORY.md, [scopes] private).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object with the lines.")
@click.pass_context
def get(ctx, path, start, count, rev, scope, as_json):
    """Print exactly the cited lines of a memory file, now or at a past commit.

    PATH is workspace-relative and may carry a citation: `zmem get memory/2025-11-27.md#L3-L5`, or
    an as-of citation `memory/2025-11-27.md@1a2b3c4d5e#L3-L5` (same as --rev 1a2b3c4d5e).
    Paths outside the memory sources, `..` escapes, symlinks and non-.md files are refused.
    """
    from zmem.reading import read_lines
    ws = _workspace(ctx)
    out = read_lines(ws, path, start=start, count=count, rev=rev, scope=scope)
    if as_json:
        echo_json(out, indent=None)
    elif out["text"] or out["lines"]:
        echo(out["text"])


# ----------------------------------------------------------------------------- append


@cli.command()
@click.argument("text", nargs=-1, required=True)
@click.option("--retain", type=click.Choice(["W", "B", "O", "S", "R"], case_sensitive=False), default=None,
              help="Add it as a typed fact under ## Retain: W world, B experience, O opinion, S observation, "
                   "R relation (TEXT is `@Subject predicate @Object`).")
@click.option("--entity", "entities", multiple=True, metavar="NAME", help="An entity the entry is about (repeatable).")
@click.option("--confidence", type=float, default=None, help="Confidence in [0, 1] of an opinion (--retain O).")
@click.option("--no-commit", is_flag=True, help="Write the file but do not commit it.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object describing what was written.")
@click.pass_context
def append(ctx, text, retain, entities, confidence, no_commit, as_json):
    """Append TEXT to today's daily log (memory/YYYY-MM-DD.md) and commit it.

    Plain notes go under `## Notes`; with --retain, a fact such as `- O(c=0.9) @Peter: …` goes under
    `## Retain`. The file is created when missing. Concurrent appends queue and lose nothing. TEXT
    `-` reads the text from standard input.
    """
    from zmem.api import append_note
    ws = _workspace(ctx)
    body = sys.stdin.read() if text == ("-",) else " ".join(text)
    out = append_note(ws, body, retain=retain, entities=entities, confidence=confidence, commit=not no_commit)
    for w in out["warnings"]:
        warn(w)
    if as_json:
        echo_json(out, indent=None)
    else:
        echo(f"{out['citation']}  {out['text']}" + (f"  (committed {out['commit'][:10]})" if out["committed"] else ""))


# ----------------------------------------------------------------------------- facts, entities, opinions


def _render_facts(facts, fmt: str, scores=None, citations=None) -> None:
    """Facts as a table, Markdown or text (JSON is rendered by the caller)."""
    cites = citations or [f.source for f in facts]
    if fmt == "table":
        rows = [(cites[i], f.kind, "" if f.confidence is None else f"{f.confidence:.2f}", f.day or "",
                 ", ".join(f.entities), _one_line(f.text, 60)) for i, f in enumerate(facts)]
        echo_table(rows, ["source", "kind", "c", "day", "entities", "text"], numeric=(2,))
        return
    for i, f in enumerate(facts):
        conf = f" c={f.confidence:.2f}" if f.confidence is not None else ""
        score = f"{scores[i]:.4g} · " if scores else ""
        who = " ".join("@" + e for e in f.entities)
        if fmt == "md":
            echo(f"- **{f.kind}**{conf} {who}: {f.text} ({cites[i]})")
        else:
            echo(Bold(cites[i]), f"  {score}{f.kind}{conf} · {f.day or 'undated'} · {f.id}")
            echo(f"    {who + ': ' if who else ''}{f.text}")


@cli.command()
@click.option("--entity", metavar="NAME", default=None, help="Only facts about this entity (@ optional).")
@click.option("--kind", type=click.Choice(KIND_CHOICES, case_sensitive=False), default=None,
              help="Only facts of this kind.")
@click.option("--since", metavar="WHEN", help="Only facts from this day on (the log's day or a date in the fact).")
@click.option("--until", metavar="WHEN", help="Only facts up to this day.")
@click.option("--limit", type=click.IntRange(1, None), default=None, help="At most this many facts.")
@click.option("--origin", is_flag=True, help="Also show the commit, author and time that added each fact (git blame).")
@click.option("--format", "fmt", type=click.Choice(["text", "table", "json", "md"]), default="table",
              show_default=True, help="Output format.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.pass_context
def facts(ctx, entity, kind, since, until, limit, origin, fmt, as_json):
    """List the typed facts of `## Retain` sections, newest first.

    A Retain bullet is `- W|B|O|S[(c=0.9)] @Entity …: text` (world, experience, opinion,
    observation) or a relation `- R @Subject predicate @Object`. Malformed bullets are reported as
    warnings with file and line, and by `zmem doctor`.
    """
    from zmem.entities import normalize_kind, query_facts, resolve_entity
    from zmem.indexer import catch_up, open_index
    from zmem.search import parse_when
    ws = _workspace(ctx)
    conn = open_index(ws)
    try:
        from zmem.status import stored_warnings
        catch_up(ws, conn=conn)
        for w in stored_warnings(conn):  # every malformed bullet, not only those of files indexed just now
            warn(w)
        key = resolve_entity(ws, conn, entity).key if entity else None
        rows = query_facts(conn, entity=key, kind=normalize_kind(kind), since=parse_when(since) if since else None,
                           until=parse_when(until, end=True) if until else None, limit=limit)
        if origin:
            from zmem.history import attach_origins
            attach_origins(ws, conn, rows)
    finally:
        conn.close()
    if as_json or fmt == "json":
        echo_json({"facts": [f.to_json() for f in rows]})
    elif not rows:
        click.echo("no facts", err=True)
    elif origin and fmt == "table":
        from zmem.dates import commit_time
        echo_table(
            [(f.source, f.kind, "" if f.confidence is None else f"{f.confidence:.2f}", f.day or "",
              ", ".join(f.entities), _one_line(f.text, 50), (f.commit or "uncommitted")[:10], f.author or "",
              commit_time(f.time).strftime("%Y-%m-%d %H:%M") if f.time else "")
             for f in rows], ["source", "kind", "c", "day", "entities", "text", "commit", "author", "date"], numeric=(2,))
    else:
        _render_facts(rows, fmt)
        if origin:
            for f in rows:
                echo(f"{f.source}: {f.commit[:10] if f.commit else 'uncommitted'} {f.author or ''}")


@cli.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
def entity(ctx, name, as_json):
    """Show what memory holds about the entity NAME: its page, facts (newest first, with
    citations), opinions and related entities.
    """
    from zmem.entities import duplicate_message, entity_report
    ws = _workspace(ctx)
    report = entity_report(ws, name)
    for w in report.pop("warnings"):
        warn(w)
    if as_json:
        echo_json(report)
        return
    e = report["entity"]
    echo(Bold(e["name"]), (f"  ({e['page']})" if e["page"] else "  (no page yet: `zmem reflect` writes one)"))
    if len(e["spellings"]) > 1:
        echo(f"written as: {', '.join(e['spellings'])}")
    if report["page_text"]:
        echo("\n" + report["page_text"])
    echo(f"\nfacts ({len(report['facts'])}):")
    for f in report["facts"]:
        conf = f" c={f['confidence']:.2f}" if f["confidence"] is not None else ""
        echo(f"  {f['day'] or 'undated'}  {f['kind']}{conf}: {f['text']}  — {f['source']}")
    if report["opinions"]:
        echo("\nopinions:")
        for o in report["opinions"]:
            echo(f"  c={o['confidence']:.2f}  {o['statement']}")
    if report["related"]:
        echo("\nrelated:")
        for r in report["related"]:
            echo(f"  {r['type']:14} @{r['name']}  ×{r['count']}  (last {r['last_day'] or 'undated'})")
    for a, b, score in report["suspected_duplicates"]:
        warn(duplicate_message(a, b, score))


@cli.command()
@click.argument("name", required=False)
@click.option("--depth", type=click.IntRange(1, 5), default=1, show_default=True, help="How many hops to follow.")
@click.option("--export", "export_path", type=click.Path(dir_okay=False), default=None,
              help="Write the whole graph (nodes and edges) as JSON to this file ('-' for stdout).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
def graph(ctx, name, depth, export_path, as_json):
    """Show the entities related to NAME, with relation types and evidence, or export the graph.

    Edges are explicit relations (`- R @Peter lives_in @Lisbon`) and co-mentions in one fact,
    weighted by count and recency (a mention's weight halves every 90 days before the newest fact).
    """
    from zmem.api import graph_neighbourhood
    from zmem.entities import export_graph
    from zmem.indexer import catch_up, open_index
    if not name and not export_path:
        raise click.UsageError("give an entity NAME, or --export FILE")
    ws = _workspace(ctx)
    conn = open_index(ws)
    try:
        for w in catch_up(ws, conn=conn).warnings:
            warn(w)
        if export_path:
            data = export_graph(ws, conn)
            if export_path == "-":
                echo_json(data)
            else:
                try:
                    Path(export_path).write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n",
                                                 encoding="utf-8")
                except OSError as e:
                    raise ZmemError(f"cannot write {export_path}: {e.strerror or e}",
                                    hint="give a file in an existing, writable directory, or '-' for stdout") from None
                click.echo(f"wrote {export_path}", err=True)
            if not name:
                return
        hood = graph_neighbourhood(ws, conn, name, depth)
    finally:
        conn.close()
    if as_json:
        echo_json(hood.to_json())
        return
    ent, entities, found = hood.entity, hood.entities, hood.edges
    if not found:
        click.echo(f"@{ent.name} has no related entities yet", err=True)
    for e in found:
        a, b = entities[e.source].name if e.source in entities else e.source, \
            entities[e.target].name if e.target in entities else e.target
        echo(f"@{a} --{e.type}--> @{b}  ×{e.count}  weight {e.weight:.2f}  last {e.last_day or 'undated'}  "
                   f"[{', '.join(e.evidence[-2:])}]")


@cli.command()
@click.option("--entity", metavar="NAME", default=None, help="Only opinions about this entity.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
def opinions(ctx, entity, as_json):
    """List the opinions of bank/opinions.md: statement, confidence, evidence for and against.

    `zmem reflect` writes them from `O` facts; an opinion may also be written there by hand as one
    bullet, `- O(c=0.7) @Peter: statement`. Says how many `O` facts await `zmem reflect`.
    """
    from zmem import opinions as op_mod
    from zmem.entities import awaiting_reflect, resolve_entity
    from zmem.indexer import catch_up, open_index
    from zmem.retain import entity_key
    ws = _workspace(ctx)
    path = ws.root / op_mod.OPINIONS_PATH
    parsed = op_mod.read(ws.root)
    for w in parsed.warnings:
        warn(w)
    conn = open_index(ws)
    try:
        for w in catch_up(ws, conn=conn).warnings:
            warn(w)
        key = None
        if entity:
            key = entity_key(entity)
            if not any(key in o.entity_keys for o in parsed.opinions):  # another spelling, or a typo
                key = resolve_entity(ws, conn, entity).key
        waiting = awaiting_reflect(conn, parsed, key)
    finally:
        conn.close()
    rows = [o for o in parsed.opinions if key is None or key in o.entity_keys]
    if as_json:
        echo_json({"opinions": [o.to_json() for o in rows], "awaiting_reflect": waiting})
        return
    about = " about @" + entity.lstrip("@") if entity else ""
    facts = f"{waiting} `O` fact{'s' * (waiting != 1)}{about}"
    if not rows:
        where = "" if path.is_file() else f"; {op_mod.OPINIONS_PATH} does not exist yet"
        click.echo(f"no opinions yet{where}: opinions come from `zmem reflect`, which turns `O` facts "
                   "(`- O(c=0.8) @Name: …` under ## Retain) into them; "
                   + (f"{facts} {'awaits' if waiting == 1 else 'await'} it" if waiting else "there are none to turn into opinions"),
                   err=True)
    elif waiting:
        click.echo(f"{facts} {'are' if waiting != 1 else 'is'} not in any opinion yet: run `zmem reflect`", err=True)
    for o in rows:
        sup = sum(e.relation == "supports" for e in o.evidence)
        con = len(o.evidence) - sup
        who = " ".join("@" + e for e in o.entities)
        echo(f"c={o.confidence:.2f}  {o.statement}  {who}  (+{sup}/-{con}, updated {o.updated or '?'}, "
                   f"{op_mod.OPINIONS_PATH}#L{o.line})")


@cli.command()
@click.option("--since", metavar="WHEN", default=None,
              help="Use facts added since WHEN (7d, 2w, YYYY-MM-DD, or 'all'); default: since the last reflect commit.")
@click.option("--dry-run", is_flag=True, help="Print the diff and write nothing.")
@click.option("--no-commit", is_flag=True, help="Write the files but do not commit them.")
@click.option("--apply-proposals", is_flag=True, help="Also append the proposed durable facts to MEMORY.md.")
@click.option("--llm", is_flag=True,
              help="Also write a short prose summary into each updated entity page with the [llm] chat model.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary (with the diff).")
@click.pass_context
def reflect(ctx, since, dry_run, no_commit, apply_proposals, llm, as_json):
    """Update entity pages and opinions from new Retain facts, as one reviewable git commit.

    Writes a zmem-managed block (between zmem:begin/zmem:end markers) in bank/entities/<Slug>.md
    with the entity's facts, timeline and relations — text outside the block is never touched —
    and adds evidence to bank/opinions.md, moving confidence in small steps. Facts repeated across
    days are proposed for MEMORY.md. Refuses to run over uncommitted changes in bank/. A second run
    with no new facts changes nothing and makes no commit.
    """
    import datetime as dt
    from zmem.dates import commit_time, day_start
    from zmem.reflect import opinion_change, reflect as do_reflect
    from zmem.search import parse_when
    ws = _workspace(ctx)
    everything = bool(since) and since.strip().lower() == "all"
    when = None
    if since and not everything:
        when = commit_time(day_start(dt.date.fromisoformat(parse_when(since))))
    res = do_reflect(ws, since=when, everything=everything, dry_run=dry_run, commit=not no_commit,
                     apply_proposals=apply_proposals, llm=llm)
    for w in res.warnings:
        warn(w)
    if as_json:
        echo_json(res.to_json())
        return
    if dry_run:
        echo(res.diff or "nothing to change", nl=bool(not res.diff))
    elif not res.files:
        echo(f"nothing to change ({res.new_facts} new facts)")
    else:
        echo(f"updated {len(res.files)} files from {res.new_facts} new facts"
                   + (f"; committed {res.commit[:10]}" if res.commit else "; not committed"))
        for p in res.pages:
            echo(f"  {'created' if p['created'] else 'updated'} {p['path']}")
        for o in res.opinions:
            echo(f"  opinion {opinion_change(o)}: {_one_line(o['statement'], 60)}")
    if res.proposals and not res.proposals_applied:
        echo("proposed for MEMORY.md (apply with --apply-proposals):")
        for p in res.proposals:
            echo(f"  - {p['text']}  [{p['reason']}: {', '.join(p['sources'][-3:])}]")


# ----------------------------------------------------------------------------- history


@cli.command("blame")
@click.argument("target")
@click.option("-k", "--k", "k", type=click.IntRange(1, 20), default=3, show_default=True,
              help="For a query TARGET: how many top hits to blame.")
@click.option("--no-follow", is_flag=True, help="Do not follow the evidence links of lines `zmem reflect` wrote.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
def blame_cmd(ctx, target, k, no_follow, as_json):
    """Show who wrote each line of TARGET, when, and in which commit.

    TARGET is `path#Lx-Ly`, `path:LINE`, `path@REV#Lx-Ly`, a fact id (from `zmem facts`), or a
    query in quotes (its top hits are blamed). For lines that `zmem reflect` wrote (entity pages,
    opinions, MEMORY.md), the daily-log lines they cite are blamed too: the evidence chain.
    """
    from zmem.blame import blame
    from zmem.indexer import catch_up, open_index
    from zmem.history import workspace_shallow_notes
    ws = _workspace(ctx)
    conn = open_index(ws)
    try:
        warnings = catch_up(ws, conn=conn).warnings
        ranges = blame(ws, conn, target, follow=not no_follow, k=k)
    finally:
        conn.close()
    warnings += workspace_shallow_notes(ws)
    for w in warnings:
        warn(w)
    if as_json:
        from zmem.api import blame_json
        echo_json({**blame_json(target, ranges), "warnings": warnings})
        return
    for r in ranges:
        _render_blame(r, 0)


def _render_blame(r, depth: int) -> None:
    pad = "    " * depth
    echo(pad, Bold(r.citation), (f"  ({r.note})" if r.note else ""))
    for ln in r.lines:
        if ln["commit"]:
            who = f"{ln['commit'][:10]:10} {(ln['date'] or '')[:10]:10} {(ln['author'] or '')[:16]:16}"
            summary = f"  ({_one_line(ln['summary'] or '', 50)})" if ln.get("summary") else ""
        else:
            who, summary = f"{'(not committed)':38}", ""
        echo(f"{pad}{ln['line']:>5} {who} {_one_line(ln['text'], 70)}{summary}")
    for e in r.evidence:
        echo(pad + "  evidence:")
        _render_blame(e, depth + 1)


@cli.command("log")
@click.argument("target")
@click.option("--since", metavar="WHEN", help="Only events from this day on (7d, 2w, YYYY-MM-DD).")
@click.option("--reverse", is_flag=True, help="Oldest first (default: newest first, like git log).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
def log_cmd(ctx, target, since, reverse, as_json):
    """A timeline of @ENTITY (facts and opinions added, changed, retracted) or of a memory file,
    newest commit first.

    TARGET is `@Name` (or an entity name) or a path such as memory/2025-11-27.md (renames followed).
    """
    from zmem.indexer import catch_up, open_index
    from zmem.search import parse_when
    ws = _workspace(ctx)
    since_day = parse_when(since) if since else None
    is_path = target.lower().endswith(".md") and not target.startswith("@")
    conn = open_index(ws)
    try:
        warnings = catch_up(ws, conn=conn).warnings
        if is_path:
            from zmem.repo import file_log
            from zmem.paths import normalize_rel
            rel = normalize_rel(target)
            if rel is None or not ws.is_memory_path(rel):
                raise ZmemError(f"not a memory file: {target}", hint="e.g. zmem log memory/2025-11-27.md, or zmem log @Peter")
            from zmem.history import workspace_shallow_notes
            warnings += workspace_shallow_notes(ws)
            from zmem.timeline import file_fact_changes
            events = [{**e, "date": _iso_time(e["time"])} for e in file_log(ws.root, rel)]
            file_fact_changes(ws, events)
            events = [e for e in events if not since_day or e["date"][:10] >= since_day]
            events = events[::-1] if reverse else events  # file_log is newest first, as git log
            kind = "file"
        else:
            from zmem.history import resolve_history_entity
            from zmem.timeline import entity_log, require_history
            from zmem.history import workspace_shallow_notes
            warnings += require_history(ws, conn) or workspace_shallow_notes(ws)
            ent = resolve_history_entity(ws, conn, target)
            events = entity_log(ws, conn, ent.key, since=since_day, reverse=reverse)
            kind = "entity"
    finally:
        conn.close()
    for w in warnings:
        warn(w)
    if as_json:
        echo_json({"target": target, "type": kind, "events": events, "warnings": warnings})
        return
    if not events:
        click.echo("no history", err=True)
    for e in events:
        if kind == "file":
            moved = f" (as {e['path']})" if e["path"] != rel else ""
            echo(f"{e['date'][:10]}  {e['commit'][:10]}  +{e['added']}/-{e['removed']}  {e['author']}: "
                       f"{e['summary']}{moved}")
            fx = e.get("facts") or {}
            for f in fx.get("added", []):
                echo(f"    + {f['kind']}: {_one_line(f['text'], 70)}  (L{f['line']})")
            for f in fx.get("changed", []):
                echo(f"    ~ {f['kind']}: {_one_line(f['old_text'], 40)}  =>  {_one_line(f['text'], 40)}  (L{f['line']})")
            for f in fx.get("confidence", []):
                echo(f"    ~ {f['kind']} c {f['old_confidence']:.2f} -> {f['confidence']:.2f}: "
                           f"{_one_line(f['text'], 60)}  (L{f['line']})")
            for f in fx.get("moved", []):
                echo(f"    > {f['kind']}: {_one_line(f['text'], 60)}  (moved to {f['to_path']}#L{f['to_line']})")
            for f in fx.get("retracted", []):
                echo(f"    - {f['kind']}: {_one_line(f['text'], 70)}  (retracted)")
            continue
        conf = ""
        if e.get("old_confidence") is not None and e["event"] in ("confidence changed", "moved"):
            conf = f" {e['old_confidence']:.2f} -> {e['confidence']:.2f}"
        elif e.get("confidence") is not None:
            conf = f" c={e['confidence']:.2f}"
        was = f"  (was: {_one_line(e['old_text'], 50)})" if e.get("old_text") else ""
        if e["event"] == "moved":
            was = f"  (from {e['old_path']})"
        echo(f"{(e['date'] or '')[:10]}  {e['commit'][:10]}  {e['event']:18} {e['kind']}{conf}: "
                   f"{_one_line(e['text'], 60)}{was}  — {e['source']}")


def _iso_time(t: int) -> str:
    from zmem.dates import commit_time
    return commit_time(t).isoformat()


@cli.command("diff")
@click.argument("rev1")
@click.argument("rev2", required=False, default="HEAD")
@click.option("--entity", metavar="NAME", default=None, help="Only beliefs about this entity.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
def diff_cmd(ctx, rev1, rev2, entity, as_json):
    """What memory believed differently at REV2 (default HEAD) than at REV1: facts added,
    retracted and changed, opinions added and removed, confidence changes with their evidence.
    REV1/REV2 are commits, branches, tags or dates (the last commit at or before the day).
    """
    from zmem.indexer import catch_up, open_index
    from zmem.timeline import belief_diff, require_history
    ws = _workspace(ctx)
    conn = open_index(ws)
    try:
        from zmem.history import workspace_shallow_notes
        warnings = catch_up(ws, conn=conn).warnings + (require_history(ws, conn) or workspace_shallow_notes(ws))
        for w in warnings:
            warn(w)
        key = None
        if entity:
            from zmem.history import resolve_history_entity
            key = resolve_history_entity(ws, conn, entity).key
        d = belief_diff(ws, conn, rev1, rev2, entity=key)
    finally:
        conn.close()
    if as_json:
        echo_json({**d, "warnings": warnings})
        return
    since = f"{d['from']['commit'][:10]} ({d['from']['date'][:10]})" if d["from"]["commit"] else \
        "before the first commit (memory was empty)"
    echo(f"from {since} to {d['to']['commit'][:10]} ({d['to']['date'][:10]})")
    f = d["facts"]
    for x in f["added"]:
        echo(f"+ {x['kind']}: {x['text']}  — {x['source']}")
    for x in f["retracted"]:
        echo(f"- {x['kind']}: {x['text']}  — {x['source']}")
    for x in f["changed"]:
        echo(f"~ {x['to']['kind']}: {x['from']['text']}  =>  {x['to']['text']}  — {x['to']['source']}")
    for x in f.get("confidence", []):
        echo(f"~ {x['to']['kind']} c {x['from']['confidence']:.2f} -> {x['to']['confidence']:.2f}: "
                   f"{x['to']['text']}  — {x['to']['source']}")
    for x in f.get("moved", []):
        conf = "" if x["from"]["confidence"] == x["to"]["confidence"] or x["to"]["confidence"] is None else \
            f" (c {x['from']['confidence']:.2f} -> {x['to']['confidence']:.2f})"
        echo(f"> {x['to']['kind']} moved{conf}: {x['to']['text']}  — {x['from']['path']} -> {x['to']['source']}")
    for o in d["opinions"]:
        if o["change"] == "confidence":
            echo(f"~ opinion c {o['from']:.2f} -> {o['to']:.2f}: {o['statement']}")
            for e in o["evidence"]:
                echo(f"    {e['relation']} {e['source']}")
        else:
            sign = "+" if o["change"] == "added" else "-"
            echo(f"{sign} opinion c={o['confidence']:.2f}: {o['statement']}")
    if not (f["added"] or f["retracted"] or f["changed"] or f.get("confidence") or f.get("moved") or d["opinions"]):
        click.echo("no differences in facts or opinions", err=True)


# ----------------------------------------------------------------------------- watch


@cli.command("watch")
@click.option("--debounce", type=Seconds(0, None), default=None, metavar="SECONDS",
              help="Reindex after this many seconds without a change (default 1.5, `watch.debounce`).")
@click.option("--commit", "do_commit", is_flag=True,
              help="Also commit the changed memory files (only those, including those already uncommitted at "
                   "start) once they have been quiet for --commit-after seconds; never while a merge or rebase "
                   "is in progress.")
@click.option("--commit-after", type=Seconds(0, None), default=30.0, show_default=True, metavar="SECONDS",
              help="With --commit: seconds without a change before committing.")
@click.option("--poll", is_flag=True,
              help="Stat the memory files every second instead of using inotify (e.g. network file systems).")
@click.option("--max-events", type=click.IntRange(1, None), default=None, metavar="N",
              help="Exit 0 after N indexed/committed events (for scripts and tests).")
@click.option("--exit-after", type=Seconds(0, None), default=None, metavar="SECONDS",
              help="Exit 0 after this many seconds (for scripts and tests).")
@click.option("--verbose", "-v", is_flag=True, help="One line per reindex or commit on stderr even when it is not a terminal.")
@click.option("--json", "as_json", is_flag=True,
              help='One JSON line per event on stdout: {"event": "watching"|"indexed"|"committed"|"error", '
                   '"files": [...], "commit": ..., "seconds": ...}.')
@click.pass_context
def watch_cmd(ctx, debounce, do_commit, commit_after, poll, max_events, exit_after, verbose, as_json):
    """Keep the index fresh while agents write memory files without committing.

    Watches the memory directories (inotify on Linux, one descriptor however many files; elsewhere
    it stats the files every second) and, after DEBOUNCE seconds without a change, reindexes what
    changed. With --commit, memory files that stay unchanged for --commit-after seconds are
    committed (`zmem watch: N memory files`), never other files. Stops cleanly on Ctrl-C (exit 130)
    or SIGTERM (exit 0); exits 1 if the workspace is moved or deleted.
    """
    from zmem.watch import Watcher
    ws = _workspace(ctx)
    loud = verbose or sys.stderr.isatty()

    def emit(e) -> None:
        if as_json:
            click.echo(json.dumps(e.to_json(), ensure_ascii=False))
        if not loud:
            return
        names = ", ".join(e.files[:3]) + (f" and {len(e.files) - 3} more" if len(e.files) > 3 else "")
        if e.event == "watching":
            click.echo(f"watching {ws.root} ({e.watched} {'directories' if e.backend == 'inotify' else 'files'}, "
                       f"{e.backend}); Ctrl-C stops", err=True)
        elif e.event == "indexed":
            click.echo(f"indexed {len(e.files)} file{'s' if len(e.files) != 1 else ''} in {e.seconds * 1000:.0f} ms: "
                       f"{names}", err=True)
        elif e.event == "committed":
            click.echo(f"committed {len(e.files)} memory file{'s' if len(e.files) != 1 else ''} as {e.commit[:10]}: "
                       f"{names}", err=True)

    watcher = Watcher(ws, debounce=ws.config.watch_debounce if debounce is None else debounce, commit=do_commit,
                      commit_after=commit_after, poll=poll, max_events=max_events, exit_after=exit_after,
                      emit=emit, notice=warn)
    try:
        code = watcher.run()
    except ZmemError as e:
        if as_json:
            click.echo(json.dumps({"event": "error", "files": [], "commit": None, "seconds": 0, "message": e.message}))
        raise
    if watcher.commit and watcher.pending:
        warn(f"{len(watcher.pending)} changed memory files were left uncommitted (stopped before --commit-after)")
    raise click.exceptions.Exit(code)


# ----------------------------------------------------------------------------- sync


@cli.command("sync")
@click.argument("remote", required=False)
@click.option("--status", "show_status", is_flag=True,
              help="Only say how far HEAD is ahead of and behind the upstream branch (after a fetch); change nothing.")
@click.option("--no-fetch", is_flag=True, help="With --status: compare with what the last fetch saw, offline.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON object: remote, branch, head, committed, committed_files, merge, pushed, "
                   "push_attempts, incoming and outgoing ({commits, files, facts_added, facts_removed, entities}), "
                   "warnings. With --status: remote, branch, upstream, fetched, remote_head, head, ahead, behind, "
                   "uncommitted.")
@click.pass_context
def sync_cmd(ctx, remote, show_status, no_fetch, as_json):
    """Share memory through a git remote: commit, fetch, merge, push, reindex.

    Commits the changed memory files, fetches the upstream branch (or REMOTE's branch of the same
    name), merges it (daily logs merge by union, see .gitattributes), pushes, and retries a few times
    when another clone pushed first. Then it catches up the index and says what came in and what
    went out. Uses git's own remotes and credentials. A conflict in a file a person wrote stops
    the sync with the merge undone and the files named; nothing is lost.
    """
    from zmem import sync
    if no_fetch and not show_status:
        raise click.UsageError("--no-fetch goes with --status")
    ws = _workspace(ctx)
    if show_status:
        st = sync.status(ws, remote, do_fetch=not no_fetch)
        if as_json:
            echo_json(st)
            return
        where = "" if st["fetched"] else " (as of the last fetch)"
        echo(f"{st['upstream']}{where}: {st['ahead']} commits ahead, {st['behind']} behind"
             + (f"; {len(st['uncommitted'])} memory files not committed yet" if st["uncommitted"] else ""))
        return
    res = sync.sync(ws, remote)
    for w in res.warnings:
        warn(w)
    if as_json:
        echo_json(res.to_json())
        return
    if res.committed:
        echo(f"committed {len(res.committed_files)} memory file{'s' if len(res.committed_files) != 1 else ''} "
             f"as {res.committed[:10]}")
    came, went = res.incoming, res.outgoing
    if came["commits"] or came["files"]:
        facts = f", {len(came['facts_added'])} facts added, {len(came['facts_removed'])} removed" \
            if came["facts_added"] or came["facts_removed"] else ""
        echo(f"in from {res.upstream.name} ({res.merge}): {came['commits']} commits, {len(came['files'])} files"
             f"{facts}: {', '.join(came['files'][:5])}{' …' if len(came['files']) > 5 else ''}")
        if came["entities"]:
            echo(f"  entities: {', '.join(came['entities'])}")
    if res.pushed:
        retried = f" (after {res.push_attempts - 1} rejected pushes)" if res.push_attempts > 1 else ""
        echo(f"out to {res.upstream.name}: {went['commits']} commits, {len(went['files'])} files{retried}")
    if not (came["commits"] or came["files"] or res.pushed):
        echo(f"up to date with {res.upstream.name}")


# ----------------------------------------------------------------------------- mcp


@cli.command("mcp")
@click.option("--scope", type=click.Choice(["private", "group"]), default="private", show_default=True,
              help="group: never return MEMORY.md or paths listed under [scopes] private (for shared agents).")
@click.option("--query-timeout", type=Seconds(0.1, None), default=5.0, show_default=True, metavar="SECONDS",
              help="Longest wait for the embedding provider to embed a query; past it, memory_search answers by "
                   "keywords (BM25) with a warning.")
@click.pass_context
def mcp_cmd(ctx, scope, query_timeout):
    """Run a Model Context Protocol server on stdin/stdout for agents (Claude Code, Cursor, Codex…).

    Tools: memory_search, memory_get, memory_append, graph_search, memory_blame and
    memory_recall_as_of, over the workspace of -C DIR / $ZMEM_WORKSPACE / the current directory.
    Register it with an MCP client as the command `zmem -C /path/to/memory mcp`. Needs the optional
    `mcp` package: pip install 'zmem[mcp]'.
    """
    try:
        from zmem.mcp_server import serve
    except ImportError as e:
        if (getattr(e, "name", None) or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        raise ZmemError("`zmem mcp` needs the mcp package (version 2.3 or later), which is not installed",
                        hint="pip install 'zmem[mcp]'") from None
    serve(ctx.obj.get("dir"), scope=scope, query_timeout=query_timeout)


# ----------------------------------------------------------------------------- status / doctor


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
def status(ctx, as_json):
    """Show the workspace, HEAD versus the indexed commit, dirty memory files and index size.

    Unlike the reading commands, status does not catch up: it shows the state as it is.
    """
    from zmem.status import workspace_status
    ws = _workspace(ctx)
    st = workspace_status(ws)
    if as_json:
        click.echo(json.dumps(st, ensure_ascii=False, indent=2))
        return
    click.echo(f"workspace:      {st['workspace']}")
    click.echo(f"HEAD:           {st['head'] or '(no commits yet)'}")
    if not st["indexed"]:
        indexed = "(never indexed)"
    elif st["indexed_commit"]:
        indexed = st["indexed_commit"]
    else:  # nothing to diff against: every memory file is read from the working tree
        indexed = "none: no commits yet, the files are indexed from the working tree"
    behind = "it cannot be updated (read-only)" if st["read_only"] else "the next command catches up"
    click.echo(f"indexed commit: {indexed}" + (f"  [stale: {behind}]" if st["stale"] else "  [up to date]"))
    if st["read_only"]:
        click.echo(f"index access:   read-only ({st['read_only_reason']}): answers come from the index as it "
                   "is, nothing is written")
    if st["dirty"]:
        click.echo(f"dirty files:    {len(st['dirty'])} ({', '.join(st['dirty'][:5])}{' …' if len(st['dirty']) > 5 else ''})")
    click.echo(f"files, chunks:  {st['files']} files, {st['chunks']} chunks, {st['db_bytes'] / 1024:.0f} KiB")
    click.echo(f"SQLite:         {st['driver']} {st['sqlite_version']}; vectors: {st['vector_store']}")
    e = st["embeddings"]
    from zmem.status import NO_EMBEDDINGS, hooks_line, vectors_line
    click.echo("embeddings:     " + (vectors_line(e) if e["provider"] != "none" else NO_EMBEDDINGS if not e["warnings"]
                                     else "no provider can run (warnings below): keyword (BM25) recall only"))
    click.echo(f"hooks:          {hooks_line(st['hooks'])}")
    if st["sessions"]["enabled"]:
        click.echo(f"sessions:       {st['sessions']['files']} transcript files indexed")
    for w in st["file_warnings"] + e["warnings"] + ([st["sessions"]["warning"]] if st["sessions"]["warning"] else []):
        warn(w)


@cli.command()
@click.pass_context
def doctor(ctx):
    """Check git, the SQLite driver, sqlite-vec, the hooks, the config and the index, and explain.

    A full-text table that does not hold what its rows give (damage an older zmem could leave) is
    rebuilt from the stored text, and the check says so. Exits 1 when a check fails.
    """
    from zmem.status import run_doctor
    checks = run_doctor(ctx.obj.get("dir"))
    from zmem.entities import duplicate_warnings
    checks += [("warn", "entities", w) for w in duplicate_warnings(ctx.obj.get("dir"))]
    failed = False
    for level, name, detail in checks:
        mark = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}[level]
        click.echo(f"[{mark}] {name}: {detail}")
        failed |= level == "fail"
    if failed:
        raise click.exceptions.Exit(int(ExitCode.ERROR))


# ----------------------------------------------------------------------------- hooks


@cli.group()
def hooks():
    """Install, remove or inspect zmem's git hooks (post-commit, post-merge, post-checkout, post-rewrite).

    A foreign hook already in place is kept and still runs first; uninstall restores it. When
    core.hooksPath is set, zmem refuses to install and says how to chain it instead.
    """


def _install_hooks(root, *, quiet_if_unchanged=False, quiet=False) -> None:
    from zmem import hooks as hooks_lib
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
    from zmem import hooks as hooks_lib
    from zmem.repo import open_repo, register_workspace
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
    ws = _workspace(ctx)
    names = _install(ws.root)
    click.echo(f"installed git hooks: {', '.join(names)}")


@hooks.command("uninstall")
@click.pass_context
def hooks_uninstall(ctx):
    """Remove zmem's hooks only, restoring any hook they had moved aside."""
    from zmem import hooks as hooks_lib
    ws = _workspace(ctx)
    names = hooks_lib.uninstall(ws.root)
    click.echo(f"removed git hooks: {', '.join(names)}" if names else "no zmem hooks were installed")


@hooks.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
def hooks_status(ctx, as_json):
    """Show, per hook, whether zmem's hook is installed, missing, outdated or foreign."""
    from zmem import hooks as hooks_lib
    ws = _workspace(ctx)
    st = hooks_lib.status(ws.root)
    if as_json:
        click.echo(json.dumps(st))
    else:
        for name, state in st.items():
            click.echo(f"{name:14} {state}")
    if any(state in ("outdated", "missing") or state.startswith("interpreter") for state in st.values()):
        click.echo(f"hint: `zmem hooks install` installs them to run this zmem ({sys.executable})", err=True)


@cli.command("hook")
@click.argument("name")
@click.argument("args", nargs=-1)
@click.pass_context
def hook(ctx, name, args):
    """Run by the installed git hooks: catch up the index after NAME (e.g. post-commit).

    Never fails the git command and prints nothing on success; a large change is indexed by a
    detached process so git returns at once. Problems go to .zmem/hook.log.
    """
    from zmem.hookrun import run_hook
    run_hook(ctx.obj.get("dir"), name, list(args))


# ----------------------------------------------------------------------------- completion


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell):
    """Print the completion script for SHELL.

    bash: `zmem completion bash > ~/.local/share/bash-completion/completions/zmem`;
    zsh: `zmem completion zsh > "${fpath[1]}/_zmem"`; fish: `zmem completion fish > ~/.config/fish/completions/zmem.fish`.
    """
    from zmem.completion import render_completion
    click.echo(render_completion(cli, shell, prog="zmem"), nl=False)


def main() -> None:
    prog = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "zmem"
    cli(prog_name="git zmem" if prog == "git-zmem" else "zmem")
