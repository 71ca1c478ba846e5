"""Click commands only: parse -> call the library -> render -> exit code."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from zmem import __version__
from zmem.errors import ExitCode, ZmemError

EXIT_CODES_HELP = "Exit codes: 0 ok, 1 expected error (with a hint), 2 usage, 3 internal bug, 130 interrupted."


class ZmemGroup(click.Group):
    """Turns library errors into `zmem: message` + `hint: ...` and documented exit codes."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except ZmemError as e:
            click.echo(f"zmem: {e.message}", err=True)
            if e.hint:
                click.echo(f"hint: {e.hint}", err=True)
            raise click.exceptions.Exit(int(e.exit_code))
        except KeyboardInterrupt:
            click.echo("zmem: interrupted", err=True)
            raise click.exceptions.Exit(int(ExitCode.INTERRUPTED))
        except BrokenPipeError:
            sys.stderr.close()  # the reader went away (e.g. `| head`); nothing left to say
            raise click.exceptions.Exit(0)
        except Exception as e:
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


def warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


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
    from zmem.scaffold import init_layout
    from zmem.workspace import find_workspace
    root = Path(directory or ctx.obj.get("dir") or ".")
    report = init_layout(root)
    ws = find_workspace(report.root)
    if report.git_init:
        click.echo(f"initialized a git repository in {report.root}")
    for rel in report.created:
        click.echo(f"created {rel}")
    if report.gitignore_updated:
        click.echo("added .zmem/ to .gitignore")
    if not no_hooks:
        _install_hooks(ws.root, quiet_if_unchanged=True)
    result = catch_up(ws, progress=_progress("indexing"))
    for w in result.warnings:
        warn(w)
    click.echo(f"workspace ready: {ws.root} ({_count_files(ws)} memory files indexed)")
    if report.created:
        click.echo('next: git add -A && git commit -m "zmem workspace", then: zmem append "…" / zmem recall "…"')


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
    from zmem.scaffold import DEMO_QUERIES, write_demo
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
    click.echo(f"\nnext: cd {_shell_quote(str(ws.root))} && zmem recall \"Peter\" && zmem get memory/2025-11-24.md")


def _shell_quote(s: str) -> str:
    import shlex
    return shlex.quote(s)


# ----------------------------------------------------------------------------- index


@cli.command()
@click.option("--full", is_flag=True, help="Rebuild from scratch into a temporary file and swap it in atomically.")
@click.option("--no-embed", is_flag=True, help="Update the text index only; leave embeddings for later.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but warnings and errors.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@click.pass_context
def index(ctx, full, no_embed, quiet, as_json):
    """Bring the index up to date with HEAD and the working tree.

    Every reading command does this catch-up by itself; the git hooks make it free. Only files whose
    git blob id changed are reindexed. With --full the whole index is rebuilt; an interrupted or
    failed rebuild leaves the previous index working.
    """
    from zmem.indexer import catch_up, rebuild
    ws = _workspace(ctx)
    progress = None if quiet else _progress("indexing")
    result = rebuild(ws, progress=progress) if full else catch_up(ws, lock_timeout=60, progress=progress)
    for w in result.warnings:
        warn(w)
    report = None
    if not no_embed:
        from zmem.embedding import run_embed_job
        report = run_embed_job(ws, progress=None if quiet else _progress("embedding"))
        if report and report.error:
            warn(f"embedding stopped: {report.error}; {report.pending} chunks left for the next run "
                 "(BM25 recall covers them meanwhile)")
    if as_json:
        click.echo(json.dumps({
            "head": result.head, "previous": result.previous, "full": full or result.full_scan,
            "updated": result.updated, "removed": result.removed, "warnings": result.warnings,
            "stale": result.stale, "seconds": round(result.seconds, 4),
            "embeddings": _embed_json(report)}, ensure_ascii=False))
    elif not quiet:
        what = "rebuilt" if full else "up to date"
        click.echo(f"index {what} at {(result.head or '(no commits)')[:10]}: {len(result.updated)} files indexed, "
                   f"{len(result.removed)} removed in {result.seconds * 1000:.0f} ms")
        if report:
            click.echo(f"embeddings ({report.provider}): {report.embedded} embedded, {report.from_cache} from cache, "
                       f"{report.pending} pending")
    if result.stale:
        raise click.exceptions.Exit(int(ExitCode.ERROR))


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
    re-embeds everything. If another embedding job is running, this one exits at once.
    """
    from zmem.embedding import run_embed_job
    ws = _workspace(ctx)
    _catch_up(ws, quiet=True)
    report = run_embed_job(ws, progress=None if quiet else _progress("embedding"))
    if report and report.error:
        warn(f"embedding stopped: {report.error}; {report.pending} chunks left for the next run")
    if as_json:
        click.echo(json.dumps(_embed_json(report)))
    elif not quiet:
        if report is None:
            click.echo("nothing to do: no embedding provider configured, or another embedding job is running")
        else:
            click.echo(f"embeddings ({report.provider}): {report.embedded} embedded, {report.from_cache} from cache, "
                       f"{report.pending} pending")
    if report and report.error:
        raise click.exceptions.Exit(int(ExitCode.ERROR))


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
    """Local embedding models: convert a sentence-transformers model to GGUF for provider = "local"."""


@model.command("import")
@click.argument("source")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Where to write the GGUF (default: ~/.cache/zmem/models/<name>.<outtype>.gguf).")
@click.option("--outtype", type=click.Choice(["f16", "f32"]), default="f16", show_default=True,
              help="Precision of the weight matrices.")
def model_import(source, out, outtype):
    """Convert a BERT-family sentence-transformers model directory (or hf:ORG/NAME from the local
    Hugging Face cache) into a GGUF that the local provider loads. No torch, no network.
    """
    from zmem.modelimport import import_model, resolve_model_source
    src = resolve_model_source(source)
    if out is None:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zmem" / "models"
        out = base / f"{src.name}.{outtype}.gguf"
    info = import_model(src, Path(out), outtype=outtype)
    click.echo(f"wrote {info['out']} ({info['arch']}, {info['dimensions']} dimensions, {info['layers']} layers, "
               f"{info['pooling']} pooling)")
    click.echo(f'use it: [embeddings] provider = "local", model_path = "{info["out"]}" in ~/.config/zmem/config.toml')


# ----------------------------------------------------------------------------- recall / get


@cli.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-k", "--k", "k", type=click.IntRange(1, 1000), default=None, help="Number of results (default 6).")
@click.option("--since", metavar="WHEN", help="Only notes from this day on: 7d, 2w, 3m, 1y or YYYY-MM-DD.")
@click.option("--until", metavar="WHEN", help="Only notes up to this day (same forms as --since).")
@click.option("--path", "path_glob", metavar="GLOB", help="Only files matching this glob, e.g. 'bank/**'.")
@click.option("--max-chars", type=click.IntRange(1, None), default=None,
              help="Cap the total characters of all snippets (recall within a token budget).")
@click.option("--mode", type=click.Choice(["hybrid", "bm25", "vector"]), default=None,
              help="Keywords, vectors, or both fused (default: recall.mode, hybrid; BM25 when there are no vectors).")
@click.option("--explain", is_flag=True, help="Show each hit's BM25 rank/score, vector rank/similarity and fused score.")
@click.option("--format", "fmt", type=click.Choice(["text", "table", "json", "md"]), default="text",
              show_default=True, help="Output format.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.pass_context
def recall(ctx, query, k, since, until, path_glob, max_chars, mode, explain, fmt, as_json):
    """Find the notes that answer QUERY, with path#Lstart-Lend citations.

    Hybrid recall fuses BM25 keyword ranks with vector similarity when an embedding provider is
    configured; otherwise it is BM25 alone (scores in (0, 1), higher is better; no threshold hides
    a keyword hit). Each snippet is at most 700 characters and its citation names exactly the lines
    it shows, so `zmem get PATH#Lx-Ly` reads them back. --since/--until filter by the day of daily
    logs (memory/YYYY-MM-DD.md); other files have no day and are left out by them.
    """
    from zmem.api import recall_workspace
    from zmem.search import parse_when
    ws = _workspace(ctx)
    text = " ".join(query)
    res = recall_workspace(ws, text, k=k, since=parse_when(since) if since else None,
                           until=parse_when(until, end=True) if until else None, path_glob=path_glob,
                           max_chars=max_chars, mode=mode, explain=explain)
    fmt = "json" if as_json else fmt
    for w in res.warnings:
        warn(w)
    if fmt == "json":
        click.echo(json.dumps(res.to_json(), ensure_ascii=False, indent=2))
    elif not res.results:
        click.echo("no results", err=True)
    elif fmt == "table":
        from tabulate import tabulate
        rows = [(h.citation, f"{h.score:.3f}", h.day or "", _one_line(h.snippet, 70)) for h in res.results]
        click.echo(tabulate(rows, headers=["citation", "score", "day", "snippet"]))
    elif fmt == "md":
        for i, h in enumerate(res.results, 1):
            click.echo(f"{i}. **{h.citation}** (score {h.score:.3f}{', ' + h.day if h.day else ''})\n")
            click.echo("\n".join("   > " + line for line in h.snippet.split("\n")) + "\n")
    else:
        _render_text(res.results)


def _one_line(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[:n - 1] + "…"


def _render_text(hits) -> None:
    for h in hits:
        meta = " · ".join(x for x in (f"{h.score:.3f}", h.day or "", h.heading) if x)
        click.echo(click.style(h.citation, bold=True) + f"  {meta}")
        if h.explain:
            e = h.explain
            click.echo(f"    [bm25 rank {e['bm25_rank'] or '-'} score {e['bm25_score'] or '-'} · vector rank "
                       f"{e['vector_rank'] or '-'} similarity {e['vector_similarity'] or '-'} · fused {e['fused']}]")
        click.echo("\n".join("    " + line for line in h.snippet.split("\n")))


@cli.command()
@click.argument("path")
@click.option("--from", "start", type=click.IntRange(1, None), default=None, help="First line (1-based; default 1).")
@click.option("--lines", "count", type=click.IntRange(1, None), default=None, help="Number of lines (default: to the end).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object with the lines.")
@click.pass_context
def get(ctx, path, start, count, as_json):
    """Print exactly the cited lines of a memory file.

    PATH is workspace-relative and may carry a citation: `zmem get memory/2025-11-27.md#L3-L5`.
    Paths outside the memory sources, `..` escapes, symlinks and non-.md files are refused.
    """
    from zmem.markdown import split_lines
    from zmem.workspace import resolve_memory_path
    ws = _workspace(ctx)
    path, cited = _split_citation(path)
    rel = resolve_memory_path(ws, path)
    if cited:
        start = start or cited[0]
        count = count or (cited[1] - cited[0] + 1)
    start = start or 1
    data = (ws.root / rel).read_bytes()
    from zmem.indexer import decode_note
    text, _ = decode_note(rel, data, float("inf"))
    if text is None:
        raise ZmemError(f"{rel} is not a text file", hint="zmem reads Markdown notes only")
    lines = split_lines(text)
    if start > max(len(lines), 1):
        raise ZmemError(f"{rel} has {len(lines)} lines; --from {start} is past the end",
                        hint=f"use --from 1..{len(lines)}")
    chosen = lines[start - 1:start - 1 + count if count else None]
    end = start + len(chosen) - 1
    if as_json:
        click.echo(json.dumps({"path": rel, "from": start, "end_line": end, "lines": len(chosen),
                               "total_lines": len(lines), "text": "\n".join(chosen),
                               "citation": f"{rel}#L{start}-L{end}"}, ensure_ascii=False))
    else:
        for line in chosen:
            click.echo(line)


def _split_citation(path: str) -> tuple[str, tuple[int, int] | None]:
    import re
    m = re.fullmatch(r"(.+?)(?:#L(\d+)(?:-L?(\d+))?|:(\d+))", path)
    if not m:
        return path, None
    a = int(m.group(2) or m.group(4))
    b = int(m.group(3)) if m.group(3) else a
    if b < a:
        raise ZmemError(f"bad line range in {path!r}", hint="write it as PATH#L3-L5")
    return m.group(1), (a, b)


# ----------------------------------------------------------------------------- append


@cli.command()
@click.argument("text", nargs=-1, required=True)
@click.option("--retain", type=click.Choice(["W", "B", "O", "S"], case_sensitive=False), default=None,
              help="Add it as a typed fact under ## Retain: W world, B experience, O opinion, S observation.")
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
    from zmem.append import append as do_append
    ws = _workspace(ctx)
    body = sys.stdin.read() if text == ("-",) else " ".join(text)
    res = do_append(ws, body, retain=retain.upper() if retain else None, entities=entities,
                    confidence=confidence, commit=not no_commit)
    for w in res.warnings:
        warn(w)
    warnings, _ = _catch_up(ws, quiet=True)
    for w in warnings:
        warn(w)
    if as_json:
        click.echo(json.dumps({"path": res.path, "line": res.line, "citation": res.citation, "text": res.text,
                               "committed": res.committed, "commit": res.commit, "warnings": res.warnings + warnings},
                              ensure_ascii=False))
    else:
        click.echo(f"{res.citation}  {res.text}" + (f"  (committed {res.commit[:10]})" if res.committed else ""))


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
    click.echo(f"HEAD:           {st['head'] or '(no commits)'}")
    click.echo(f"indexed commit: {st['indexed_commit'] or '(never indexed)'}"
               + ("  [stale: the next command catches up]" if st["stale"] else "  [up to date]"))
    if st["dirty"]:
        click.echo(f"dirty files:    {len(st['dirty'])} ({', '.join(st['dirty'][:5])}{' …' if len(st['dirty']) > 5 else ''})")
    click.echo(f"files, chunks:  {st['files']} files, {st['chunks']} chunks, {st['db_bytes'] / 1024:.0f} KiB")
    click.echo(f"SQLite:         {st['driver']} {st['sqlite_version']}; vectors: {st['vector_store']}")
    e = st["embeddings"]
    click.echo(f"embeddings:     {e['provider']}" + (f" {e['model']}: {e['vectors']} vectors, {e['pending']} pending"
                                                     if e["provider"] != "none" else " (keyword recall only)"))
    click.echo(f"hooks:          {', '.join(f'{k} {v}' for k, v in st['hooks'].items())}")
    for w in st["file_warnings"]:
        warn(w)


@cli.command()
@click.pass_context
def doctor(ctx):
    """Check git, the SQLite driver, sqlite-vec, the hooks, the config and the index, and explain.

    Exits 1 when a check fails.
    """
    from zmem.status import run_doctor
    checks = run_doctor(ctx.obj.get("dir"))
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
    names = hooks_lib.install(root)
    register_workspace(open_repo(Path(root)))  # hooks run at the repository's top; find us there
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
    from zmem.docgen import render_completion
    click.echo(render_completion(cli, shell, prog="zmem"), nl=False)


def main() -> None:
    prog = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "zmem"
    cli(prog_name="git zmem" if prog == "git-zmem" else "zmem")
