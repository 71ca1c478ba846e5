"""`zmem init` and `zmem demo`: a workspace, or an example one."""
from __future__ import annotations

from pathlib import Path

import click

from zmem.install import pip_install
from zmem.cli.common import _memory, _progress, warn
from zmem.cli.commands.hooks import _install_hooks
from zmem.cli.commands.recall import _render_text


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--no-hooks", is_flag=True, help="Do not install the git hooks.")
@click.pass_context
def init(ctx, directory, no_hooks):
    """Make DIR (default: -C or the current directory) a zmem workspace.

    Runs `git init` if needed, creates MEMORY.md, memory/, bank/ and a commented zmem.toml without
    overwriting anything, ignores .zmem/, installs the git hooks and builds the index. In a repository
    it made, it commits those files and the memory files that were there (MEMORY.md, memory/, bank/;
    as zmem when git has no identity), so their history starts now; in one that was there, it leaves
    them for you to commit. Running it again changes nothing.
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
    if report.checked_out:
        click.echo(f"checked out {report.checked_out}: this clone had no commit (the remote's HEAD names a branch "
                   "it does not have), and a memory started here would share no history with the remote's")
    for rel in report.created:
        click.echo(f"created {rel}")
    if report.gitignore_updated:
        click.echo("added .zmem/ to .gitignore")
    if report.gitattributes_updated:
        click.echo("added `memory/**/*.md merge=union` to .gitattributes (daily logs merge without conflicts)")
    for note in report.skipped:
        warn(note)
    layout = [*report.created, *([".gitignore"] if report.gitignore_updated else []),
              *([".gitattributes"] if report.gitattributes_updated else [])]
    if report.git_init:  # a new memory starts committed; a repository that was there is the user's
        from zmem.git.commit import commit_paths
        notes = [p for p in mem.workspace.memory_files() if p not in layout]  # an OpenClaw folder's own notes
        subject = f"zmem init: the {len(notes)} note{'s' if len(notes) != 1 else ''} that were here and the " \
            "workspace layout" if notes else \
            "zmem init: workspace layout"
        sha, why = commit_paths(ws.root, layout + notes, subject) if layout or notes else (None, None)
        if sha:
            click.echo(f"committed {len(layout) + len(notes)} files ({sha[:7]} {subject})")
            layout = []
        elif why:
            warn(f"could not commit the new files: {why}")
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
                   f"(with {pip_install('semantic')}) or a local Ollama embedding model")
    if report.created:
        zmem = own_command()[0]
        here = Path.cwd().resolve() == ws.root.resolve() if root.exists() else False
        steps = [] if here else [f"cd {_shell_quote(str(ws.root))}"]
        if layout:  # only what zmem wrote: the repository may hold other work
            steps.append(f"git add -- {' '.join(_shell_quote(p) for p in layout)} && git commit -m \"zmem workspace\"")
        then = f'{zmem} append "…" / {zmem} recall "…"'
        click.echo(f"next: {' && '.join(steps)}, then: {then}" if steps else f"next: {then}")


def _count_files(mem) -> int:
    return mem.conn.execute("SELECT count(*) FROM files").fetchone()[0]


@click.command()
@click.argument("directory", required=False, default="zmem-demo", type=click.Path(file_okay=False))
@click.pass_context
def demo(ctx, directory):
    """Create an example workspace in DIR (default ./zmem-demo), index it, and recall from it.

    The example is a git repository of daily logs in English, Portuguese, Spanish and Chinese with
    one commit per day; the hooks are installed, so it behaves like a real workspace afterwards.
    Run again on a demo, it reuses it as it is; any other directory with files in it is refused.
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
