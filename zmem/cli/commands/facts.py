"""`zmem facts`, `entity`, `graph`, `opinions` and `reflect`: what the Retain facts say, and the pages and opinions made from them."""
from __future__ import annotations

import json
from pathlib import Path

import click

from zmem.errors import ZmemError
from zmem.cli.terminal import Bold, echo, echo_json, echo_table
from zmem.cli.common import KIND_CHOICES, Count, _memory, _one_line, format_option, json_option, warn


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


@click.command()
@click.option("--entity", metavar="NAME", default=None, help="Only facts about this entity (@ optional).")
@click.option("--kind", type=click.Choice(KIND_CHOICES, case_sensitive=False), default=None,
              help="Only facts of this kind.")
@click.option("--since", metavar="WHEN", help="Only facts from this day on (the log's day or a date in the fact).")
@click.option("--until", metavar="WHEN", help="Only facts up to this day.")
@click.option("--limit", type=Count(1, None), default=None,
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


@click.command()
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


@click.command()
@click.argument("name", required=False)
@click.option("--depth", type=Count(1, 5), default=1, show_default=True, help="How many hops to follow.")
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


@click.command()
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


@click.command()
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
