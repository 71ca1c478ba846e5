"""`zmem blame`: who wrote these lines of memory, when, in which commit, and — for lines that
`zmem reflect` wrote — the daily-log lines they came from (the evidence chain), blamed too."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from zmem.text.dates import commit_time
from zmem.errors import ZmemError
from zmem.git.gitcmd import ZERO_COMMIT
from zmem.workspace.core import Workspace

# path, an optional @rev (retracted evidence cites where the fact last was), then #Lx[-Ly]
_CITED = re.compile(r"(?<![\w/.-])((?:memory|bank)/[^\s#@()\[\]]+?\.md|MEMORY\.md)(?:@([0-9a-f]{7,40}))?#L(\d+)(?:-L?(\d+))?")
_FACT_REF = re.compile(r"\(fact ([0-9a-f]{10})")
_FACT_ID = re.compile(r"^[0-9a-f]{10}$")
MAX_DEPTH = 3


@dataclass
class BlamedRange:
    path: str
    start_line: int
    end_line: int
    rev: str | None = None
    lines: list[dict] = field(default_factory=list)
    evidence: list[BlamedRange] = field(default_factory=list)
    note: str | None = None

    @property
    def citation(self) -> str:
        at = f"@{self.rev[:10]}" if self.rev else ""
        if self.end_line < self.start_line:  # an empty file: no lines to cite
            return f"{self.path}{at}"
        return f"{self.path}{at}#L{self.start_line}-L{self.end_line}"

    def to_json(self) -> dict:
        return {"path": self.path, "start_line": self.start_line, "end_line": self.end_line, "rev": self.rev,
                "citation": self.citation, "lines": self.lines, "note": self.note,
                "evidence": [e.to_json() for e in self.evidence]}


def parse_target(ws: Workspace, conn, target: str, k: int = 3) -> list[tuple[str, int, int, str | None]]:
    """TARGET -> [(path, first line, last line, rev)]: path#Lx-Ly, path:LINE, path@rev#L…, a fact id,
    or a query (its top k hits)."""
    from zmem.query.reading import split_citation
    from zmem.workspace.paths import normalize_rel
    t = target.strip()
    if not t:
        raise ZmemError("nothing to blame: the target is empty",
                        hint="give a citation (memory/2025-11-27.md#L3), a fact id, or words to look for")
    if _FACT_ID.match(t):
        rows = _facts_with_id(conn, t)
        if not rows:
            raise ZmemError(f"no current fact has the id {t}",
                            hint="`zmem facts --json` lists fact ids; a retracted fact shows in `zmem log`")
        return [(p, a, b, None) for p, a, b in rows]
    path, rev, lines = split_citation(t)
    if lines is not None or (t.lower().endswith(".md") and " " not in t):
        rel = normalize_rel(path)
        if rel is None or not ws.is_memory_path(rel):
            raise ZmemError(f"not a memory file: {path}",
                            hint="blame takes path#Lx-Ly, path:LINE, a fact id, or a query in quotes")
        if lines is None:
            return [(rel, 1, 0, rev)]  # the whole file
        return [(rel, lines[0], lines[1], rev)]
    from zmem.query.search import recall
    res = recall(conn, t, k=k)
    if not res.results:
        raise ZmemError(f"nothing in memory matches {t!r}", hint="blame a citation instead, e.g. memory/2025-11-27.md#L3")
    return [(h.path, h.start_line, h.end_line, None) for h in res.results]


def blame(ws: Workspace, conn, target: str, *, follow: bool = True, k: int = 3) -> list[BlamedRange]:
    from zmem.history.asof import workspace_shallow_notes
    from zmem.git.gitstatus import open_command_repo
    repo = open_command_repo(ws.root)  # once: opening it costs more than a cached blame
    out = []
    for path, a, b, rev in parse_target(ws, conn, target, k):
        out.append(_blame_range(ws, conn, path, a, b, rev, follow, 0, set(), repo))
    for note in workspace_shallow_notes(ws, repo):  # lines older than the clone are credited to its oldest commit
        for r in out:
            r.note = f"{r.note}; {note}" if r.note else note
    return out


def _blame_range(ws: Workspace, conn, path: str, a: int, b: int, rev: str | None, follow: bool, depth: int,
                 seen: set, repo=None) -> BlamedRange:
    from zmem.history.asof import blame_lines
    from zmem.query.reading import read_lines
    spec = f"{path}@{rev}" if rev else path
    content = read_lines(ws, spec, start=a, count=(b - a + 1) if b >= a else None)
    b = content["end_line"]
    sha = content.get("rev")
    r = BlamedRange(path, a, b, sha)
    blamed = blame_lines(ws, conn, path, sha, repo=repo) or {}
    texts = content["text"].split("\n") if content["lines"] else []
    for n, text in zip(range(a, b + 1), texts):
        commit, author, when, summary = blamed.get(n, (ZERO_COMMIT, "", 0, ""))
        committed = commit != ZERO_COMMIT and when
        r.lines.append({"line": n, "text": text, "commit": commit if commit != ZERO_COMMIT else None,
                        "author": author or None,
                        "date": commit_time(when).isoformat() if committed else None,
                        "summary": summary if commit != ZERO_COMMIT else "not committed yet"})
    if follow and depth < MAX_DEPTH:
        seen.add((path, a, b, sha))
        for cited in _evidence(conn, path, r.lines):
            if cited in seen or cited[0] == path and cited[1] <= b and a <= cited[2]:
                continue
            seen.add(cited)
            try:
                r.evidence.append(_blame_range(ws, conn, *cited, follow, depth + 1, seen, repo))
            except ZmemError as e:
                r.evidence.append(BlamedRange(cited[0], cited[1], cited[2], cited[3],
                                              note=f"cannot follow: {e.message}"))
    return r


def _evidence(conn, path: str, lines: list[dict]) -> list[tuple[str, int, int, str | None]]:
    """Citations in lines that reflect wrote (bank/ pages, MEMORY.md). A fact id is looked up where
    the fact is now; otherwise `path#Lnn` is read as it was when the citing line was committed
    (the file may have changed or gone since)."""
    if not (path.startswith("bank/") or path.lower() == "memory.md"):
        return []
    out = []
    for ln in lines:
        text = ln["text"]
        located = False
        for fid in _FACT_REF.findall(text):
            rows = _facts_with_id(conn, fid)
            if len(rows) == 1:  # an old id two facts share now (same words, other entities): by its citation
                out.append((*rows[0], None))
                located = True
        if located:
            continue
        for m in _CITED.finditer(text):
            a = int(m.group(3))
            out.append((m.group(1), a, int(m.group(4)) if m.group(4) else a, m.group(2) or ln["commit"]))
    return list(dict.fromkeys(out))


def _facts_with_id(conn, fid: str) -> list[tuple[str, int, int]]:
    """(path, first line, last line) of the current facts with this id, or else with this id from
    before ids named their entities (retain.legacy_fact_id), which older evidence lines cite."""
    for column in ("fid", "legacy_fid"):
        rows = conn.execute(f"SELECT path, start_line, end_line FROM facts WHERE {column} = ?", (fid,)).fetchall()
        if rows:
            return rows
    return []
