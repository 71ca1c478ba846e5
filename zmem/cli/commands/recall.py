"""`zmem recall`, `zmem get` and `zmem context`: the notes that answer a query, the lines a citation
names, and what an agent reads as a session starts."""
from __future__ import annotations

import click

from zmem.cli.render import hit_lines
from zmem.cli.terminal import echo, echo_json, echo_table
from zmem.cli.common import KIND_CHOICES, Count, _memory, format_option, json_option, scope_option, warn
from zmem.cli.commands.facts import _render_facts


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-k", "--k", "k", type=Count(1, 1000), default=None, help="Number of results (default 6).")
@click.option("--since", metavar="WHEN", help="Only notes from this day on: 7d, 2w, 3m, 1y or YYYY-MM-DD.")
@click.option("--until", metavar="WHEN", help="Only notes up to this day (same forms as --since).")
@click.option("--path", "path_glob", metavar="GLOB", help="Only files matching this glob (e.g. 'memory/2025-*'), or this file, or everything under this directory (e.g. bank/people).")
@click.option("--max-chars", type=Count(1, None), default=None,
              help="Cap the total characters of all snippets (recall within a token budget).")
@click.option("--mode", type=click.Choice(["hybrid", "bm25", "vector"]), default=None,
              help="Keywords, vectors, or both fused (default: recall.mode, hybrid; BM25 when there are no vectors).")
@click.option("--explain", is_flag=True, help="Show each hit's BM25 rank/score, vector rank/similarity and fused "
              "score, the text/vector weights the query got (adaptive fusion) and the reranker's score.")
@click.option("--rerank/--no-rerank", default=None,
              help="Reorder the top hits with a cross-encoder that reads the query and each hit's lines together, "
                   "and cite the lines it scores best (default: recall.rerank; needs the semantic extra and a "
                   "reranker model; without one, a warning and the usual order). recall.rerank = \"embedding\": "
                   "the embedding model reads hybrid's first three hits token by token instead.")
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

def _render_text(hits) -> None:
    for h in hits:
        for parts in hit_lines(h):
            echo(*parts)


@click.command()
@click.argument("path")
@click.option("--from", "start", type=Count(1, None), default=None, help="First line (1-based; default 1).")
@click.option("--lines", "count", type=Count(1, None), default=None, help="Number of lines (default: to the end).")
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


@click.command()
@scope_option("group: leave out MEMORY.md and paths listed under [scopes] private (for shared chats).")
@click.option("--budget", type=Count(1, None), default=None, metavar="CHARS",
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
    if not out.text and out.omitted:  # not silence: there was something to read, and none of it fit
        n = len(out.omitted)
        warn(f"nothing fit in --budget {out.budget}: {n} part{'s' * (n != 1)} left out "
             f"({out.omitted[0]['citation']}{', …' if n > 1 else ''}); the default budget is 8000")
    if as_json:
        echo_json(out.to_json(), indent=None)
    elif out.text:
        echo(out.text)
