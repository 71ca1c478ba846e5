"""Session-start context (`zmem context`, Memory.context(), the MCP tool memory_context): what an
agent should read as a session starts, by the memory conventions zmem grew from — MEMORY.md in the
private main session only, today's and yesterday's daily logs, recent `## Retain` facts — within a
character budget, each part labelled with the citation `zmem get` reads back.

Reads the files themselves (as `zmem get` does): no index, no catch-up, so a session-start hook
costs a few file reads and one git call. When the budget cannot hold everything, what is newest
is kept: a daily log keeps its last lines, and the parts are given the budget in this order —
today's log (at most half of it at first), yesterday's log (a quarter), MEMORY.md (its first
lines), then Retain facts of the last days, newest first; what a part did not use goes to the next,
and what is left at the end goes back to the parts that were cut. Facts on lines a log shows are not
repeated."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from zmem.workspace.core import Workspace

DEFAULT_BUDGET = 8000  # characters: ~2k tokens, small beside a session, enough for two days and MEMORY.md
FACT_DAYS = 7  # Retain facts of the daily logs of this many days (today included)
MAX_FACTS = 30
KINDS = ("today", "yesterday", "memory", "fact")
_TITLES = {"today": "today's log", "yesterday": "yesterday's log", "memory": "long-term memory"}


@dataclass
class Section:
    """One part of the context: lines start_line..end_line of path (1-based, as `zmem get` counts)."""
    path: str
    start_line: int
    end_line: int
    kind: str            # today | yesterday | memory | fact
    text: str            # exactly those lines
    total_lines: int
    day: str | None = None
    truncated: bool = False  # lines of the part were left out (a log keeps its newest, MEMORY.md its first)
    fact: dict | None = None  # kind, entities, confidence of a fact

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    def label(self) -> str:
        if self.kind == "fact":
            return f"{self.citation}:"
        cut = ""
        if self.truncated:
            cut = (f", lines 1-{self.start_line - 1} left out" if self.kind != "memory"
                   else f", lines {self.end_line + 1}-{self.total_lines} left out")
        return f"=== {_TITLES[self.kind]}: {self.citation}{cut} ==="

    def to_json(self) -> dict:
        out = {"path": self.path, "start_line": self.start_line, "end_line": self.end_line, "kind": self.kind,
               "citation": self.citation, "chars": len(self.text), "total_lines": self.total_lines,
               "truncated": self.truncated}
        if self.day:
            out["day"] = self.day
        if self.fact:
            out["fact"] = self.fact
        return out


@dataclass
class Context:
    """What `zmem context --json` prints (and memory_context returns)."""
    text: str
    sections: list[Section]
    truncated: bool
    budget: int
    scope: str
    today: str
    omitted: list[dict] = field(default_factory=list)  # parts left out whole: path, lines, kind, citation
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"text": self.text, "sections": [s.to_json() for s in self.sections], "truncated": self.truncated,
                "chars": len(self.text), "budget": self.budget, "scope": self.scope, "today": self.today,
                "omitted": self.omitted, "warnings": self.warnings}


@dataclass
class _Part:
    path: str
    kind: str
    lines: list[str]
    day: str | None = None
    first: int = 1          # the first line of `lines` in the file
    keep: str = "tail"      # which end a cut keeps
    fact: dict | None = None
    total: int = 0
    shown: tuple[int, int] | None = None  # (start, end) kept, 1-based in `lines`

    def cost(self, n_start: int, n_end: int) -> int:
        """Characters the section holding lines n_start..n_end (1-based in self.lines) adds to the
        text (render): its label, its lines and the separator before it."""
        return len(render_section(self.section(n_start, n_end))) + (1 if self.kind == "fact" else 2)

    def section(self, n_start: int, n_end: int) -> Section:
        cut = (n_start, n_end) != (1, len(self.lines))
        return Section(self.path, self.first + n_start - 1, self.first + n_end - 1, self.kind,
                       "\n".join(self.lines[n_start - 1:n_end]), self.total or len(self.lines), self.day,
                       cut, self.fact)

    def fit(self, chars: int) -> tuple[int, int] | None:
        """The most lines (from the end this part keeps) whose section costs at most chars; None if
        not even one line fits."""
        n = len(self.lines)
        best = None
        lo, hi = 1, n
        while lo <= hi:  # the cost grows with the number of lines kept
            mid = (lo + hi) // 2
            rng = (n - mid + 1, n) if self.keep == "tail" else (1, mid)
            if self.cost(*rng) <= chars:
                best, lo = rng, mid + 1
            else:
                hi = mid - 1
        return best

    def used(self) -> int:
        return self.cost(*self.shown) if self.shown else 0


def header(today: str, scope: str) -> str:
    return (f"Memory context from zmem ({today}, scope {scope}): cite what you use as path#Lx-Ly; "
            "search for more before answering about prior work.")


FACTS_TITLE = "=== recent Retain facts, newest first ==="


def render_section(s: Section) -> str:
    """A section as the text shows it: a log or MEMORY.md under a label line naming its citation; a
    fact as `citation: ` and the bullet as written (a bullet of several lines on the lines below)."""
    if s.kind == "fact":
        return f"{s.label()} {s.text}" if "\n" not in s.text else f"{s.label()}\n{s.text}"
    return f"{s.label()}\n{s.text}"


def render(head: str, sections: list[Section]) -> str:
    """The context's text: the header, then each log or MEMORY.md section after a blank line, then
    the facts under one title, one per line."""
    if not sections:
        return ""
    out = head
    facts = False
    for s in sections:
        if s.kind == "fact":
            out += ("\n" if facts else "\n\n" + FACTS_TITLE + "\n") + render_section(s)
            facts = True
        else:
            out += "\n\n" + render_section(s)
    return out


def build_context(ws: Workspace, *, scope: str = "private", budget: int = DEFAULT_BUDGET,
                  today: dt.date | None = None, days: int = FACT_DAYS, max_facts: int = MAX_FACTS) -> Context:
    """The session-start context of the workspace (module docstring). scope "group" leaves out
    MEMORY.md and the files [scopes] private lists."""
    today = today or dt.date.today()
    day_names = [(today - dt.timedelta(days=i)).isoformat() for i in range(max(days, 2))]
    warnings: list[str] = []
    texts = _read(ws, ["MEMORY.md", "memory.md", *(f"memory/{d}.md" for d in day_names)], scope, warnings)
    parts: list[_Part] = []
    for kind, day in (("today", day_names[0]), ("yesterday", day_names[1])):
        lines = texts.get(f"memory/{day}.md")
        if lines:
            parts.append(_Part(f"memory/{day}.md", kind, lines, day=day))
    memory_rel = next((r for r in ("MEMORY.md", "memory.md") if texts.get(r)), None)
    if memory_rel and scope == "private":
        parts.append(_Part(memory_rel, "memory", texts[memory_rel], keep="head"))
    head = header(today.isoformat(), scope)
    room = budget - len(head)
    allot = {"today": budget // 2, "yesterday": budget // 4}
    for part in parts:  # first pass: the logs within their share, then MEMORY.md
        part.shown = part.fit(min(room, allot.get(part.kind, room)))
        room -= part.used()
    facts = _facts(ws, texts, day_names[:days], parts, max_facts)
    fact_parts = []
    if facts:
        room -= len(FACTS_TITLE) + 2  # given back below if no fact fits
    for part in facts:  # newest first, while they fit (whole: half a bullet is not a fact)
        part.shown = part.fit(room)
        if part.shown != (1, len(part.lines)):
            part.shown = None
            break
        room -= part.used()
        fact_parts.append(part)
    if facts and not fact_parts:
        room += len(FACTS_TITLE) + 2
    for part in parts:  # second pass: what is left goes back to the parts that were cut
        if part.shown != (1, len(part.lines)):
            room += part.used()
            part.shown = part.fit(room)
            room -= part.used()
    logs = {p.path: (p.first + p.shown[0] - 1, p.first + p.shown[1] - 1) for p in parts if p.shown}
    fact_parts = [f for f in fact_parts  # a log the second pass widened may now show a fact itself
                  if not (f.path in logs and logs[f.path][0] <= f.first and f.first <= logs[f.path][1])]
    shown = [p for p in parts if p.shown] + fact_parts
    sections = [p.section(*p.shown) for p in shown]
    text = render(head, sections)
    if len(text) > budget:  # a budget smaller than the header: nothing fits
        text, sections = "", []
    left_out = [p for p in parts + facts if not p.shown]  # (a fact a widened log shows is not left out)
    omitted = [{"path": p.path, "start_line": p.first, "end_line": p.first + len(p.lines) - 1, "kind": p.kind,
                "citation": f"{p.path}#L{p.first}-L{p.first + len(p.lines) - 1}"} for p in left_out]
    truncated = bool(omitted) or any(s.truncated for s in sections)
    return Context(text, sections, truncated, budget, scope, today.isoformat(), omitted, warnings)


def _read(ws: Workspace, rels: list[str], scope: str, warnings: list[str]) -> dict[str, list[str]]:
    """The lines of each of these memory files that exists, is readable as `zmem get` reads it (no
    symlink, not ignored by git, text) and is in the scope."""
    from zmem.errors import ZmemError
    from zmem.text.markdown import decode_note, split_lines
    from zmem.workspace.core import resolve_memory_path
    found = []
    for rel in rels:
        if not (ws.root / rel).is_file() or (scope == "group" and (ws.is_private(rel) or
                                                                  rel in ("MEMORY.md", "memory.md"))):
            continue  # (MEMORY.md is for the private session only: not even read, or warned about, for group)
        try:
            found.append(resolve_memory_path(ws, rel))
        except ZmemError as e:  # a symlink, an unreadable file: `zmem get` refuses it too, and says why
            warnings.append(f"{rel}: left out: {e.message}")
    if rel_ignored := _ignored(ws, found):
        found = [r for r in found if r not in rel_ignored]
    out = {}
    for rel in dict.fromkeys(found):  # MEMORY.md and memory.md are one file on case-insensitive disks
        try:
            data = (ws.root / rel).read_bytes()
        except OSError as e:
            warnings.append(f"{rel}: not read: {e.strerror or e}")
            continue
        text, notes = decode_note(rel, data, ws.config.max_file_mb)
        warnings += [n.replace("indexed as U+FFFD", "shown as U+FFFD") for n in notes]  # nothing is indexed here
        if text is not None and text.strip():
            out[rel] = split_lines(text)
    return out


def _ignored(ws: Workspace, rels: list[str]) -> set[str]:
    """Which of these paths git's ignore rules cover (recall never shows them; `zmem get` refuses them)."""
    if not rels:
        return set()
    from zmem.git.gitcmd import run_git
    try:
        proc = run_git(["check-ignore", "--no-index", "--", *rels], cwd=ws.root, capture_output=True, text=True)
    except Exception:  # noqa: BLE001 - no git: nothing is known to be ignored
        return set()
    return set(proc.stdout.splitlines()) if proc.returncode == 0 else set()


def _facts(ws: Workspace, texts: dict[str, list[str]], days: list[str], parts: list[_Part],
           max_facts: int) -> list[_Part]:
    """Retain facts of the daily logs of these days, newest first (a later day, then a later line),
    but those on lines a log section already shows."""
    from zmem.text.retain import may_hold_facts, parse_facts
    shown = {p.path: (p.first + p.shown[0] - 1, p.first + p.shown[1] - 1) for p in parts if p.shown}
    out = []
    for day in days:
        rel = f"memory/{day}.md"
        lines = texts.get(rel)
        if not lines or not may_hold_facts(lines):
            continue
        facts, _ = parse_facts("\n".join(lines) + "\n", rel, day)
        for f in sorted(facts, key=lambda f: f.start_line, reverse=True):
            rng = shown.get(rel)
            if rng and rng[0] <= f.start_line and f.end_line <= rng[1]:
                continue
            info = {"kind": f.kind, "entities": f.entities}
            if f.confidence is not None:
                info["confidence"] = f.confidence
            out.append(_Part(rel, "fact", lines[f.start_line - 1:f.end_line], day=day, first=f.start_line,
                             keep="head", fact=info, total=len(lines)))
            if len(out) >= max_facts:
                return out
    return out
