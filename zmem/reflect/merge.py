"""Merge conflicts in the files `zmem reflect` writes, settled without a person: those files are
derived from the notes, so `zmem sync` takes one side and has reflect write them again from the
merged notes, instead of stopping as it does for a conflict in what a person wrote.

- An entity page (bank/entities/*.md): the page is merged with its zmem block set aside; when the
  rest (what people wrote around the block) merges cleanly, our block goes back in its place (it
  is rewritten right after). A conflict outside the block is a person's conflict.
- bank/opinions.md: when only one side has commits that are not reflect's (a person's edit), that
  side's file is kept; when neither has, ours. Reflect then adds the evidence the other side had
  (each fact once, by its id). When both sides have a person's edits, it is a person's conflict.

And the daily logs, merged by git's union driver, lose the repeats that driver adds
(drop_union_duplicates).
"""
from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

from zmem.query.entities import ENTITY_DIR, block_lines
from zmem.git.gitcmd import run_git
from zmem.text.markdown import scan_blocks
from zmem.text.opinions import OPINIONS_PATH
from zmem.workspace.core import write_file_in

REFLECT_TRAILER = "Zmem-Reflect"  # reflect.TRAILER (reflect sits above this module's layer)
_HOLE = "<!-- zmem:block set aside while merging -->\n"


def is_derived(rel: str) -> bool:
    """A workspace path reflect writes (a conflict there can be settled by regenerating it)."""
    return rel == OPINIONS_PATH or (rel.startswith(ENTITY_DIR) and rel.endswith(".md") and "/" not in rel[len(ENTITY_DIR):])


def _git(root: Path, *args: str) -> tuple[int, str]:
    proc = run_git(list(args), cwd=root, capture_output=True, text=True, encoding="utf-8", errors="replace")
    return proc.returncode, proc.stdout


def _stage(root: Path, n: int, git_path: str) -> str | None:
    code, out = _git(root, "show", f":{n}:{git_path}")
    return out if code == 0 else None


def _set_aside(text: str) -> tuple[str, str | None]:
    """(the page with its zmem block replaced by one placeholder line, the block) — (page, None)
    without a whole block."""
    opens, closes = block_lines(text)
    if len(opens) != 1 or len(closes) != 1 or closes[0] < opens[0]:
        return text, None
    begin, end = opens[0], closes[0]
    stop = text.find("\n", end)
    stop = len(text) if stop < 0 else stop + 1
    return text[:begin] + _HOLE + text[stop:], text[begin:stop]


def _merge_text(ours: str, base: str, theirs: str) -> str | None:
    """git merge-file of three texts: the result, or None when it conflicts."""
    with tempfile.TemporaryDirectory(prefix="zmem-merge-") as tmp:
        files = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_bytes(text.encode("utf-8"))
            files.append(str(path))
        code, out = _git(Path(tmp), "merge-file", "-p", "--quiet", *files)
    return out if code == 0 else None


def _settle_page(root: Path, git_path: str) -> str | None:
    base, ours, theirs = (_stage(root, n, git_path) for n in (1, 2, 3))
    if ours is None or theirs is None:  # deleted on one side: whether to keep it is a person's call
        return None
    (ours_rest, our_block), (theirs_rest, their_block) = _set_aside(ours), _set_aside(theirs)
    block = our_block or their_block
    if block is None:
        return None  # no zmem block at all: the conflict is in what a person wrote
    merged = _merge_text(ours_rest, _set_aside(base or "")[0], theirs_rest)
    if merged is None or merged.count(_HOLE) != 1:
        return None
    return merged.replace(_HOLE, block)


def _hand_edits(root: Path, since: str, tip: str, git_path: str) -> int:
    """Commits from since to tip that changed the file and are not reflect's."""
    counts = []
    for extra in ((), (f"--grep=^{REFLECT_TRAILER}:",)):
        code, out = _git(root, "rev-list", "--count", "--no-merges", *extra, tip, f"^{since}", "--", git_path)
        counts.append(int(out.strip()) if code == 0 and out.strip().isdigit() else 0)
    return counts[0] - counts[1]


def _settle_opinions(root: Path, git_path: str, theirs_commit: str) -> str | None:
    code, base = _git(root, "merge-base", "HEAD", theirs_commit)
    if code:
        return None
    base = base.strip()
    ours_edited = _hand_edits(root, base, "HEAD", git_path)
    theirs_edited = _hand_edits(root, base, theirs_commit, git_path)
    if ours_edited and theirs_edited:
        return None
    return _stage(root, 3 if theirs_edited else 2, git_path)


def settle(root: Path, conflicted: dict[str, str], theirs_commit: str) -> list[str] | None:
    """Resolve a merge in progress in the workspace at root whose conflicts ({workspace path: path
    in git}) are all in files reflect writes: write and stage each one; the workspace paths settled
    (to be regenerated), or None (nothing written) when any of them holds a person's conflict."""
    settled: dict[str, str] = {}
    for rel, git_path in conflicted.items():
        if not is_derived(rel):
            return None
        text = (_settle_opinions(root, git_path, theirs_commit) if rel == OPINIONS_PATH
                else _settle_page(root, git_path))
        if text is None or any(line.startswith(("<<<<<<<", ">>>>>>>")) for line in text.splitlines()):
            return None
        settled[rel] = text
    for rel, text in settled.items():
        write_file_in(root, rel, text.encode("utf-8"))  # never through a symlink
        if _git(root, "add", "--", rel)[0]:
            return None
    return sorted(settled)


def drop_union_duplicates(root: Path, ours: str, theirs: str) -> list[str]:
    """In a merge in progress (not committed yet), remove the repeats the union driver adds: when a
    line reached both sides by different ways (criss-cross merges of many clones, or the same line
    written on both), union keeps each side's copy. No line is kept more times than the side that
    has it most, so a line a person wrote twice stays twice. Returns the workspace paths changed
    (written and staged)."""
    code, out = _git(root, "diff", "--cached", "--name-only", "--relative", "HEAD")
    paths = [p for p in out.splitlines() if p.endswith(".md")] if code == 0 else []
    if not paths:
        return []
    code, attrs = _git(root, "check-attr", "merge", "--", *paths)
    union = [line.rsplit(": merge: ", 1)[0] for line in attrs.splitlines() if line.endswith(": merge: union")]
    changed = []
    for path in union:  # relative to the current directory (the workspace), as check-attr names them
        texts = []
        for rev in (ours, theirs):
            code, text = _git(root, "show", f"{rev}:./{path}")
            texts.append(text if code == 0 else "")
        try:
            merged = (root / path).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        limit = _counts(texts[0]) | _counts(texts[1])  # per line, the most either side has
        seen: dict[str, int] = {}
        kept = []
        for line in merged.splitlines(keepends=True):
            key = line.rstrip("\r\n")
            if key.strip() and limit.get(key, 0) and seen.get(key, 0) >= limit[key]:
                continue
            seen[key] = seen.get(key, 0) + 1
            kept.append(line)
        text = in_their_sections("".join(kept), *texts)
        if text != merged:
            write_file_in(root, path, text.encode("utf-8"))
            if _git(root, "add", "--", path)[0] == 0:
                changed.append(path)
    return changed


def in_their_sections(merged: str, ours: str, theirs: str) -> str:
    """A union-merged note with each note (a block: a bullet with its sub-items, a paragraph) back under
    the heading it has on the side that wrote it. Both sides appending to the end of a day's log put
    one side's new `## Retain` section before the other's new bullet of `## Notes`: the bullet read as a
    malformed fact, under the wrong heading. A block moves only when the sides agree on its heading and
    the merged note has that heading once; it goes after the last block of its section. Blank lines the
    union doubled (neither side has two in a row) become one."""
    lines = merged.split("\n")
    blocks = scan_blocks([line.rstrip("\r") for line in lines])
    where = _sections(merged)  # block text -> its heading, on each side and here
    want = {}
    for side in (_sections(ours), _sections(theirs)):
        for text, heading in side.items():
            want[text] = heading if want.get(text, heading) == heading else None  # the sides disagree: stay
    headings = Counter(_text(lines, b) for b in blocks if b.kind == "heading")
    heading, moves, last = "", {}, {}
    for b in blocks:
        if b.kind == "heading":
            heading = _text(lines, b)
            last[heading] = b.end
            continue
        target = want.get(_text(lines, b))
        if target and target != heading and headings[target] == 1 and where.get(_text(lines, b)) == heading:
            moves[b.start] = (b, target)
        else:
            last[heading] = b.end
    if moves:
        gone = {n for b, _ in moves.values() for n in range(b.start, b.end + 1)}
        after: dict[int, list[str]] = {}
        for b, target in moves.values():
            after.setdefault(last[target], []).extend(lines[b.start - 1:b.end])
        out = []
        for n, line in enumerate(lines, 1):
            if n not in gone:
                out.append(line)
            out.extend(after.get(n, []))
        lines = out
    text = "\n".join(lines)
    if "\n\n\n" in text and "\n\n\n" not in ours and "\n\n\n" not in theirs:
        while "\n\n\n" in text:
            text = text.replace("\n\n\n", "\n\n")
    return text


def _text(lines: list[str], block) -> str:
    return "\n".join(line.rstrip() for line in lines[block.start - 1:block.end])


def _sections(text: str) -> dict[str, str | None]:
    """Each block's text -> the heading it sits under (None when it is under two)."""
    lines = text.split("\n")
    out: dict[str, str | None] = {}
    heading = ""
    for b in scan_blocks([line.rstrip("\r") for line in lines]):
        if b.kind == "heading":
            heading = _text(lines, b)
        else:
            t = _text(lines, b)
            out[t] = heading if out.get(t, heading) == heading else None
    return out


def _counts(text: str) -> Counter:
    return Counter(line.rstrip("\r") for line in text.split("\n") if line.strip())
