"""`zmem index`, `zmem embed` and `zmem trust`: the index, its embeddings, and what a zmem.toml may choose."""
from __future__ import annotations

import json

import click

from zmem.errors import ZmemError
from zmem.cli.common import _memory, _progress, json_option, warn


@click.command()
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


@click.command()
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


@click.command()
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
