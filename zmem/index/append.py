"""The agent's write path: append a note or a Retain fact to today's daily log, then commit."""
from __future__ import annotations

import datetime as dt
import errno
import fcntl
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from zmem.errors import ZmemError, arg, describe, example
from zmem.text.markdown import scan_blocks, split_lines
from zmem.text.kinds import KINDS
from zmem.text.retain import is_retain_heading, parse_bullet
from zmem.git.commit import commit_paths
from zmem.git.gitstatus import open_command_repo
from zmem.workspace.core import Workspace, check_no_symlink, open_dir_in, write_through_symlink

TYPE_CHECKING = False  # as typing's, without importing typing; checkers know the name
if TYPE_CHECKING:
    from zmem.git.gitstatus import CommandRepo
    from zmem.git.repo import Repo

NOTES_HEADINGS = ("notes",)
# C0 control characters but tab, LF and CR: a NUL makes git take the log for a binary file (its
# commit fails, and the index skips the whole log), and none of them belongs in a note
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


@dataclass
class Appended:
    path: str
    line: int  # the entry's first line (1-based)
    end_line: int  # its last: a multi-line note's continuation lines are part of it
    text: str
    committed: bool = False
    commit: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def citation(self) -> str:
        """`path#L5`, or `path#L5-L7` for an entry of several lines (what `zmem get` reads back)."""
        return f"{self.path}#L{self.line}" + (f"-L{self.end_line}" if self.end_line != self.line else "")


def format_entry(text: str, retain: str | None = None, entities=(), confidence: float | None = None) -> str:
    """The Markdown line(s) for one entry. Pure; raises ZmemError on invalid input."""
    _check_characters(text, "the text")
    for name in entities:
        _check_characters(name, f"an {arg('entities')} name")
    text = text.strip()
    if not text:
        raise ZmemError("nothing to append: the text is empty", hint=example("append", text="Peter moved to Lisbon"),
                        param="text")
    if confidence is not None and retain != "O":
        raise ZmemError(f"{arg('confidence')} applies only to opinions", hint=f"use it with {arg('retain', 'O')}",
                        param="confidence")
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise ZmemError(f"{arg('confidence')} {confidence} is outside [0, 1]", hint=f"e.g. {arg('confidence', 0.8)}",
                        param="confidence")
    if retain is None:
        if entities:
            text = " ".join("@" + _slug(e) for e in entities) + ": " + text
        lines = [line.rstrip() for line in text.split("\n")]
        return "- " + "\n  ".join(line for line in lines if line) + "\n"
    kind = retain.upper()
    if kind not in KINDS:
        raise ZmemError(f"unknown Retain kind {retain!r}", param="retain",
                        hint=f"W world, B experience, O opinion (with {arg('confidence')}), S observation, R relation")
    head = kind + (f"(c={confidence:g})" if confidence is not None else "")
    if kind == "R":  # `@Peter lives_in @Lisbon`: the text is the relation itself
        line = f"- {head} {' '.join(text.split())}"
    else:
        line = f"- {head}{''.join(' @' + _slug(e) for e in entities)}: {' '.join(text.split())}"
    fact, problem = parse_bullet(line[2:], 1, 1, dates=False)  # only whether it is a fact
    if fact is None:
        raise ZmemError(f"not a valid Retain fact: {problem}", param="text",
                        hint=f"e.g. {example('append', retain='W', entities=['Peter'], text='Moved to Lisbon')}; "
                             f"relations: {example('append', retain='R', text='@Peter lives_in @Lisbon')}")
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
        raise ZmemError(f"an empty {arg('entities')} name", hint=f"e.g. {arg('entities', ['Peter'])}", param="entities")
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
    from zmem.index.catchup import ensure_state_dir  # not at the top: the indexer imports much more
    ensure_state_dir(ws)  # a clear error when .zmem is not a directory
    with _append_lock(ws) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent appends queue here, so none is lost
        # git's answers from the git command: no pygit2 (its import alone is ~1/3 of an append's CPU)
        repo = open_command_repo(ws.root, git_optional=True)
        _check_can_write(repo, ws.root, rel, commit)
        try:
            line, warnings = _insert_atomically(ws.root, rel,
                                                lambda old: insert_entry(old, entry, day_s, retain is not None))
        except OSError as e:
            raise _not_written(ws, e) from None
        # the note is in the file from here on: nothing below may turn the append into a failure (an
        # agent told it failed would append the note again)
        result = Appended(rel, line, line + entry.count("\n") - 1, entry.rstrip("\n"), warnings=warnings)
        if commit:
            try:
                _commit(ws, rel, entry, result, repo)
            except Exception as e:  # noqa: BLE001 - a failed commit leaves the note written, uncommitted
                problem = describe(e)
                why = f"{e.filename}: {e.strerror}" if problem.bug and isinstance(e, OSError) and e.filename \
                    and e.strerror else "; ".join(filter(None, (problem.message, problem.hint)))
                result.warnings.append(f"{rel}: written but not committed: {why}")
    return result


def _append_lock(ws: Workspace):
    """The lock file appends queue on, opened for locking (read-only will do: flock needs no write
    access, and a .zmem/ this user cannot write need not stop a note going to a writable memory/)."""
    lock = ws.state_dir / "append.lock"
    try:
        return open(lock, "a")
    except OSError as e:
        try:
            return open(lock, "r")
        except OSError:
            raise _not_written(ws, e) from None


def _not_written(ws: Workspace, e: OSError) -> ZmemError:
    """An OSError met before the note was written: what could not be written, why, and what to do."""
    where = Path(e.filename) if e.filename else ws.root / "memory"
    if where.name.startswith(".zmem-") and where.name.endswith(".tmp"):  # our temporary file: name its directory
        what = f"cannot create a file in {_shown(ws, where.parent)}/"
        where = where.parent
    else:
        what = f"cannot write {_shown(ws, where)}"
        where = where.parent if not where.is_dir() else where
    if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        hint = "the disk is full or a size limit was reached (`df -h`, `ulimit -f`); free some space, then append again"
    elif e.errno == errno.EROFS:
        hint = "the file system is mounted read-only; append in a writable copy of the workspace"
    elif e.errno in (errno.EACCES, errno.EPERM):
        hint = (f"this user may not write there: check the permissions of {_shown(ws, where)} "
                f"(`ls -ld {_shown(ws, where)}`), then append again")
    else:
        hint = "fix that, then append again"
    return ZmemError(f"{what}: {e.strerror or e}; the note was not written", hint=hint)


def _shown(ws: Workspace, path: Path) -> str:
    """A path as the user knows it: relative to the workspace when inside it."""
    try:
        rel = Path(path).relative_to(ws.root).as_posix()
        return "." if rel == "." else rel
    except ValueError:
        return str(path)


# git's markers (in the worktree's own git dir) of an operation in progress -> its command
IN_PROGRESS = {"MERGE_HEAD": "merge", "rebase-merge": "rebase", "rebase-apply": "rebase",
               "CHERRY_PICK_HEAD": "cherry-pick", "REVERT_HEAD": "revert"}


def _check_can_write(repo: CommandRepo | Repo, root: Path, rel: str, commit: bool) -> None:
    """Refuse, before anything is written, what would lose the note, write it outside the
    workspace (memory/ or the log a symlink) or break the repository's state."""
    check_no_symlink(root, rel)
    path = root / rel
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
    if not os.path.lexists(path):
        _check_not_tracked(repo, rel)
    if commit and shutil.which("git") is None:
        raise ZmemError("git is not on PATH, so the note could not be committed; it was not written",
                        hint=f"install git or fix PATH, or append with {arg('commit', False)} to write without committing")


def _check_not_tracked(repo: CommandRepo | Repo, rel: str) -> None:
    """Today's log is missing from the work tree: refuse when git still has it (in the index or
    in HEAD). A fresh log holding only the new note would, once committed, delete its committed
    lines. Starting from git's copy instead would quietly undo a deletion, or write a file a sparse
    checkout leaves out (git then refuses to stage it); refusing, with a hint that says how to
    bring the file back, is simpler and safer."""
    drop = "appending would start it afresh with only the new note, and committing that would delete its committed lines"
    if repo.in_index(rel):
        if repo.skip_worktree(rel):
            pattern = f"{repo.prefix}memory" if repo.sparse_checkout() == "cone" else f"/{repo.prefix}memory/"
            raise ZmemError(f"{rel} is tracked by git but not in the work tree (a sparse checkout leaves it out); "
                            "the note was not written",
                            hint=f"{drop}; check memory/ out (`git sparse-checkout add {pattern}`, or "
                                 "`git sparse-checkout disable`), then append again")
        raise ZmemError(f"{rel} is tracked by git but not in the work tree (it was deleted); the note was not written",
                        hint=f"{drop}; bring it back (`git restore {rel}`), or delete it for good "
                             f"(`git rm {rel}`, then commit), then append again")
    if repo.in_head(rel):
        raise ZmemError(f"{rel} is not in the work tree and its deletion is staged but not committed; "
                        "the note was not written",
                        hint=f"{drop}; undo the deletion (`git restore --staged --worktree {rel}`) or commit it, "
                             "then append again")


ATTEMPTS = 50  # rounds of re-reading a log that other writers keep changing before giving up
SETTLE_SECONDS = 0.005  # after the rename: time for a write already under way to the old file to land


def _insert_atomically(root: Path, rel: str, insert) -> tuple[int, list[str]]:
    """Replace the file with insert(its content) -> (content, line) atomically (a temporary file
    renamed over it), without losing what other writers add meanwhile: agents that write memory
    files directly (`echo "- x" >> memory/today.md`) do not take zmem's lock. Before the rename the
    file is checked against what was read: bytes appended since are carried over to the new file
    (as if written just after the rename), and any other change starts the insert again from the
    fresh content. A check and a rename are two steps, so a write can still land on the old file
    between them; after the rename, once a write already under way has had SETTLE_SECONDS to
    land, what the old file gained is appended to the new one. What remains lost: a write to the
    old file opened before the rename and made later than that (a writer stalled for longer, or
    one holding the file open) -- the price of an atomic replace, which a reader never sees half
    written. Every step names the file relative to its directory's descriptor, opened without
    following symlinks (open_dir_in): a directory swapped for a symlink meanwhile cannot send the
    note outside the workspace. Returns (line, warnings)."""
    warnings: list[str] = []
    parent, _, name = rel.rpartition("/")
    dfd = open_dir_in(root, parent, create=True)
    try:
        for _ in range(ATTEMPTS):
            done = _try_insert(root, rel, dfd, name, insert, warnings)
            if done is not None:
                return done, warnings
    finally:
        os.close(dfd)
    raise ZmemError(f"{rel} kept changing while the note was being added ({ATTEMPTS} tries); "
                    "the note was not written",
                    hint="another program keeps rewriting today's log; append again when it has stopped")


def _try_insert(root: Path, rel: str, dfd: int, name: str, insert, warnings: list[str]) -> int | None:
    """One round of _insert_atomically: the entry's line, or None when the log changed under it."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
    except FileNotFoundError:
        fd = None
    except OSError as e:
        if e.errno == errno.ELOOP:  # the log became a symlink since _check_can_write
            raise write_through_symlink(root, rel) from None
        e.filename = str(root / rel)
        raise
    try:
        seen = os.fstat(fd) if fd is not None else None  # before reading: a write after it shows
        data = _read_from(fd, 0) if fd is not None else b""
        content, line = insert(data.decode("utf-8", "surrogateescape"))
        tmp = _write_temporary(dfd, root / rel, content.encode("utf-8", "surrogateescape"), seen)
        try:
            settled, data = _settle(dfd, name, fd, seen, data, tmp)
            if not settled:
                return None  # changed in place, replaced or deleted: insert into the fresh content
            if fd is None:
                try:  # never over a log someone else created meanwhile
                    os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
                except FileExistsError:
                    return None
                except OSError:  # no hard links on this file system
                    os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            else:
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        finally:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except FileNotFoundError:
                pass
        if fd is not None:
            try:
                _carry_over_late_writes(dfd, name, rel, fd, data, warnings)
            except OSError as e:  # the note is written: this is no reason to say it is not
                warnings.append(f"{rel}: lines another program appended while the note was being added "
                                f"could not be carried over ({e.strerror or e}); check the log")
        return line
    finally:
        if fd is not None:
            os.close(fd)


def _settle(dfd: int, name: str, fd, seen, data: bytes, tmp: str) -> tuple[bool, bytes]:
    """Check the file just before the rename. (True, data) when it is as read, or only grew at its
    end (the new bytes are appended to tmp too, and data extended); (False, data) when it was
    changed otherwise, replaced, deleted, or (for a new log) created meanwhile."""
    for _ in range(1000):
        try:
            now = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return fd is None, data
        if fd is None or now.st_ino != seen.st_ino or now.st_dev != seen.st_dev:
            return False, data
        if now.st_size == len(data) and now.st_mtime_ns == seen.st_mtime_ns:
            return True, data
        if now.st_size <= len(data) or os.pread(fd, len(data), 0) != data:
            return False, data  # rewritten, not appended to
        extra = _read_from(fd, len(data), now.st_size)
        _append_bytes(dfd, tmp, extra)
        data, seen = data + extra, now
    return False, data


def _append_bytes(dfd: int, name: str, data: bytes) -> None:
    out = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW, dir_fd=dfd)
    with os.fdopen(out, "wb") as f:
        f.write(data)


def _carry_over_late_writes(dfd: int, name: str, rel: str, fd: int, data: bytes, warnings: list[str]) -> None:
    """After the rename: what was appended to the old file between the last check and the rename
    (by a writer that had opened it before) is appended to the new one."""
    time.sleep(SETTLE_SECONDS)
    st = os.fstat(fd)
    if st.st_size == len(data):
        return
    if st.st_size > len(data) and os.pread(fd, len(data), 0) == data:
        _append_bytes(dfd, name, _read_from(fd, len(data), st.st_size))  # as its writer did: at the end
        return
    warnings.append(f"{rel} was rewritten by another program while the note was being added; that "
                    "program's change may be lost (check `git diff` and the log)")


def _read_from(fd: int, offset: int, end: int | None = None) -> bytes:
    """Bytes from offset to end (default: to the end of the file), read with pread."""
    chunks = []
    while end is None or offset < end:
        chunk = os.pread(fd, 1 << 20 if end is None else min(1 << 20, end - offset), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _write_temporary(dfd: int, path: Path, content: bytes, seen) -> str:
    """The name of a temporary file in dfd (path's directory) holding content, with path's mode (or,
    for a new log, 0o666 less the umask, the mode of any new file: mkstemp would make it 0600)."""
    tmp = f".zmem-{uuid.uuid4().hex}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=dfd)
    except OSError as e:
        e.filename = str(path.with_name(tmp))  # _not_written names its directory
        raise
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
            if seen is not None:
                os.fchmod(f.fileno(), seen.st_mode & 0o777)
    except BaseException as e:
        os.unlink(tmp, dir_fd=dfd)  # a partly written file goes
        if isinstance(e, OSError) and e.filename is None:  # a failed write (disk full): name the log
            e.filename = str(path)
        raise
    return tmp


def _commit(ws: Workspace, rel: str, entry: str, result: Appended, repo: CommandRepo | Repo) -> None:
    commit, problem = commit_paths(ws.root, [rel], f"zmem append: {rel}\n\n{entry}", repo=repo)
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
