"""Timelines and belief diffs from the history index: `zmem log` and `zmem diff`.

A fact is identified by its kind and text (whitespace-normalized) within its file: moving a line
within the file is not a change; editing its text shows as `changed` (the old and new text paired
when they are similar, share entities and happen in one commit); deleting it is a `retraction`.
"""
from __future__ import annotations

from dataclasses import dataclass

from zmem.text import opinions as op_mod
from zmem.text.dates import commit_time
from zmem.query.entities import FactRow
from zmem.errors import TRY_AGAIN, ZmemError
from zmem.history.asof import AsOf, ensure_history, facts_at, resolve_as_of, versions_at
from zmem.index.history import enabled
from zmem.text.markdown import day_from_path
from zmem.text.retain import entity_key, fact_id
from zmem.workspace.core import Workspace

CHANGED_SIMILAR = 60.0


def _iso(t: int | None) -> str | None:
    return commit_time(t).isoformat() if t else None


def require_history(ws: Workspace, conn) -> list[str]:
    """Build the history index on first use; returns notes for the user."""
    if enabled(conn):
        return []
    built = ensure_history(ws, conn)
    if built is None:
        raise ZmemError("another zmem process is updating the index", hint=TRY_AGAIN)
    notes = [f"built the history index first ({built.commits} commits, {built.seconds:.1f} s)"]
    if built.shallow:
        from zmem.history.asof import workspace_shallow_notes
        notes += workspace_shallow_notes(ws)
    return notes


def _key(f) -> tuple:
    return _move_key(f.kind, f.text, f.entities)


def _move_key(kind: str, text: str, entities) -> tuple:
    """A fact's identity: kind, text and entities (`W @Peter: prefers coffee` turned into
    `W @Zhang: prefers coffee` retracts one fact and adds another). Across files, a line moved
    (git mv, or cut and pasted) with the same identity is a move, not a retraction and an addition."""
    return kind, " ".join(text.split()), frozenset(entity_key(e) for e in entities)


def _pair_moves(removed: list, added: list) -> list[tuple]:
    """(old, new) pairs of the same fact in another file; taken out of removed/added."""
    pool: dict[tuple, list] = {}
    for new in added:
        pool.setdefault(_move_key(new.kind, new.text, new.entities), []).append(new)
    pairs = []
    for old in list(removed):
        cands = [n for n in pool.get(_move_key(old.kind, old.text, old.entities), []) if n.path != old.path]
        if cands:
            new = cands[0]
            pool[_move_key(new.kind, new.text, new.entities)].remove(new)
            pairs.append((old, new))
            removed.remove(old)
            added.remove(new)
    return pairs


def _confidence_changes(before: dict, now: dict) -> list[tuple]:
    """(old, new) of facts with the same key in both whose confidence changed (`O(c=0.8)` -> 0.3)."""
    return [(before[k], now[k]) for k in now if k in before and before[k].confidence is not None
            and now[k].confidence is not None and abs(before[k].confidence - now[k].confidence) > 1e-9]


def _pair_changes(removed: list, added: list, *, same_path: bool = False,
                  renamed: dict[str, str] | None = None) -> list[tuple]:
    """(old, new) pairs of similar facts with shared entities; the rest stay removed/added.
    Similarity is over whole texts (not token sets: "Likes Lisbon" is not an edit of "Lives in
    Lisbon and works on warelay"); same_path: an edit stays in its file (diff across files), or
    goes where git says the file was renamed (renamed: old path -> new path)."""
    renamed = renamed or {}
    if not removed or not added:
        return []  # nothing to pair (and no rapidfuzz to import)
    from rapidfuzz import fuzz, utils
    pairs = []
    for old in list(removed):
        best = None
        for new in added:
            if new.kind != old.kind or (same_path and new.path not in (old.path, renamed.get(old.path))):
                continue
            ents_old, ents_new = {entity_key(e) for e in old.entities}, {entity_key(e) for e in new.entities}
            if (ents_old or ents_new) and not ents_old & ents_new:
                continue
            score = fuzz.ratio(old.text, new.text, processor=utils.default_process)
            if score >= CHANGED_SIMILAR and (best is None or score > best[0]):
                best = (score, new)
        if best:
            pairs.append((old, best[1]))
            removed.remove(old)
            added.remove(best[1])
    return pairs


# ----------------------------------------------------------------------------- log


@dataclass
class _Version:
    path: str
    blob: str
    from_seq: int
    to_seq: int | None


def entity_log(ws: Workspace, conn, key: str, *, since: str | None = None, reverse: bool = False) -> list[dict]:
    """Facts and opinions about an entity as they were added, changed and retracted: newest commit
    first, like `git log` and a file's log (reverse: oldest first); within a commit, by file and line."""
    commits = {seq: (sha, t, author, summary) for seq, sha, t, author, summary in
               conn.execute("SELECT seq, sha, time, author, summary FROM hist_commits")}
    # the events of a commit before since are not shown (see the end)
    hidden = {seq for seq, (_, t, _, _) in commits.items() if since and _iso(t)[:10] < since}

    def shown(seq: int) -> bool:
        return seq not in hidden
    if since:  # events come from versions a shown commit began or ended: the paths it changed
        first = min((seq for seq in commits if seq not in hidden), default=None)
        versions = _versions_of(conn, _paths_changed_from(conn, first) if first is not None else set())
        blobs_with_entity = _blobs_mentioning(conn, key, among={v.blob for vs in versions.values() for v in vs})
    else:
        blobs_with_entity = _blobs_mentioning(conn, key)
        versions = _versions_of(conn, _paths_holding(conn, blobs_with_entity))
    events: list[dict] = []
    for path, vs in versions.items():
        if path == op_mod.OPINIONS_PATH:
            events += _opinion_events(ws, vs, key, commits)
            continue
        read: dict[str, dict] = {}

        def facts_of(v: _Version) -> dict:  # read only for the commits shown (since), once per blob
            if v.blob not in blobs_with_entity:
                return {}
            if v.blob not in read:
                read[v.blob] = _facts_of_blob(conn, v.blob, path, key)
            return read[v.blob]
        for i, v in enumerate(vs):
            prev = vs[i - 1] if i else None
            # a gap (deleted, then re-created) retracts everything at the deletion
            gap = prev is not None and prev.to_seq is not None and prev.to_seq < v.from_seq
            if gap and shown(prev.to_seq):
                events += _fact_events(facts_of(prev), {}, prev.to_seq, commits, path, None)
            if shown(v.from_seq):
                before = facts_of(prev) if prev is not None and not gap else {}
                events += _fact_events(before, facts_of(v), v.from_seq, commits, path, commits[v.from_seq][0])
        if vs[-1].to_seq is not None and shown(vs[-1].to_seq):
            events += _fact_events(facts_of(vs[-1]), {}, vs[-1].to_seq, commits, path, None)
    events = _merge_moves(events)
    events.sort(key=lambda e: (e["seq"] if reverse else -e["seq"], e["path"], e.get("line") or 0))
    if since:
        events = [e for e in events if (e["date"] or "")[:10] >= since]
    return events


def _merge_moves(events: list[dict]) -> list[dict]:
    """A fact retracted from one file and added to another in the same commit (a rename, a line
    moved between files) is one `moved` event citing both places."""
    added: dict[tuple, list[dict]] = {}
    for e in events:
        if e["event"] == "added":
            added.setdefault((e["seq"], _move_key(e["kind"], e["text"], e["entities"])), []).append(e)
    gone: set[int] = set()   # retractions merged into a move
    for e in events:
        if e["event"] != "retracted":
            continue
        cands = [n for n in added.get((e["seq"], _move_key(e["kind"], e["text"], e["entities"])), [])
                 if n["path"] != e["path"] and n["event"] == "added"]
        if not cands:
            continue
        new = cands[0]
        gone.add(id(e))
        new.update(event="moved", old_path=e["path"], old_source=e["source"])
        if e["confidence"] != new["confidence"]:
            new["old_confidence"] = e["confidence"]
    return [e for e in events if id(e) not in gone]


def _in_batches(conn, sql: str, values: list, *extra):
    """The rows of sql, whose one `{marks}` is an IN list of values, run in batches of 500."""
    for i in range(0, len(values), 500):
        part = values[i:i + 500]
        yield from conn.execute(sql.format(marks=",".join("?" * len(part))), (*part, *extra))


def _blobs_mentioning(conn, key: str, among: set[str] | None = None) -> set[str]:
    """The blobs (all, or among these) with a fact naming the entity key."""
    names_key: dict[str, bool] = {}  # facts repeat the same lists of names: each is read once

    def naming(names: str) -> bool:
        if names not in names_key:
            names_key[names] = any(entity_key(n) == key for n in names.split("\t"))
        return names_key[names]
    if among is not None:
        return {blob for blob, names in _in_batches(
            conn, "SELECT DISTINCT blob, names FROM hist_facts WHERE blob IN ({marks}) AND names != ''", list(among))
            if naming(names)}
    lists = [names for (names,) in conn.execute("SELECT DISTINCT names FROM hist_facts WHERE names != ''")
             if naming(names)]
    return {blob for (blob,) in _in_batches(conn, "SELECT blob FROM hist_facts WHERE names IN ({marks})", lists)}


def _paths_holding(conn, blobs: set[str]) -> set[str]:
    return {path for (path,) in _in_batches(conn, "SELECT path FROM hist_versions WHERE blob IN ({marks})",
                                            list(blobs))}


def _paths_changed_from(conn, seq: int) -> set[str]:
    """The paths whose version began or ended at commit seq or later."""
    return {path for (path,) in conn.execute("SELECT path FROM hist_versions WHERE from_seq >= ? OR to_seq >= ?",
                                             (seq, seq))}


def _versions_of(conn, paths: set[str]) -> dict[str, list[_Version]]:
    """path -> every version of it (oldest first), of these paths and the opinions file, in path order
    (SQLite's order of text is Python's)."""
    versions: dict[str, list[_Version]] = {}
    for path, blob, a, b in _in_batches(conn, "SELECT path, blob, from_seq, to_seq FROM hist_versions "
                                              "WHERE path IN ({marks}) ORDER BY path, from_seq",
                                        sorted(paths | {op_mod.OPINIONS_PATH})):
        versions.setdefault(path, []).append(_Version(path, blob, a, b))
    return versions


def _facts_of_blob(conn, blob: str, path: str, key: str) -> dict:
    out = {}
    for start, end, kind, conf, text, names in conn.execute(
            "SELECT start_line, end_line, kind, confidence, text, names FROM hist_facts WHERE blob = ?", (blob,)):
        ents = names.split("\t") if names else []
        if any(entity_key(n) == key for n in ents):
            f = FactRow(0, fact_id(path, kind, text, ents), path, start, end, kind, conf, text, ents, day_from_path(path), None)
            out[_key(f)] = f
    return out


def _event(kind: str, seq: int, commits: dict, path: str, f: FactRow, sha: str | None, **extra) -> dict:
    commit, t, author, summary = commits[seq]
    at = f"@{sha[:10]}" if sha else f"@{commit[:10]}~1"  # a retraction cites the last version holding it
    return {"event": kind, "seq": seq, "commit": commit, "date": _iso(t), "author": author, "summary": summary,
            "path": path, "line": f.start_line, "kind": f.kind, "text": f.text, "entities": f.entities,
            "confidence": f.confidence, "id": f.id, "source": f"{path}{at}#L{f.start_line}", **extra}


def _fact_events(before: dict, now: dict, seq: int, commits: dict, path: str, sha: str | None) -> list[dict]:
    removed = [before[k] for k in before if k not in now]
    added = [now[k] for k in now if k not in before]
    out = []
    for old, new in _pair_changes(removed, added):
        out.append(_event("changed", seq, commits, path, new, sha, old_text=old.text, old_confidence=old.confidence))
    for old, new in _confidence_changes(before, now):
        out.append(_event("confidence changed", seq, commits, path, new, sha, old_confidence=old.confidence))
    out += [_event("retracted", seq, commits, path, f, None) for f in removed]
    out += [_event("added", seq, commits, path, f, sha) for f in added]
    return out


def _opinion_events(ws: Workspace, versions: list[_Version], key: str, commits: dict) -> list[dict]:
    from zmem.git.gitstatus import read_blobs
    out = []
    before: dict[str, float] = {}
    for v, (_, data) in zip(versions, read_blobs(ws.root, [v.blob for v in versions])):
        parsed = op_mod.parse(data.decode("utf-8", "replace"))
        now = {o.statement: o for o in parsed.opinions if key in o.entity_keys}
        commit, t, author, summary = commits[v.from_seq]
        base = {"seq": v.from_seq, "commit": commit, "date": _iso(t), "author": author, "summary": summary,
                "path": v.path, "kind": "opinion"}
        for statement, o in now.items():
            src = f"{v.path}@{commit[:10]}#L{o.line}"
            if statement not in before:
                out.append({**base, "event": "opinion added", "text": statement, "line": o.line,
                            "confidence": o.confidence, "source": src})
            elif abs(before[statement] - o.confidence) > 1e-9:
                out.append({**base, "event": "confidence changed", "text": statement, "line": o.line,
                            "confidence": o.confidence, "old_confidence": before[statement], "source": src,
                            "evidence": [e.citation for e in o.evidence[-3:]]})
        for statement in before:
            if statement not in now:
                out.append({**base, "event": "opinion removed", "text": statement, "line": None,
                            "confidence": before[statement], "source": f"{v.path}@{commit[:10]}"})
        before = {s: o.confidence for s, o in now.items()}
    return out


# ----------------------------------------------------------------------------- diff


def belief_diff(ws: Workspace, conn, rev1: str, rev2: str, *, entity: str | None = None, repo=None) -> dict:
    """What memory believed differently at rev2 than at rev1: facts added, retracted and changed;
    opinions added, removed, and confidence changes with the evidence added between them. repo: the
    workspace's repository, when the caller has it open already (each opening is a git process)."""
    from zmem.history.asof import BeforeHistory
    from zmem.git.gitstatus import open_command_repo
    repo = repo or open_command_repo(ws.root)
    b = resolve_as_of(ws, conn, rev2, repo)
    try:
        a = resolve_as_of(ws, conn, rev1, repo)
    except BeforeHistory:  # "since 2025-11-01" with notes from later: everything was added
        a = None
    va, vb = _versions_that_differ(ws, conn, a, b)
    fa = {(_key(f), f.path): f for f in facts_at(ws, conn, a, va, entity)} if a else {}
    fb = {(_key(f), f.path): f for f in facts_at(ws, conn, b, vb, entity)}
    removed = [fa[k] for k in fa if k not in fb]
    added = [fb[k] for k in fb if k not in fa]
    confidence = _confidence_changes(fa, fb)
    moved = _pair_moves(removed, added)
    renamed = _renames(repo, a.sha, b.sha) if a and removed and added else {}
    changed = _pair_changes(removed, added, same_path=True, renamed=renamed)
    oa, ob = _opinions_at(ws, va, vb, entity)
    ops = []
    for s, o in ob.items():
        if s not in oa:
            ops.append({"change": "added", "statement": s, "confidence": o.confidence, "entities": o.entities,
                        "evidence": [e.citation for e in o.evidence]})
        elif abs(oa[s].confidence - o.confidence) > 1e-9 or len(o.evidence) != len(oa[s].evidence):
            known = {e.fact for e in oa[s].evidence}
            ops.append({"change": "confidence", "statement": s, "from": oa[s].confidence, "to": o.confidence,
                        "entities": o.entities,
                        "evidence": [{"relation": e.relation, "source": e.citation, "text": e.text}
                                     for e in o.evidence if e.fact not in known]})
    for s, o in oa.items():
        if s not in ob:
            ops.append({"change": "removed", "statement": s, "confidence": o.confidence, "entities": o.entities})

    def cite(f, at: AsOf) -> dict:
        d = f.to_json()
        d["source"] = f"{f.path}@{at.short}#L{f.start_line}"
        return d
    return {"from": {"commit": a.sha, "date": _iso(a.time)} if a else {"commit": None, "date": None},
            "to": {"commit": b.sha, "date": _iso(b.time)},
            "facts": {"added": [cite(f, b) for f in added], "retracted": [cite(f, a) for f in removed],
                      "changed": [{"from": cite(o, a), "to": cite(n, b)} for o, n in changed],
                      "confidence": [{"from": cite(o, a), "to": cite(n, b)} for o, n in confidence],
                      "moved": [{"from": cite(o, a), "to": cite(n, b)} for o, n in moved]},
            "opinions": ops}


def _renames(repo, sha1: str, sha2: str) -> dict[str, str]:
    """The memory files renamed between two commits (path at sha1 -> path at sha2), followed commit by
    commit along the first-parent line, as `log @Entity` sees them: a rename and an edit in two commits
    are one file, which a diff of the two ends alone (too little left alike in a short note) missed."""
    from zmem.git.gitcmd import run_git
    proc = run_git(["log", "--reverse", "--first-parent", "-M", "--diff-filter=R", "--name-status", "-z",
                    "--format=", f"{sha1}..{sha2}"], cwd=repo.workdir, capture_output=True)
    parts = [p.strip("\n") for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0")] \
        if proc.returncode == 0 else []
    now: dict[str, str] = {}  # path at sha1 -> its path after the renames so far
    i = 0
    while i + 2 < len(parts):
        if not parts[i].startswith("R"):
            i += 1
            continue
        old, new = parts[i + 1], parts[i + 2]
        first = next((k for k, v in now.items() if v == old), old)
        now[first] = new
        i += 3
    return {o: n for o, n in ((repo.to_ws(o), repo.to_ws(n)) for o, n in now.items()) if o and n}


def _versions_that_differ(ws: Workspace, conn, a: AsOf | None, b: AsOf) -> tuple[dict[str, str], dict[str, str]]:
    """(path -> blob at a, path -> blob at b) of the memory files whose content differs between the two
    commits (a None: before the history). A file with the same content at both holds the same facts at
    both: none of them is added, retracted, changed or moved (the keys hold the path), so only these are read."""
    if a is not None and a.seq is not None and b.seq is not None:
        # on the chain, a version valid at both commits is the same file at both: the others, from the index
        va, vb = {}, {}
        for path, blob, start, end in conn.execute(
                "SELECT path, blob, from_seq, to_seq FROM hist_versions WHERE (from_seq <= ?1 AND (to_seq IS NULL OR "
                "to_seq > ?1)) != (from_seq <= ?2 AND (to_seq IS NULL OR to_seq > ?2))", (a.seq, b.seq)):
            (va if start <= a.seq and (end is None or end > a.seq) else vb)[path] = blob
    else:
        va = versions_at(ws, conn, a) if a else {}
        vb = versions_at(ws, conn, b)
    differ = {rel for rel in va.keys() | vb.keys() if va.get(rel) != vb.get(rel)}  # a file reverted is the same
    return {rel: va[rel] for rel in differ if rel in va}, {rel: vb[rel] for rel in differ if rel in vb}


def _opinions_at(ws: Workspace, va: dict[str, str], vb: dict[str, str], entity: str | None) -> tuple[dict, dict]:
    """statement -> opinion at the two commits (of the memory files va and vb that differ, path -> blob),
    about entity only when given. The same opinions file at both: nothing read."""
    from zmem.git.gitstatus import read_blobs
    blobs = [va.get(op_mod.OPINIONS_PATH), vb.get(op_mod.OPINIONS_PATH)]
    if blobs[0] == blobs[1]:
        return {}, {}
    data = dict(read_blobs(ws.root, [blob for blob in blobs if blob]))
    out = []
    for blob in blobs:
        parsed = op_mod.parse(data[blob].decode("utf-8", "replace") if blob else "")
        out.append({o.statement: o for o in parsed.opinions if entity is None or entity in o.entity_keys})
    return out[0], out[1]


# ----------------------------------------------------------------------------- a file's log


def file_fact_changes(ws: Workspace, events: list[dict]) -> None:
    """Add to each commit of a file's log (newest first, as `repo.file_log` returns them) the
    facts it added, changed (text, or an opinion's confidence) and retracted in that file."""
    from zmem.text.markdown import decode_note
    from zmem.git.repo import open_repo
    from zmem.text.retain import parse_facts
    repo = open_repo(ws.root)

    def facts(sha: str | None, rel: str) -> dict:
        data = repo.file_at(sha, rel) if sha else None
        if data is None:
            return {}
        text, _ = decode_note(rel, data, ws.config.max_file_mb)
        parsed, _ = parse_facts(text or "", rel, day_from_path(rel))
        return {_key(f): f for f in parsed}

    def brief(f, **extra) -> dict:
        return {"kind": f.kind, "text": f.text, "entities": f.entities, "confidence": f.confidence,
                "line": f.start_line, **extra}
    for i, e in enumerate(events):
        before_path = events[i + 1]["path"] if i + 1 < len(events) else e["path"]
        parent = repo.commit_info(e["commit"]).parent
        before, now = facts(parent, before_path), facts(e["commit"], e["path"])
        removed = [before[k] for k in before if k not in now]
        added = [now[k] for k in now if k not in before]
        moved = []
        arrivals = _arrivals(ws, repo, parent, e["commit"], e["path"], facts) if removed else {}
        for f in list(removed):
            went = arrivals.get(_move_key(f.kind, f.text, f.entities))
            if went:
                moved.append((f, *went.pop(0)))
                removed.remove(f)
        changed = _pair_changes(removed, added)
        e["facts"] = {"added": [brief(f) for f in added],
                      "changed": [brief(n, old_text=o.text, old_confidence=o.confidence) for o, n in changed],
                      "confidence": [brief(n, old_confidence=o.confidence) for o, n in _confidence_changes(before, now)],
                      "moved": [brief(o, to_path=path, to_line=n.start_line) for o, path, n in moved],
                      "retracted": [brief(f) for f in removed]}


def _arrivals(ws: Workspace, repo, parent: str | None, sha: str, rel: str, facts) -> dict[tuple, list]:
    """Facts that the commit `sha` added to memory files other than `rel`, by _move_key, as
    (path, fact): where facts leaving `rel` in that commit went (`git mv`, or a cut and paste)."""
    out: dict[tuple, list] = {}
    for other, blob in repo.tree_changes(parent, sha):
        if other == rel or blob is None or not ws.is_memory_path(other):
            continue
        before = facts(parent, other) if parent else {}
        for k, f in facts(sha, other).items():
            if k not in before:
                out.setdefault(_move_key(f.kind, f.text, f.entities), []).append((other, f))
    return out
