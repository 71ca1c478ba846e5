"""The agent's write path: append a note or a Retain fact to today's daily log, then commit."""
from __future__ import annotations

import datetime as dt
import fcntl
import os
import re
import tempfile
from dataclasses import dataclass, field

from zmem.errors import ZmemError
from zmem.markdown import ATX, split_lines
from zmem.retain import KINDS, RETAIN_HEADINGS, parse_bullet
from zmem.repo import commit_paths
from zmem.workspace import Workspace

NOTES_HEADINGS = ("notes",)


@dataclass
class Appended:
    path: str
    line: int
    text: str
    committed: bool = False
    commit: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.line}"


def format_entry(text: str, retain: str | None = None, entities=(), confidence: float | None = None) -> str:
    """The Markdown line(s) for one entry. Pure; raises ZmemError on invalid input."""
    text = text.strip()
    if not text:
        raise ZmemError("nothing to append: the text is empty", hint='zmem append "Peter moved to Lisbon"')
    if confidence is not None and retain != "O":
        raise ZmemError("--confidence applies only to opinions", hint="use it with --retain O")
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise ZmemError(f"--confidence {confidence} is outside [0, 1]", hint="e.g. --confidence 0.8")
    if retain is None:
        if entities:
            text = " ".join("@" + _slug(e) for e in entities) + ": " + text
        lines = [line.rstrip() for line in text.split("\n")]
        return "- " + "\n  ".join(line for line in lines if line) + "\n"
    kind = retain.upper()
    if kind not in KINDS:
        raise ZmemError(f"unknown Retain kind {retain!r}",
                        hint="W world, B experience, O opinion (with --confidence), S observation, R relation")
    head = kind + (f"(c={confidence:g})" if confidence is not None else "")
    if kind == "R":  # `@Peter lives_in @Lisbon`: the text is the relation itself
        line = f"- {head} {' '.join(text.split())}"
    else:
        line = f"- {head}{''.join(' @' + _slug(e) for e in entities)}: {' '.join(text.split())}"
    fact, problem = parse_bullet(line[2:], 1, 1)
    if fact is None:
        raise ZmemError(f"not a valid Retain fact: {problem}",
                        hint="e.g. zmem append --retain W --entity Peter \"Moved to Lisbon\"; "
                             "relations: zmem append --retain R \"@Peter lives_in @Lisbon\"")
    return line + "\n"


def _slug(name: str) -> str:
    name = name.strip().lstrip("@")
    if not name:
        raise ZmemError("an empty --entity name", hint="e.g. --entity Peter")
    return re.sub(r"\s+", "-", name)


def insert_entry(content: str, entry: str, day: str, retain: bool) -> tuple[str, int]:
    """Put the entry at the end of its section (## Retain for facts, ## Notes otherwise),
    creating the file's title and the section when missing. Returns (new content, 1-based line)."""
    lines = split_lines(content) if content else [f"# {day}"]
    names = RETAIN_HEADINGS if retain else NOTES_HEADINGS
    section = _find_section(lines, names)
    entry_lines = entry.rstrip("\n").split("\n")
    if section is None:
        heading = "## Retain" if retain else "## Notes"
        retain_at = None if retain else _find_section(lines, RETAIN_HEADINGS)
        if retain_at is not None:  # notes go before the Retain section, which stays last
            at = retain_at[0]
            new = [heading, "", *entry_lines, ""]
            lines[at:at] = new
            return "\n".join(lines) + "\n", at + 3
        while lines and not lines[-1].strip():
            lines.pop()
        lines += ["", heading, "", *entry_lines]
        return "\n".join(lines) + "\n", len(lines) - len(entry_lines) + 1
    start, end = section  # end: index after the section's last non-blank line
    lines[end:end] = entry_lines
    return "\n".join(lines) + "\n", end + 1


def _find_section(lines: list[str], names) -> tuple[int, int] | None:
    """(heading index, index after the last non-blank line) of the first `## name` section. Only
    unindented headings count: an appended multi-line entry's continuation lines are indented, so a
    `## Steps` line inside an earlier entry neither starts nor ends a section."""
    for i, line in enumerate(lines):
        m = ATX.match(line) if line.startswith("#") else None
        if m and len(m.group(1)) == 2 and (m.group(2) or "").strip().lower() in names:
            j = i + 1
            last = i + 1
            while j < len(lines):
                n = ATX.match(lines[j]) if lines[j].startswith("#") else None
                if n and len(n.group(1)) <= 2:
                    break
                if lines[j].strip():
                    last = j + 1
                j += 1
            return i, last
    return None


def append(ws: Workspace, text: str, *, retain: str | None = None, entities=(), confidence: float | None = None,
           commit: bool = True, day: dt.date | None = None) -> Appended:
    entry = format_entry(text, retain, entities, confidence)
    day_s = (day or dt.date.today()).isoformat()
    rel = f"memory/{day_s}.md"
    path = ws.root / rel
    if path.is_symlink():
        raise ZmemError(f"refusing to write through a symlink: {rel}", hint="replace the symlink with a real file")
    ws.state_dir.mkdir(exist_ok=True)
    with open(ws.state_dir / "append.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent appends queue here, so none is lost
        path.parent.mkdir(parents=True, exist_ok=True)
        old = path.read_text(encoding="utf-8", errors="surrogateescape") if path.exists() else ""
        new, line = insert_entry(old, entry, day_s, retain is not None)
        _atomic_write(path, new)
        result = Appended(rel, line, entry.rstrip("\n"))
        if commit:
            _commit(ws, rel, entry, result)
    return result


def _atomic_write(path, content: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".zmem-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
            f.write(content)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _commit(ws: Workspace, rel: str, entry: str, result: Appended) -> None:
    commit, problem = commit_paths(ws.root, [rel], f"zmem append: {rel}\n\n{entry}")
    if commit:
        result.committed, result.commit = True, commit
    else:
        result.warnings.append(f"{rel}: written but not committed: {problem}")
