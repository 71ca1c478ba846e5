"""`zmem sync`: memory shared through a git remote."""
from __future__ import annotations

import functools

import click

from zmem.errors import CommandLine, describe
from zmem.cli.terminal import echo, echo_json
from zmem.cli.common import _flags, _memory, json_option, warn


@click.command("sync")
@click.argument("remote", required=False)
@click.option("--status", "show_status", is_flag=True,
              help="Only say how far HEAD is ahead of and behind the upstream branch (after a fetch); change nothing.")
@click.option("--no-fetch", is_flag=True, help="With --status: compare with what the last fetch saw, offline.")
@json_option("Print a JSON object: remote, branch, head, committed, committed_files, merge, pushed, "
             "push_attempts, incoming and outgoing ({commits, files, facts_added, facts_removed, entities}), "
             "warnings. With --status: remote, branch, upstream, fetched, remote_head, head, ahead, behind, "
             "uncommitted. On failure: error, hint and exit_code (stderr says it as usual).")
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
    if no_fetch and not show_status:
        raise click.UsageError("--no-fetch goes with --status")
    try:
        _sync(ctx, remote, show_status, no_fetch, as_json)
    except Exception as e:
        if as_json:  # a script reading stdout learns that it failed, and why, there too
            problem = describe(e, CommandLine(functools.partial(_flags, ctx)))
            echo_json({"error": problem.message, "hint": problem.hint or None, "exit_code": problem.exit_code})
        raise


def _sync(ctx, remote, show_status, no_fetch, as_json) -> None:
    from zmem import sync
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
