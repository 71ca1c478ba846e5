"""The agent's write path: append a note or a Retain fact to today's daily log, then commit."""
from __future__ import annotations

import datetime as dt
import fcntl
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field

from zmem.errors import ZmemError
from zmem.markdown import scan_blocks, split_lines
from zmem.retain import KINDS, is_retain_heading, parse_bullet
from zmem.repo import Repo, commit_paths, open_repo
from zmem.workspace import Workspace

NOTES_HEADINGS = ("notes",)
# C0 control characters but tab, LF and CR: a NUL makes git take the log for a binary file (its
# commit fails, and the index skips the whole log), and none of them belongs in a note
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


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
    _check_characters(text, "the text")
    for name in entities:
        _check_characters(name, "an --entity name")
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


def _check_characters(text: str, what: str) -> None:
    m = _CONTROL.search(text)
    if m:
        raise ZmemError(f"{what} contains the control character U+{ord(m.group()):04X} "
                        f"(at character {m.start() + 1}); nothing was written",
                        hint="remove NUL and other control characters (tab and newline are fine); "
                             "a binary file is not a note")


def _slug(name: str) -> str:
    name = name.strip().lstrip("@")
    if not name:
        raise ZmemError("an empty --entity name", hint="e.g. --entity Peter")
    return re.sub(r"\s+", "-", name)


def insert_entry(content: str, entry: str, day: str, retain: bool) -> tuple[str, int]:
    """Put the entry at the end of its section (a Retain heading for facts, Notes otherwise, at
    any level), creating the file's title and a `## ` section when missing. Returns (new content,
    1-based line). Existing lines keep their bytes; new lines take the file's line ending (its first
    line's)."""
    eol = "\r\n" if content.split("\n", 1)[0].endswith("\r") else "\n"
    lines = re.findall(r"[^\n]*\n|[^\n]+\Z", content) or [f"# {day}"]
    if not lines[-1].endswith("\n"):  # an unterminated last line: lines are about to follow it
        lines[-1] += eol
    bare = split_lines("".join(lines))  # the same lines without their endings
    section = _find_section(bare, is_retain_heading if retain else _is_notes_heading)
    entry_lines = entry.rstrip("\n").split("\n")
    heading = "## Retain" if retain else "## Notes"
    retain_at = None if retain or section else _find_section(bare, is_retain_heading)
    if section is not None:
        at, new, before = section[1], entry_lines, 0  # section[1]: after its last non-blank line
    elif retain_at is not None:  # notes go before the Retain section, which stays last
        at, new, before = retain_at[0], [heading, "", *entry_lines, ""], 2
    else:
        at = len(bare)
        while at and not bare[at - 1].strip():  # trailing blank lines make way for the new section
            at -= 1
        del lines[at:]
        new, before = ["", heading, "", *entry_lines], 3
    lines[at:at] = [line + eol for line in new]
    return "".join(lines), at + before + 1


def _is_notes_heading(title: str) -> bool:
    return title.strip().rstrip(":：").strip().casefold() in NOTES_HEADINGS


def _find_section(lines: list[str], is_name) -> tuple[int, int] | None:
    """(index of its heading's first line, index after its last block) of the first section whose
    heading (ATX or setext, any level) is_name accepts. The blocks are the ones chunking and the
    Retain parser see: a `# comment` inside a code fence (``` or ~~~) is code, not a heading, and
    an appended multi-line entry's indented continuation lines belong to its list item. A section
    ends at the next heading of its level or above; a Notes section also at a Retain heading, so a
    note never lands among the facts."""
    blocks = scan_blocks(lines)
    for k, block in enumerate(blocks):
        if block.kind != "heading" or not is_name(block.title):
            continue
        last = block.end  # 1-based end line == 0-based index after it
        for later in blocks[k + 1:]:
            if later.kind == "heading" and (later.level <= block.level
                                            or (is_name is not is_retain_heading and is_retain_heading(later.title))):
                break
            last = later.end
        return block.start - 1, last
    return None


def append(ws: Workspace, text: str, *, retain: str | None = None, entities=(), confidence: float | None = None,
           commit: bool = True, day: dt.date | None = None) -> Appended:
    entry = format_entry(text, retain, entities, confidence)
    day_s = (day or dt.date.today()).isoformat()
    rel = f"memory/{day_s}.md"
    path = ws.root / rel
    from zmem.indexer import ensure_state_dir  # not at the top: the indexer imports much more
    ensure_state_dir(ws)  # a clear error when .zmem is not a directory
    with open(ws.state_dir / "append.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent appends queue here, so none is lost
        _check_can_write(open_repo(ws.root), path, rel, commit)
        path.parent.mkdir(parents=True, exist_ok=True)
        old = ""
        if path.exists():
            with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:  # "": keep CRLFs
                old = f.read()
        new, line = insert_entry(old, entry, day_s, retain is not None)
        _atomic_write(path, new)
        result = Appended(rel, line, entry.rstrip("\n"))
        if commit:
            _commit(ws, rel, entry, result)
    return result


# git's markers (in the worktree's own git dir) of an operation in progress -> its command
IN_PROGRESS = {"MERGE_HEAD": "merge", "rebase-merge": "rebase", "rebase-apply": "rebase",
               "CHERRY_PICK_HEAD": "cherry-pick", "REVERT_HEAD": "revert"}


def _check_can_write(repo: Repo, path, rel: str, commit: bool) -> None:
    """Refuse, before anything is written, what would lose the note or break the repository's state."""
    if path.is_symlink():
        raise ZmemError(f"refusing to write through a symlink: {rel}", hint="replace the symlink with a real file")
    if path.is_dir():
        raise ZmemError(f"{rel} is a directory, not a file; the note was not written",
                        hint="move the directory out of the way, then append again")
    if path.parent.exists() and not path.parent.is_dir():
        raise ZmemError("memory is a file, not a directory; the note was not written",
                        hint="move the file out of the way, then append again")
    git_dir = repo.git_dir()  # a linked worktree's own, where its merge or rebase state lives
    for marker, op in IN_PROGRESS.items():
        if os.path.exists(os.path.join(git_dir, marker)):
            # staged now, a merge --abort would discard the note; committed, a rebase --abort would drop it
            raise ZmemError(f"a {op} is in progress in {repo.workdir}; the note was not written",
                            hint=f"finish it (`git {op} --continue`) or abort it (`git {op} --abort`), "
                                 "then append again")
    if repo.in_conflict(rel):  # `git add` would mark it resolved
        raise ZmemError(f"{rel} has unresolved conflicts; the note was not written",
                        hint=f"resolve them (edit the file, then `git add {rel}`), then append again")
    if commit and shutil.which("git") is None:
        raise ZmemError("git is not on PATH, so the note could not be committed; it was not written",
                        hint="install git or fix PATH, or append with --no-commit to write without committing")


def _atomic_write(path, content: str) -> None:
    tmp = path.with_name(f".zmem-{uuid.uuid4().hex}.tmp")
    # 0o666 less the umask, the mode of any new file (mkstemp would make it 0600)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
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
    repo = open_repo(ws.root)
    if not commit:
        if repo.is_ignored(rel):  # git's own last words would be only its advice line
            result.warnings.append(f"{rel} is ignored by git (.gitignore), so it was written but neither committed "
                                   "nor indexed (recall will not find it); un-ignore memory/ to commit notes "
                                   f"(`git check-ignore -v {rel}` shows the rule)")
        else:
            result.warnings.append(f"{rel}: written but not committed: {problem}")
        return
    result.committed, result.commit = True, commit
    if repo.head_is_detached():
        result.warnings.append(f"HEAD is detached: the note is committed at {commit[:10]} on no branch; "
                               f"`git branch NAME {commit[:10]}` keeps it")
