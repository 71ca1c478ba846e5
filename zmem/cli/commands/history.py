"""`zmem blame`, `zmem log` and `zmem diff`: who wrote what, when, and what memory believed at a commit."""
from __future__ import annotations

import click

from zmem.cli.terminal import Bold, echo, echo_json
from zmem.cli.common import Count, _memory, _one_line, json_option, warn


@click.command("blame")
@click.argument("target")
@click.option("-k", "--k", "k", type=Count(1, 20), default=3, show_default=True,
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


@click.command("log")
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


@click.command("diff")
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
