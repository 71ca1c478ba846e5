"""`zmem reflect`: new facts -> entity pages, opinion confidence and MEMORY.md proposals, as
Markdown edits in one reviewable git commit. Deterministic and offline; running it again with no
new facts changes nothing.

- bank/entities/<Slug>.md: a block between BEGIN and END markers holds the entity's facts, opinions,
  timeline and relations; everything outside the block belongs to people and is never touched.
- bank/opinions.md: new opinions from `O` facts; evidence moves confidence (opinions.update).
  An evidence line records the fact id, so no fact is ever applied twice.
- MEMORY.md: facts stated again and again are proposed, and appended only with apply_proposals.
"""
from __future__ import annotations

import datetime as dt
import difflib
import os
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field

from zmem import opinions as op_mod
from zmem.entities import (ENTITY_DIR, FactRow, all_entities, duplicate_message, neighbourhood, query_facts,
                           suspected_duplicates)
from zmem.errors import ZmemError
from zmem.indexer import catch_up, open_index
from zmem.repo import commit_paths, commits_since, last_commit_with_trailer, open_repo
from zmem.retain import entity_key
from zmem.workspace import Workspace

BEGIN = "<!-- zmem:begin (written by `zmem reflect`; edits inside this block are replaced on the next run) -->"
END = "<!-- zmem:end -->"
SUMMARY = "### Summary"
TRAILER = "Zmem-Reflect"
MAX_PAGE_FACTS = 50
PROPOSAL_MIN_FACTS = 3      # a statement repeated in this many facts,
PROPOSAL_MIN_DAYS = 2       # on this many different days, is proposed for MEMORY.md
PROPOSAL_SIMILAR = 90.0


@dataclass
class ReflectResult:
    since: str | None
    new_facts: int = 0
    pages: list[dict] = field(default_factory=list)
    opinions: list[dict] = field(default_factory=list)
    proposals: list[dict] = field(default_factory=list)
    proposals_applied: bool = False
    files: list[str] = field(default_factory=list)
    diff: str = ""
    commit: str | None = None
    warnings: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)  # sources of the new facts this run used

    def to_json(self) -> dict:
        return {"since": self.since, "new_facts": self.new_facts, "evidence": self.evidence, "pages": self.pages, "opinions": self.opinions,
                "proposals": self.proposals, "proposals_applied": self.proposals_applied, "files": self.files,
                "commit": self.commit, "diff": self.diff, "warnings": self.warnings}


def reflect(ws: Workspace, *, since: dt.datetime | None = None, everything: bool = False, dry_run: bool = False,
            commit: bool = True, apply_proposals: bool = False, llm: bool = False) -> ReflectResult:
    """since: use facts committed after it; None: since the last reflect commit (everything if
    there was none); everything: all facts (evidence already recorded is still never re-applied)."""
    repo = open_repo(ws.root)
    if not dry_run:
        guarded = [p for p in sorted(repo.dirty_paths())
                   if p.startswith("bank/") or (apply_proposals and p.lower() == "memory.md")]
        if guarded:
            raise ZmemError(f"uncommitted changes in {', '.join(guarded[:3])}{' …' if len(guarded) > 3 else ''}; "
                            "reflect will not write over them",
                            hint="commit or stash them first, or preview with `zmem reflect --dry-run`")
    summarizer = None
    if llm:
        from zmem.summarize import ChatSettings, Summarizer
        summarizer = Summarizer(ChatSettings.from_config(ws.config.llm))
    after = None
    if everything:
        since = None
    elif since is None:
        after = last_commit_with_trailer(ws.root, TRAILER)  # by history, not dates: commits may be backdated
    result = ReflectResult(since=since.isoformat() if since else (f"commit {after[:12]}" if after else None))
    conn = open_index(ws)
    try:
        result.warnings += catch_up(ws, conn=conn).warnings
        facts = query_facts(conn)
        new = _new_facts(ws, conn, facts, since, after)
        result.new_facts = len(new)
        result.evidence = [f.source for f in _chronological(new)]
        contents: dict[str, tuple[str | None, str]] = {}  # path -> (old text or None, new text)
        opinion_file = _reflect_opinions(ws, new, result, contents)
        _reflect_pages(ws, conn, new, opinion_file, result, contents, summarizer)
        _duplicates(ws, conn, new, result)
        _proposals(ws, facts, opinion_file, result, contents, apply_proposals)
    finally:
        conn.close()
    changed = {p: v for p, v in contents.items() if v[0] != v[1]}
    result.files = sorted(changed)
    result.diff = "".join(_diff(p, *changed[p]) for p in result.files)
    if not changed or dry_run:
        return result
    for rel, (_, text) in changed.items():
        _write(ws, rel, text)
    if commit:
        sha, problem = commit_paths(ws.root, result.files, _message(result))
        if not sha:
            n = len(result.files)
            raise ZmemError(f"wrote {n} file{'s' * (n != 1)} ({', '.join(result.files[:3])}{' …' if n > 3 else ''}) "
                            f"but could not commit: {problem}",
                            hint="fix that, then commit them (`git add bank && git commit`) or discard them "
                                 "(`git restore --staged --worktree bank`); reflect refuses while bank/ has "
                                 "uncommitted changes")
        result.commit = sha
    return result


def _new_facts(ws: Workspace, conn, facts: list[FactRow], since: dt.datetime | None,
               after: str | None) -> list[FactRow]:
    """Facts whose line came in a commit after `since` (its commit time) or not yet reachable from
    the commit `after`, or is not committed yet; all facts when neither is given."""
    if since is None and after is None:
        return facts
    from zmem.history import attach_origins
    commits, touched = commits_since(ws.root, since=int(since.timestamp()) if since else None, after=after)
    touched |= open_repo(ws.root).dirty_paths()
    candidates = [f for f in facts if f.path in touched]  # only these files can hold newer lines
    attach_origins(ws, conn, candidates)
    return [f for f in candidates if f.commit is None or f.commit in commits]


def _chronological(facts: list[FactRow]) -> list[FactRow]:
    return sorted(facts, key=lambda f: (f.day or "", f.path, f.start_line))


# ----------------------------------------------------------------------------- opinions


def _reflect_opinions(ws: Workspace, new: list[FactRow], result: ReflectResult, contents: dict):
    path = ws.root / op_mod.OPINIONS_PATH
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    parsed = op_mod.parse(old or "")
    result.warnings += parsed.warnings
    known = {e.fact for o in parsed.opinions for e in o.evidence}
    changed: set[int] = set()
    before = {i: o.confidence for i, o in enumerate(parsed.opinions)}
    notes: dict[int, list[str]] = defaultdict(list)
    for f in _chronological([f for f in new if f.kind == "opinion"]):
        if f.id in known:
            continue
        known.add(f.id)
        keys = {entity_key(e) for e in f.entities}
        strength = f.confidence if f.confidence is not None else op_mod.NEW_DEFAULT
        hit = op_mod.match(parsed.opinions, f.text, keys)
        if hit is None:
            parsed.opinions.append(op_mod.Opinion(
                f.text, list(f.entities), strength, f.day,
                [op_mod.Evidence("supports", f.source, f.id, f.confidence, f.text)]))
            i = len(parsed.opinions) - 1
            before[i] = None
            notes[i].append(f"supports {f.source}")
        else:
            i, contradicts = hit
            o = parsed.opinions[i]
            o.confidence = op_mod.update(o.confidence, strength, contradicts)
            o.evidence.append(op_mod.Evidence("contradicts" if contradicts else "supports", f.source, f.id,
                                              f.confidence, f.text))
            o.updated = max(filter(None, (o.updated, f.day)), default=None)
            for name in f.entities:
                if entity_key(name) not in o.entity_keys:
                    o.entities.append(name)
            notes[i].append(f"{'contradicts' if contradicts else 'supports'} {f.source}")
        changed.add(i)
    for i in sorted(changed):
        o = parsed.opinions[i]
        result.opinions.append({"statement": o.statement, "entities": o.entities, "before": before[i],
                                "after": round(o.confidence, 2), "new": before[i] is None, "evidence": notes[i]})
    if changed:
        contents[op_mod.OPINIONS_PATH] = (old, parsed.render(changed))
    return parsed


# ----------------------------------------------------------------------------- entity pages


def _reflect_pages(ws: Workspace, conn, new: list[FactRow], opinion_file, result: ReflectResult, contents: dict,
                   summarizer=None):
    touched = {entity_key(name) for f in new for name in f.entities}
    for o in result.opinions:
        touched |= {entity_key(e) for e in o["entities"]}
    if not touched:
        return
    entities = all_entities(ws, conn)
    for key in sorted(touched):
        ent = entities.get(key)
        if ent is None:
            continue
        rel = ent.page or f"{ENTITY_DIR}{ent.slug}.md"
        if not _safe_page(rel):  # entity_slug never makes these; a guard against any path trick
            result.warnings.append(f"{rel}: not a file name directly in {ENTITY_DIR}; left alone")
            continue
        if rel in contents:  # two spellings whose slugs collide on a case-insensitive file system
            continue
        path = ws.root / rel
        if path.is_symlink():
            result.warnings.append(f"{rel}: a symlink; left alone")
            continue
        old = path.read_text(encoding="utf-8") if path.is_file() else None
        summary = _old_summary(old)
        if summarizer is not None:
            try:
                facts = query_facts(conn, entity=ent.key)
                text = summarizer.summary(ent.name, facts)
                newest = max((f.day for f in facts if f.day), default="undated")
                summary = f"{text}\n\n_Written by {summarizer.settings.model} from {len(facts)} facts up to {newest}._"
            except ZmemError as e:
                result.warnings.append(f"{rel}: no summary ({e.message})")
        block = _entity_block(conn, ent, opinion_file, summary)
        new_text, problem = put_block(old, ent.name, block)
        if problem:
            result.warnings.append(f"{rel}: {problem}; page left alone")
            continue
        contents[rel] = (old, new_text)
        if old != new_text:
            result.pages.append({"entity": ent.name, "path": rel, "created": old is None})


def _safe_page(rel: str) -> bool:
    """A page path zmem may write: bank/entities/<name>.md, one plain file name, no control chars."""
    name = rel[len(ENTITY_DIR):] if rel.startswith(ENTITY_DIR) else ""
    return bool(name) and not name.startswith(".") and "/" not in name and "\\" not in name \
        and not any(ord(c) < 32 or ord(c) == 127 for c in name)


def _duplicates(ws: Workspace, conn, new: list[FactRow], result: ReflectResult) -> None:
    """Warn about suspected duplicate spellings among the entities of the new facts (never merged)."""
    names = {entity_key(name) for f in new for name in f.entities}
    if not names:
        return
    entities = all_entities(ws, conn)
    touched = {entities[k].name for k in names if k in entities}
    for a, b, score in suspected_duplicates(entities):
        if a in touched or b in touched:
            result.warnings.append(duplicate_message(a, b, score))


def _old_summary(page: str | None) -> str | None:
    """The summary an earlier `reflect --llm` wrote into the block (kept until the next --llm run)."""
    if not page or BEGIN not in page:
        return None
    block = page[page.find(BEGIN):page.find(END) if END in page else len(page)]
    start = block.find(f"\n{SUMMARY}\n")
    if start < 0:
        return None
    body = block[start + len(SUMMARY) + 2:]
    stop = body.find("\n### ")
    return (body if stop < 0 else body[:stop]).strip() or None


def _entity_block(conn, ent, opinion_file, summary: str | None = None) -> str:
    facts = query_facts(conn, entity=ent.key)
    out = [BEGIN, f"## {ent.name}: what memory holds", ""]
    if summary:
        out += [SUMMARY, summary, ""]
    plain = [f for f in facts if f.kind != "relation"]
    out.append("### Facts")
    for f in plain[:MAX_PAGE_FACTS]:
        conf = f" (c={f.confidence:.2f})" if f.confidence is not None else ""
        out.append(f"- {f.day or 'undated'} · {f.kind}{conf}: {f.text} — {f.source}")
    if len(plain) > MAX_PAGE_FACTS:
        out.append(f"- … and {len(plain) - MAX_PAGE_FACTS} older facts: `zmem entity {ent.name}`")
    if not plain:
        out.append("- (none)")
    ops = [o for o in opinion_file.opinions if ent.key in o.entity_keys]
    if ops:
        out += ["", "### Opinions"]
        out += [f"- c={o.confidence:.2f}: {o.statement} — {op_mod.OPINIONS_PATH}" for o in ops]
    timeline = sorted((f for f in plain if f.event), key=lambda f: (f.event[0], f.event[1], f.path, f.start_line))
    if timeline:
        out += ["", "### Timeline"]
        for f in timeline:
            span = f.event[0] if f.event[0] == f.event[1] else f"{f.event[0]} → {f.event[1]}"
            out.append(f"- {span}: {f.text} — {f.source}")
    _, edges = neighbourhood(conn, ent.key, depth=1)
    related = []
    for e in edges:
        if ent.key not in (e.source, e.target):
            continue
        other = e.target if e.source == ent.key else e.source
        label = _label(conn, other)
        if e.type == "co-mentioned":
            related.append(f"- @{label}: co-mentioned ×{e.count}, last {e.last_day or 'undated'}")
        else:
            arrow = f"{e.type} → @{label}" if e.source == ent.key else f"← {e.type} of @{label}"
            related.append(f"- {arrow} — {', '.join(e.evidence[-3:])}")
    if related:
        out += ["", "### Related"] + related
    out.append(END)
    return "\n".join(out) + "\n"


def _label(conn, key: str) -> str:
    """The most used spelling of an entity key."""
    best: dict[str, int] = {}
    for names, in conn.execute("SELECT f.names FROM facts f JOIN fact_entities e ON e.fact_id = f.id "
                               "WHERE e.entity = ?", (key,)):
        for name in names.split("\t"):
            if entity_key(name) == key:
                best[name] = best.get(name, 0) + 1
    if not best:
        return key
    name = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    return f"[{name}]" if " " in name else name


def put_block(old: str | None, title: str, block: str) -> tuple[str, str | None]:
    """The page with the managed block replaced (or added); (old, why) when the markers are broken."""
    if old is None:
        return f"# {title}\n\n{block}", None
    begin, end = old.find(BEGIN.split(" (")[0]), old.find(END)
    if begin < 0 and end < 0:
        sep = "" if old.endswith("\n\n") else ("\n" if old.endswith("\n") else "\n\n")
        return old + sep + block, None
    if begin < 0 or end < begin:
        return old, "its zmem:begin/zmem:end markers are unbalanced"
    if old.find(BEGIN.split(" (")[0], begin + 1) >= 0:
        return old, "it has two zmem blocks"
    stop = old.find("\n", end)
    stop = len(old) if stop < 0 else stop + 1
    return old[:begin] + block + old[stop:], None


# ----------------------------------------------------------------------------- MEMORY.md proposals


def _proposals(ws: Workspace, facts: list[FactRow], opinion_file, result: ReflectResult, contents: dict,
               apply: bool) -> None:
    from rapidfuzz import fuzz
    memory_path = next((n for n in ("MEMORY.md", "memory.md") if (ws.root / n).is_file()), "MEMORY.md")
    memory = (ws.root / memory_path).read_text(encoding="utf-8") if (ws.root / memory_path).is_file() else ""
    present = [line.casefold() for line in memory.splitlines() if line.strip()]
    groups: list[list[FactRow]] = []
    for f in sorted((f for f in facts if f.kind in ("world", "experience", "observation")),
                    key=lambda f: (f.day or "", f.path, f.start_line)):
        text = f.text.casefold()
        for g in groups:
            if set(g[0].entities) == set(f.entities) and fuzz.token_set_ratio(g[0].text.casefold(), text) >= PROPOSAL_SIMILAR:
                g.append(f)
                break
        else:
            groups.append([f])
    for g in groups:
        days = {f.day for f in g if f.day}
        if len(g) < PROPOSAL_MIN_FACTS or len(days) < PROPOSAL_MIN_DAYS:
            continue
        latest = g[-1]
        if any(fuzz.partial_ratio(latest.text.casefold(), line) >= PROPOSAL_SIMILAR for line in present):
            continue
        who = " ".join("@" + e for e in latest.entities)
        result.proposals.append({"text": (who + ": " if who else "") + latest.text,
                                 "reason": f"stated in {len(g)} facts on {len(days)} days",
                                 "sources": [f.source for f in g]})
    for o in opinion_file.opinions:
        supports = [e for e in o.evidence if e.relation == "supports"]
        if o.confidence >= 0.85 and len(supports) >= PROPOSAL_MIN_FACTS and \
                not any(fuzz.partial_ratio(o.statement.casefold(), line) >= PROPOSAL_SIMILAR for line in present):
            who = " ".join("@" + e for e in o.entities)
            result.proposals.append({"text": (who + ": " if who else "") + o.statement + f" (c={o.confidence:.2f})",
                                     "reason": f"opinion at c={o.confidence:.2f} with {len(supports)} supporting facts",
                                     "sources": [e.citation for e in supports]})
    if apply and result.proposals:
        lines = [f"- {p['text']} ({', '.join(p['sources'][-3:])})" for p in result.proposals]
        base = memory if memory else "# MEMORY\n"
        heading = "## Durable (proposed by zmem reflect)"
        if heading in base:
            new = base.rstrip("\n") + "\n" + "\n".join(lines) + "\n"
        else:
            new = base.rstrip("\n") + f"\n\n{heading}\n\n" + "\n".join(lines) + "\n"
        contents[memory_path] = (memory or None, new)
        result.proposals_applied = True


# ----------------------------------------------------------------------------- writing


def _diff(rel: str, old: str | None, new: str) -> str:
    return "".join(difflib.unified_diff((old or "").splitlines(keepends=True), new.splitlines(keepends=True),
                                        "/dev/null" if old is None else f"a/{rel}", f"b/{rel}"))


def _write(ws: Workspace, rel: str, text: str) -> None:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".zmem-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _message(r: ReflectResult) -> str:
    news = sum(1 for o in r.opinions if o["new"])
    moved = len(r.opinions) - news
    head = [f"{len(r.pages)} entity page{'s' * (len(r.pages) != 1)}"]
    if news:
        head.append(f"{news} new opinion{'s' * (news != 1)}")
    if moved:
        head.append(f"{moved} confidence change{'s' * (moved != 1)}")
    if r.proposals_applied:
        head.append(f"{len(r.proposals)} MEMORY.md addition{'s' * (len(r.proposals) != 1)}")
    body = [f"zmem reflect: {', '.join(head)}", ""]
    if r.pages:
        body.append("Entity pages: " + ", ".join(p["entity"] + (" (new)" if p["created"] else "") for p in r.pages))
    for o in r.opinions:
        change = f"new, c={o['after']:.2f}" if o["new"] else f"c {o['before']:.2f} -> {o['after']:.2f}"
        body.append(f"Opinion \"{_clip(o['statement'])}\": {change}")
    if r.proposals and not r.proposals_applied:
        body.append(f"Proposals for MEMORY.md (not applied): {len(r.proposals)}")
    evidence = sorted(set(r.evidence))
    body += ["", f"{TRAILER}: since {r.since or 'the beginning'}, {r.new_facts} new facts"]
    body += [f"Zmem-Evidence: {e}" for e in evidence[:200]]
    return "\n".join(body) + "\n"


def _clip(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[:n - 1] + "…"
