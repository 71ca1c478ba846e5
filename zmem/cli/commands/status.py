"""`zmem status` and `zmem doctor`: the workspace as it is, and what is wrong with it."""
from __future__ import annotations

import json

import click

from zmem.errors import ExitCode
from zmem.cli.common import _memory, json_option, warn


@click.command()
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


@click.command()
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
