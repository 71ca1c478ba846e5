"""`zmem reflect`: new facts -> entity pages, opinion confidence and MEMORY.md proposals, as
Markdown edits in one reviewable git commit. Deterministic and offline; running it again with no
new commits changes nothing.

Reflect reads the facts as HEAD holds them (_committed_view): every line it cites is in a commit,
so `zmem blame` can follow the evidence; uncommitted facts wait for a later run, with a warning.

- bank/entities/<Slug>.md: a block between BEGIN and END markers holds the entity's facts, opinions,
  timeline and relations; everything outside the block belongs to people and is never touched.
  Pages of entities whose facts changed since the last reflect (new, moved or retracted) are redone.
- bank/opinions.md: new opinions from `O` facts; evidence moves confidence (opinions.update).
  An evidence line records the fact id, so no fact is ever applied twice; a fact that moved is
  re-cited by its id, one that is gone is marked retracted and stops counting (opinions.derive).
- MEMORY.md: facts stated again and again are proposed, and appended only with apply_proposals.

Files are rewritten keeping every byte reflect does not change (line endings, a lone CR, a BOM);
one that is not valid UTF-8 is left alone with a warning (_load). Facts in the files it rewrites
move with them, and are cited where they stand once written (_settle_lines).
"""
from __future__ import annotations

import datetime as dt
import difflib
import os
import re
import stat
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zmem.text import opinions as op_mod
from zmem.query.entities import (BEGIN, END, ENTITY_DIR, block_lines, FactRow, all_entities, duplicate_message, fact_citation, neighbourhood,
                           query_facts, suspected_duplicates)
from zmem.errors import ZmemError, example
from zmem.index.catchup import catch_up, insert_facts, open_index
from zmem.text.markdown import day_from_path, decode_note
from zmem.text.retain import Fact, entity_key, legacy_fact_id, parse_facts
from zmem.workspace.core import Workspace, check_no_symlink, open_dir_in, write_through_symlink

if TYPE_CHECKING:
    from zmem.git.repo import Repo

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
            commit: bool = True, apply_proposals: bool = False, llm: bool = False, conn=None) -> ReflectResult:
    """since: use facts committed after it; None: since the last reflect commit (everything if
    there was none); everything: all facts (evidence already recorded is still never re-applied).
    conn: an open index connection to use (left open)."""
    # pygit2 (~100 ms) only when reflecting: doctor imports this module for put_block
    from zmem.git.commit import commit_paths
    from zmem.git.repo import last_commit_with_trailer, open_repo
    repo = open_repo(ws.root)
    if not dry_run:
        guarded = [p for p in sorted(repo.dirty_paths())
                   if p.startswith("bank/") or (apply_proposals and p.lower() == "memory.md")]
        if guarded:
            raise ZmemError(f"uncommitted changes in {', '.join(guarded[:3])}{' …' if len(guarded) > 3 else ''}; "
                            "reflect will not write over them",
                            hint=f"commit or stash them first, or preview with `{example('reflect', dry_run=True)}`")
    summarizer = None
    if llm:
        from zmem.reflect.summarize import ChatSettings, Summarizer
        summarizer = Summarizer(ChatSettings.from_config(ws.config))
    after = None
    if everything:
        since = None
    elif since is None:
        after = last_commit_with_trailer(ws.root, TRAILER)  # by history, not dates: commits may be backdated
    result = ReflectResult(since=since.isoformat() if since else (f"commit {after[:12]}" if after else None))
    own = conn is None
    if own:
        conn = open_index(ws)
    try:
        result.warnings += catch_up(ws, conn=conn).warnings
        skipped = _committed_view(ws, conn, repo)
        if skipped:
            result.warnings.append(skipped)
        facts = query_facts(conn)
        new, touched = _new_facts(ws, conn, repo, facts, since, after)
        result.new_facts = len(new)
        contents: dict[str, tuple[str | None, str]] = {}  # path -> (old text or None, new text)
        ops = _reflect_opinions(ws, repo, facts, new, result, contents)
        pages = _reflect_pages(ws, conn, new, facts, touched, ops.parsed, result, contents, summarizer)
        _settle_lines(ws, conn, facts, ops, pages, result, contents)
        result.evidence = [f.source for f in _chronological(new)]
        _duplicates(ws, conn, new, result)
        _proposals(ws, facts, ops.parsed, result, contents, apply_proposals)
    finally:
        if own:
            conn.close()
    changed = {p: v for p, v in contents.items() if v[0] != v[1]}
    result.files = sorted(changed)
    result.diff = "".join(_diff(p, *changed[p]) for p in result.files)
    if not changed or dry_run:
        return result
    written: list[str] = []
    for rel, (_, text) in changed.items():
        try:
            _write(ws, rel, text)
        except OSError as e:
            done = f"; already written: {', '.join(written)}" if written else ""
            raise ZmemError(f"could not write {rel}: {e.strerror or e}{done}",
                            hint="fix that (disk space, permissions) and run reflect again"
                                 + (f"; `git restore -- {' '.join(written)}` discards what was written" if written else "")) from None
        written.append(rel)
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


_VIEW_TABLES = ("facts", "fact_entities", "relations")


def _committed_view(ws: Workspace, conn, repo: Repo) -> str | None:
    """Make this connection see the Retain facts as HEAD holds them; a warning naming what that
    leaves out, or None.

    A page or opinion that cites an uncommitted line breaks the evidence chain (blame finds no commit,
    and the line may never be committed as it is), and an uncommitted line inserted above committed
    facts moves their line numbers away from HEAD's. So memory files whose working-tree facts differ
    from HEAD's are read from HEAD instead; their uncommitted facts wait for a later run. Temp tables
    named like the index's own shadow them for this connection only (SQLite looks in temp first), so
    every query after this (query_facts, all_entities, edges) sees HEAD; the index is untouched and
    the shadow goes when the connection closes."""
    head = repo.head()
    stale: dict[str, list[Fact]] = {}
    changes = 0
    for rel in sorted(p for p in repo.dirty_paths() if ws.is_memory_path(p)):
        committed = _facts_in(ws, rel, repo.file_at(head, rel) if head else None)
        indexed = set(conn.execute("SELECT fid, start_line, end_line FROM facts WHERE path = ?", (rel,)))
        at_head = {(f.fact_id(rel), f.start_line, f.end_line) for f in committed}
        if indexed != at_head:
            stale[rel] = committed
            # new, edited or moved facts, and retractions not committed yet
            changes += len(indexed - at_head) + len({r[0] for r in at_head} - {r[0] for r in indexed})
    if not stale:
        return None
    _shadow(conn, stale)
    n, k = changes, len(stale)
    return (f"{n} uncommitted fact change{'s' * (n != 1)} in {k} file{'s' * (k != 1)} "
            f"({', '.join(list(stale)[:3])}{' …' if k > 3 else ''}) left for a later run: reflect cites committed "
            "lines only; commit, then run reflect again")


def _shadow(conn, files: dict[str, list[Fact]]) -> None:
    """Make this connection see `files` holding these facts (the rest as the index has them): temp
    tables named like the index's own, made on first use, shadow them for this connection only."""
    if not conn.execute("SELECT 1 FROM temp.sqlite_master WHERE name = 'facts'").fetchone():
        schema = conn.execute("SELECT type, sql FROM main.sqlite_master WHERE tbl_name IN (?, ?, ?) AND sql IS NOT NULL "
                              "AND type IN ('table', 'index') ORDER BY type = 'index'", _VIEW_TABLES).fetchall()
        for kind, sql in schema:
            temp = "CREATE TEMP TABLE " if kind == "table" else "CREATE INDEX temp."
            conn.execute(re.sub(r"^CREATE (TABLE|INDEX) ", temp, sql))
        marks = ",".join("?" * len(files))
        conn.execute(f"INSERT INTO temp.facts SELECT * FROM main.facts WHERE path NOT IN ({marks})", list(files))
        for table in _VIEW_TABLES[1:]:
            conn.execute(f"INSERT INTO temp.{table} SELECT * FROM main.{table} "
                         "WHERE fact_id IN (SELECT id FROM temp.facts)")
    else:
        for rel in files:
            for table in _VIEW_TABLES[1:]:
                conn.execute(f"DELETE FROM temp.{table} WHERE fact_id IN "
                             "(SELECT id FROM temp.facts WHERE path = ?)", (rel,))
            conn.execute("DELETE FROM temp.facts WHERE path = ?", (rel,))
    for rel, facts in files.items():
        insert_facts(conn, rel, day_from_path(rel), facts, schema="temp")


def _facts_in(ws: Workspace, rel: str, data: bytes | None) -> list[Fact]:
    """The Retain facts of one version of a file, read as the indexer reads them."""
    text = decode_note(rel, data, ws.config.max_file_mb)[0] if data is not None else None
    return parse_facts(text, rel, day_from_path(rel))[0] if text else []


def _new_facts(ws: Workspace, conn, repo: Repo, facts: list[FactRow], since: dt.datetime | None,
               after: str | None) -> tuple[list[FactRow], set[str] | None]:
    """(the facts whose line came in a commit after `since` (its commit time) or not reachable from
    the commit `after`, the files those commits touched); (all facts, None) when neither is given."""
    if since is None and after is None:
        return facts, None
    from zmem.history.asof import blame_lines
    from zmem.git.repo import commits_since
    commits, touched = commits_since(ws.root, since=int(since.timestamp()) if since else None, after=after)
    by_path: dict[str, list[FactRow]] = defaultdict(list)
    for f in facts:
        if f.path in touched:  # only these files can hold newer lines
            by_path[f.path].append(f)
    head = repo.head()
    for rel, group in by_path.items():
        # blamed at HEAD, not in the working tree: the facts and their line numbers are HEAD's
        lines = blame_lines(ws, conn, rel, head, repo=repo) or {}
        for f in group:
            f.commit = lines[f.start_line][0] if f.start_line in lines else None
    return [f for group in by_path.values() for f in group if f.commit in commits], touched


def _chronological(facts: list[FactRow]) -> list[FactRow]:
    return sorted(facts, key=lambda f: (f.day or "", f.path, f.start_line))


# ----------------------------------------------------------------------------- opinions


@dataclass
class _Opinions:
    """bank/opinions.md as this run found it and what it changes."""
    parsed: op_mod.OpinionsFile
    old: str | None                                   # the file's text (None: no file yet)
    changed: set[int] = field(default_factory=set)    # opinions written anew
    patched: set[int] = field(default_factory=set)    # opinions whose evidence or confidence lines change
    reported: dict[int, dict] = field(default_factory=dict)  # opinion -> its entry in ReflectResult.opinions

    def put(self, contents: dict) -> None:
        if self.changed or self.patched:
            # re-citing or retracting evidence touches only those lines: a person's wording stays
            contents[op_mod.OPINIONS_PATH] = (self.old, self.parsed.render(self.changed, self.patched - self.changed))


def _reflect_opinions(ws: Workspace, repo: Repo, facts: list[FactRow], new: list[FactRow], result: ReflectResult,
                      contents: dict) -> _Opinions:
    readable, old = _load(ws, op_mod.OPINIONS_PATH, result)
    if not readable:  # opinions still show on the pages, as far as they can be read; the file is left alone
        return _Opinions(op_mod.read(ws.root), None)
    parsed = op_mod.parse(old or "")
    result.warnings += parsed.warnings
    _map_legacy_ids(parsed, facts)
    before = {i: o.confidence for i, o in enumerate(parsed.opinions)}
    derived = {i: o.follows_evidence for i, o in enumerate(parsed.opinions)}  # before anything changes
    notes: dict[int, list[str]] = defaultdict(list)
    patched, recounted = _recheck_evidence(ws, repo, parsed, facts, notes)
    changed: set[int] = set()  # opinions written anew: new ones, and those with new evidence
    reported: dict[int, dict] = {}  # opinion -> its entry in result.opinions
    for i in sorted(recounted):
        if not derived[i]:
            o = parsed.opinions[i]
            result.warnings.append(
                f"{op_mod.OPINIONS_PATH}: \"{_clip(o.statement)}\": confidence {o.confidence:.2f} was set by hand, "
                f"so reflect kept it although evidence was retracted or restored (what counts now gives "
                f"{op_mod.derive(o.evidence):.2f}); review it")
    known = {e.fact for o in parsed.opinions for e in o.evidence}
    for f in _chronological([f for f in new if f.kind == "opinion"]):
        if f.id in known:
            continue
        known.add(f.id)
        keys = {entity_key(e) for e in f.entities}
        strength = f.confidence if f.confidence is not None else op_mod.NEW_DEFAULT
        hit = op_mod.match(parsed.opinions, f.text, keys)
        if hit is None:
            parsed.opinions.append(op_mod.Opinion(
                f.text, list(f.entities), round(strength, 2), f.day,
                [op_mod.Evidence("supports", f.source, f.id, f.confidence, f.text)]))
            i = len(parsed.opinions) - 1
            before[i] = None
            notes[i].append(f"supports {f.source}")
        else:
            i, contradicts = hit
            o = parsed.opinions[i]
            if not derived.get(i, True):  # a confidence set by hand moves from where the person put it
                o.confidence = op_mod.update(o.confidence, strength, contradicts)
            o.evidence.append(op_mod.Evidence("contradicts" if contradicts else "supports", f.source, f.id,
                                              f.confidence, f.text))
            o.updated = max(filter(None, (o.updated, f.day)), default=None)
            for name in f.entities:
                if entity_key(name) not in o.entity_keys:
                    o.entities.append(name)
            notes[i].append(f"{'contradicts' if contradicts else 'supports'} {f.source}")
        changed.add(i)
    for i in sorted(changed | patched):
        o = parsed.opinions[i]
        if derived.get(i, True):  # recomputed, so retracted evidence counts exactly as if never applied
            o.confidence = op_mod.derive(o.evidence)
        result.opinions.append({"statement": o.statement, "entities": o.entities, "before": before[i],
                                "after": round(o.confidence, 2), "new": before[i] is None, "evidence": notes[i]})
        reported[i] = result.opinions[-1]
    ops = _Opinions(parsed, old, changed, patched, reported)
    ops.put(contents)
    return ops


def _map_legacy_ids(parsed, facts: list[FactRow]) -> None:
    """Evidence recorded before fact ids named their entities cites the old id (retain.legacy_fact_id),
    which same-worded facts about other entities in that file share now: it is taken to mean the
    fact about the opinion's entities (as reflect matched it then), the one at the cited line first.
    Mapped in memory: the file keeps the old id in every line this run does not rewrite (blame reads both)."""
    current = {f.id for f in facts}
    legacy: dict[str, list[FactRow]] = defaultdict(list)
    for f in facts:
        old = legacy_fact_id(f.path, f.kind, f.text)
        if old != f.id:
            legacy[old].append(f)
    for o in parsed.opinions if legacy else ():
        keys = o.entity_keys
        for e in o.evidence:
            if e.fact in current or e.fact not in legacy:
                continue
            about = [f for f in legacy[e.fact] if not keys or keys & {entity_key(n) for n in f.entities}]
            f = next((f for f in about if f.source == e.citation), about[0] if about else None)
            if f is not None:  # none: the fact about these entities is gone (the evidence is retracted)
                e.fact = f.id


def _recheck_evidence(ws: Workspace, repo: Repo, parsed, facts: list[FactRow], notes: dict
                      ) -> tuple[set[int], set[int]]:
    """Evidence against the facts as they are now: a fact that moved is re-cited by its id (stable
    while its file, kind, text and entities stay); one gone from the notes is marked retracted and cited where
    it last was in a commit (kept for the record); one that came back counts again. Returns (the
    opinions whose lines changed, those whose counting evidence changed)."""
    where: dict[str, list[str]] = defaultdict(list)
    for f in facts:
        where[f.id].append(f.source)
    changed: set[int] = set()
    recounted: set[int] = set()
    for i, o in enumerate(parsed.opinions):
        for e in o.evidence:
            sources = where.get(e.fact)
            if sources:
                cite = e.citation if e.citation in sources else sources[0]  # the same fact twice in a file
                if cite != e.citation or e.retracted:
                    notes[i].append(f"{'restored' if e.retracted else 're-cited'} {e.citation} -> {cite}")
                    if e.retracted:
                        recounted.add(i)
                    e.citation, e.retracted = cite, False
                    changed.add(i)
            elif not e.retracted:
                rel = e.citation.split("#")[0].split("@")[0]
                e.citation, e.retracted = _last_citation(ws, repo, rel, e.fact) or e.citation, True
                notes[i].append(f"retracted {e.citation}")
                recounted.add(i)
                changed.add(i)
    return changed, recounted


def _last_citation(ws: Workspace, repo: Repo, rel: str, fid: str) -> str | None:
    """`path@commit#Lnn` of a retracted fact in the newest commit that still held it (`zmem get`
    reads it back), or None when no commit ever did."""
    from zmem.git.repo import file_log
    for entry in file_log(ws.root, rel):
        for f in _facts_in(ws, rel, repo.file_at(entry["commit"], rel)):
            if fid in (f.fact_id(rel), legacy_fact_id(rel, f.kind, f.text)):
                return fact_citation(rel, f.start_line, f.end_line, entry["commit"])
    return None


# ----------------------------------------------------------------------------- entity pages


@dataclass
class _Page:
    """An entity page this run writes: its block is rendered from the index (_render_pages)."""
    ent: object
    rel: str
    old: str | None       # the file's text (None: a new page)
    summary: str | None


def _reflect_pages(ws: Workspace, conn, new: list[FactRow], facts: list[FactRow], touched: set[str] | None,
                   opinion_file, result: ReflectResult, contents: dict, summarizer=None) -> list[_Page]:
    """Pages of the entities in new facts and changed opinions (created when missing), and the existing
    pages that may show facts changed since the last reflect (_stale_pages; touched: the files changed
    since, None for all)."""
    wanted = {entity_key(name) for f in new for name in f.entities}
    for o in result.opinions:
        wanted |= {entity_key(e) for e in o["entities"]}
    if not wanted and touched == set():  # nothing new, no file changed since the last reflect
        return []
    pages: list[_Page] = []
    entities = all_entities(ws, conn)
    for key in sorted(wanted | _stale_pages(ws, entities, facts, touched)):
        ent = entities.get(key)
        if ent is None:
            continue
        rel = ent.page or f"{ENTITY_DIR}{ent.slug}.md"
        if not _safe_page(rel):  # entity_slug never makes these; a guard against any path trick
            result.warnings.append(f"{rel}: not a file name directly in {ENTITY_DIR}; left alone")
            continue
        if rel in contents or any(p.rel == rel for p in pages):  # two spellings whose slugs collide
            continue                                                # on a case-insensitive file system
        try:
            is_link = stat.S_ISLNK(os.lstat(ws.root / rel).st_mode)
        except FileNotFoundError:
            is_link = False
        except OSError as e:  # a name the file system refuses, a directory it may not search: skip, never crash
            result.warnings.append(f"{rel}: cannot be used ({e.strerror or e}); page of {ent.name!r} left alone")
            continue
        if is_link:
            result.warnings.append(f"{rel}: a symlink; left alone")
            continue
        readable, old = _load(ws, rel, result)
        if not readable or (old is None and key not in wanted):  # refreshing never creates a page
            continue
        problem = put_block(old, ent.name, "")[1]
        if problem:
            result.warnings.append(f"{rel}: {problem}; page left alone")
            continue
        summary = _old_summary(old)
        if summarizer is not None:
            try:
                seen = query_facts(conn, entity=ent.key)
                text = summarizer.summary(ent.name, seen)
                newest = max((f.day for f in seen if f.day), default="undated")
                summary = f"{text}\n\n_Written by {summarizer.settings.model} from {len(seen)} facts up to {newest}._"
            except ZmemError as e:
                result.warnings.append(f"{rel}: no summary ({e.message})")
        pages.append(_Page(ent, rel, old, summary))
    _render_pages(conn, pages, opinion_file, result, contents)
    return pages


def _render_pages(conn, pages: list[_Page], opinion_file, result: ReflectResult, contents: dict) -> None:
    """Each page with its block written from what the index (as this connection sees it) holds now."""
    result.pages.clear()
    for p in pages:
        new_text = put_block(p.old, p.ent.name, _entity_block(conn, p.ent, opinion_file, p.summary))[0]
        contents[p.rel] = (p.old, new_text)
        if p.old != new_text:
            result.pages.append({"entity": p.ent.name, "path": p.rel, "created": p.old is None})


def _stale_pages(ws: Workspace, entities: dict, facts: list[FactRow], touched: set[str] | None) -> set[str]:
    """Entities whose page may show facts that changed in the files `touched` (None: every page):
    those with a fact in such a file (added, moved, edited), and those whose block cites such a file
    or leaves older facts out, since a retracted fact shows only there. Other pages are not redone."""
    if touched is None:
        return {key for key, ent in entities.items() if ent.page}
    if not touched:
        return set()
    keys = {entity_key(name) for f in facts if f.path in touched for name in f.entities}
    for key, ent in entities.items():
        if ent.page and key not in keys:
            block = _block(_read(ws.root / ent.page))
            # " older facts": the line _entity_block writes when it leaves facts out
            if " older facts: `zmem entity " in block or any(f"{p}#L" in block for p in touched):
                keys.add(key)
    return keys


def _read(path) -> str | None:
    """A file's text for reading only (undecodable bytes as U+FFFD), or None."""
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None


def _load(ws: Workspace, rel: str, result: ReflectResult) -> tuple[bool, str | None]:
    """(True, the text of a file reflect may rewrite) — exactly its bytes decoded: line endings
    (CRLF, or a lone CR, which is no line break to the indexer, git or `zmem get`) and a byte order
    mark are kept, so the lines reflect does not change are written back as they were; (True, None)
    when it does not exist; (False, None) with a warning when it must be left alone: rewriting
    undecodable bytes would replace them with U+FFFD. A symlink (the file, bank/ or a directory
    between) is refused before anything is read or written: the page would be read from, and
    written to, outside the workspace."""
    check_no_symlink(ws.root, rel)
    path = ws.root / rel
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return True, None
    except OSError as e:
        result.warnings.append(f"{rel}: cannot be read ({e.strerror or e}); left alone")
        return False, None
    try:
        return True, data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        result.warnings.append(f"{rel}:{line}: invalid UTF-8; reflect leaves this file alone (rewriting it would "
                               "change bytes it cannot read); save it as UTF-8, then run `zmem reflect --since all`")
        return False, None


def _block(page: str | None) -> str:
    """The zmem-managed block of a page ("" without one)."""
    opens, closes = block_lines(page) if page else ([], [])
    if not opens:
        return ""
    end = next((c for c in closes if c > opens[0]), -1)
    return page[opens[0]:end]


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
    block = _block(page).replace("\r\n", "\n")
    if not block:
        return None
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
    ops = [o for o in opinion_file.opinions if ent.key in o.entity_keys and not o.retracted]
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
    """The page with the managed block replaced (or added); (old, why) when the markers are broken.
    Only the block's lines change: the rest keeps its bytes (line endings, a byte order mark), and
    the block takes the page's line ending (its first line's, as `zmem append` does)."""
    if old is None:
        return f"# {title}\n\n{block}", None
    eol = "\r\n" if old.split("\n", 1)[0].endswith("\r") and "\n" in old else "\n"
    block = block.replace("\r\n", "\n").replace("\n", eol)
    opens, closes = block_lines(old)
    if not opens and not closes:
        if not old.removeprefix("\ufeff"):
            return old + block, None
        if not old.endswith("\n"):
            return old + eol + eol + block, None
        last = old[:-1].removesuffix("\r")  # the page before its last line ending
        blank = not last.removeprefix("\ufeff") or last.endswith("\n")  # is its last line empty?
        return old + ("" if blank else eol) + block, None
    if len(opens) > 1:
        return old, "it has two zmem blocks"
    if len(opens) != 1 or len(closes) != 1 or closes[0] < opens[0]:
        return old, "its zmem:begin/zmem:end markers are unbalanced"
    begin, end = opens[0], closes[0]
    stop = old.find("\n", end)
    stop = len(old) if stop < 0 else stop + 1
    return old[:begin] + block + old[stop:], None


# ----------------------------------------------------------------------------- lines that move


def _settle_lines(ws: Workspace, conn, facts: list[FactRow], ops: _Opinions, pages: list[_Page],
                  result: ReflectResult, contents: dict) -> None:
    """Cite the facts of the files this run rewrites at the lines they have once written.

    Facts can sit in the files reflect writes: a page's block may stand above its own Retain
    section, and an opinion that gains an evidence line pushes down the facts after it in
    bank/opinions.md. Cited at their lines in HEAD, they would be stale as soon as the commit is
    made. So each rewritten file's facts are read back from its new text as the indexer will read
    them, matched to the ones this run sees by id, in order; the FactRows, this connection's view
    (_shadow) and the evidence lines follow them, and the opinions and pages are rendered again.
    No line count depends on a line number (a block has one line per fact, an evidence entry is
    one line), so the second rendering leaves the facts where the first put them."""
    by_path: dict[str, list[FactRow]] = defaultdict(list)
    for f in sorted(facts, key=lambda f: f.start_line):
        if f.path in contents:
            by_path[f.path].append(f)
    for _ in range(3):
        moved: dict[str, list[Fact]] = {}
        for rel, (old, new) in contents.items():
            if old is None or old == new:
                continue
            seen = by_path.get(rel, [])
            after = _facts_in(ws, rel, new.encode("utf-8"))
            if [f.id for f in seen] != [a.fact_id(rel) for a in after]:
                continue  # not the facts this run sees (a dry run over unsaved edits): left as they are
            if any((f.start_line, f.end_line) != (a.start_line, a.end_line) for f, a in zip(seen, after)):
                moved[rel] = after
        if not moved:
            return
        cites: dict[str, str] = {}  # citation now -> citation once written
        for rel, after in moved.items():
            for f, a in zip(by_path[rel], after):
                before = f.source
                f.start_line, f.end_line = a.start_line, a.end_line
                cites[before] = f.source
        _shadow(conn, moved)
        for entry in result.opinions:  # before the notes below, which cite where facts are once written
            entry["evidence"] = [_recited(n, cites) for n in entry["evidence"]]
        for i, o in enumerate(ops.parsed.opinions):
            for e in o.evidence:
                if e.retracted or cites.get(e.citation, e.citation) == e.citation:
                    continue
                note = f"re-cited {e.citation} -> {cites[e.citation]}"
                e.citation = cites[e.citation]
                ops.patched.add(i)
                if i not in ops.reported:
                    c = round(o.confidence, 2)
                    ops.reported[i] = {"statement": o.statement, "entities": o.entities, "before": c, "after": c,
                                       "new": False, "evidence": []}
                    result.opinions.append(ops.reported[i])
                ops.reported[i]["evidence"].append(note)
        ops.put(contents)
        _render_pages(conn, pages, ops.parsed, result, contents)
    result.warnings.append("reflect could not settle the line numbers of facts in the files it rewrites; "
                           "check its citations with `zmem get`")


def _recited(note: str, cites: dict[str, str]) -> str:
    """An evidence note ("supports X", "re-cited A -> X") citing where X is once the files are written."""
    head, _, cite = note.rpartition(" ")
    return f"{head} {cites[cite]}" if cite in cites else note


# ----------------------------------------------------------------------------- MEMORY.md proposals


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d+(?:[.,:]\d+)*", text)


def _proposals(ws: Workspace, facts: list[FactRow], opinion_file, result: ReflectResult, contents: dict,
               apply: bool) -> None:
    from rapidfuzz import fuzz
    memory_path = next((n for n in ("MEMORY.md", "memory.md") if (ws.root / n).is_file()), "MEMORY.md")
    memory = _read(ws.root / memory_path) or ""
    present = [line.casefold() for line in memory.splitlines() if line.strip()]
    groups: list[list[FactRow]] = []
    stated = sorted((f for f in facts if f.kind in ("world", "experience", "observation")),
                    key=lambda f: (f.day or "", f.path, f.start_line))

    def same(a: FactRow, b: FactRow) -> bool:
        """The same statement: similar words (token_set_ratio alone scores a subset 100: `No longer lives in
        Lisbon` with `Lives in Lisbon`), which opinions' compare says support each other; numbers alike."""
        return set(a.entities) == set(b.entities) and \
            fuzz.token_set_ratio(a.text.casefold(), b.text.casefold()) >= PROPOSAL_SIMILAR and \
            op_mod.compare(a.text, b.text)[0] == "supports" and _numbers(a.text) == _numbers(b.text)
    for f in stated:
        g = next((g for g in groups if same(g[0], f)), None)
        if g is not None:
            g.append(f)
        else:
            groups.append([f])
    for g in groups:
        days = {f.day for f in g if f.day}
        if len(g) < PROPOSAL_MIN_FACTS or len(days) < PROPOSAL_MIN_DAYS:
            continue
        later = [f for f in stated if (f.day or "") > (g[-1].day or "") and set(f.entities) == set(g[-1].entities)]
        if any(op_mod.compare(g[-1].text, f.text)[0] == "contradicts" for f in later):
            continue  # said often, then no longer: not durable
        latest = g[-1]
        if any(fuzz.partial_ratio(latest.text.casefold(), line) >= PROPOSAL_SIMILAR for line in present):
            continue
        who = " ".join("@" + e for e in latest.entities)
        result.proposals.append({"text": (who + ": " if who else "") + latest.text,
                                 "reason": f"stated in {len(g)} facts on {len(days)} days",
                                 "sources": [f.source for f in g]})
    for o in opinion_file.opinions:
        supports = [e for e in o.evidence if e.relation == "supports" and not e.retracted]
        if o.confidence >= 0.85 and len(supports) >= PROPOSAL_MIN_FACTS and \
                not any(fuzz.partial_ratio(o.statement.casefold(), line) >= PROPOSAL_SIMILAR for line in present):
            who = " ".join("@" + e for e in o.entities)
            result.proposals.append({"text": (who + ": " if who else "") + o.statement + f" (c={o.confidence:.2f})",
                                     "reason": f"opinion at c={o.confidence:.2f} with {len(supports)} supporting facts",
                                     "sources": [e.citation for e in supports]})
    if apply and result.proposals:
        readable, old = _load(ws, memory_path, result)
        if not readable:
            return
        lines = [f"- {p['text']} ({', '.join(p['sources'][-3:])})" for p in result.proposals]
        base = old if old and old.removeprefix("\ufeff").strip() else (old or "") + "# MEMORY\n"
        eol = "\r\n" if base.split("\n", 1)[0].endswith("\r") and "\n" in base else "\n"
        while base.endswith("\n"):  # trailing blank lines make way; the lines above keep their bytes
            base = base[:-1].removesuffix("\r")
        heading = "## Durable (proposed by zmem reflect)"
        if heading not in base:
            lines = ["", heading, ""] + lines
        contents[memory_path] = (old, base + eol + eol.join(lines) + eol)
        result.proposals_applied = True


# ----------------------------------------------------------------------------- writing


def _diff(rel: str, old: str | None, new: str) -> str:
    return "".join(difflib.unified_diff(_lines(old or ""), _lines(new),
                                        "/dev/null" if old is None else f"a/{rel}", f"b/{rel}"))


def _lines(text: str) -> list[str]:
    """Lines with their endings, split on \\n only, as git, the indexer and `zmem get` count them
    (str.splitlines also breaks at a lone CR, form feeds, U+2028 …)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _write(ws: Workspace, rel: str, text: str) -> None:
    """Replace rel with text atomically, inside the workspace: its directory opened without
    following symlinks, a page or bank/ that is one refused (reflect never writes outside)."""
    parent, _, name = rel.rpartition("/")
    dfd = open_dir_in(ws.root, parent, create=True)
    try:
        try:
            old = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None and stat.S_ISLNK(old.st_mode):
            raise write_through_symlink(ws.root, rel)
        tmp = f".zmem-{uuid.uuid4().hex}.tmp"
        # created as open() would (0666 less the umask), then given the page's own mode if it has one
        # (tempfile.mkstemp's 0600 would take group and other readers away from a shared memory repo)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=dfd)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
                if old is not None:
                    os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode))
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)


def _message(r: ReflectResult) -> str:
    news = sum(1 for o in r.opinions if o["new"])
    moved = sum(1 for o in r.opinions if not o["new"] and o["before"] != o["after"])
    recited = len(r.opinions) - news - moved  # evidence re-cited, confidence as it was
    head = [f"{len(r.pages)} entity page{'s' * (len(r.pages) != 1)}"]
    if news:
        head.append(f"{news} new opinion{'s' * (news != 1)}")
    if moved:
        head.append(f"{moved} confidence change{'s' * (moved != 1)}")
    if recited:
        head.append(f"{recited} opinion{'s' * (recited != 1)} re-cited")
    if r.proposals_applied:
        head.append(f"{len(r.proposals)} MEMORY.md addition{'s' * (len(r.proposals) != 1)}")
    body = [f"zmem reflect: {', '.join(head)}", ""]
    if r.pages:
        body.append("Entity pages: " + ", ".join(p["entity"] + (" (new)" if p["created"] else "") for p in r.pages))
    for o in r.opinions:
        body.append(f"Opinion \"{_clip(o['statement'])}\": {opinion_change(o)}" + "".join(
            f"; {n}" for n in o["evidence"] if n.startswith(("retracted", "restored"))))
    if r.proposals and not r.proposals_applied:
        body.append(f"Proposals for MEMORY.md (not applied): {len(r.proposals)}")
    evidence = sorted(set(r.evidence))
    body += ["", f"{TRAILER}: since {r.since or 'the beginning'}, {r.new_facts} new facts"]
    body += [f"Zmem-Evidence: {e}" for e in evidence[:200]]
    return "\n".join(body) + "\n"


def opinion_change(o: dict) -> str:
    """What a run did to one opinion (an entry of ReflectResult.opinions), in a few words."""
    if o["new"]:
        return f"new, c={o['after']:.2f}"
    if o["before"] != o["after"]:
        return f"c {o['before']:.2f} -> {o['after']:.2f}"
    return f"c {o['after']:.2f}, evidence re-cited"


def _clip(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[:n - 1] + "…"
