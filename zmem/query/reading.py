"""Reading cited lines back: what `zmem get` (and the MCP server's memory_get) return."""
from __future__ import annotations

import re
from dataclasses import dataclass

from zmem.errors import ZmemError, arg
from zmem.workspace.core import Workspace

# path, then optionally @REV, then #Lx[-Ly] or :LINE[-LINE]
# the longest path that ends in .md: a note named `a.md@x.md` is one file, not a.md at revision x.md
# (which read a line of a.md at a branch named x.md); DOTALL: a newline is a character of a file name
_CITATION = re.compile(r"(.+\.md)(?:@([^@#:\s]+))?(?:#L(\d+)(?:-L?(\d+))?|:(\d+)(?:-(\d+))?)?",
                       re.IGNORECASE | re.DOTALL)


_WRAPPERS = {"`": "`", "[": "]", "<": ">", '"': '"', "'": "'", "(": ")"}


def _unwrapped(spec: str) -> str:
    """A citation as pasted from Markdown or chat: `…`, […], <…>, "…" around it are not part of it."""
    spec = spec.strip()
    while len(spec) > 2 and _WRAPPERS.get(spec[0]) == spec[-1]:
        spec = spec[1:-1].strip()
    return spec


def split_citation(spec: str) -> tuple[str, str | None, tuple[int, int] | None]:
    """`memory/x.md@abc123#L3-L5` -> ("memory/x.md", "abc123", (3, 5)); parts are optional. A
    citation pasted with backticks, brackets or quotes around it is read without them."""
    spec = _unwrapped(spec)
    m = _CITATION.fullmatch(spec)
    if not m:
        if re.search(r"\.md(@[^#:]*)?[#:]", spec, re.IGNORECASE):  # a citation whose line part is malformed
            raise ZmemError(f"bad line range in {spec!r}", hint="write it as PATH#L3-L5 (or PATH#L3, PATH:3-5)")
        return spec, None, None
    path, rev = m.group(1), m.group(2)
    if not (m.group(3) or m.group(5)):
        return path, rev, None
    a = int(m.group(3) or m.group(5))
    b = int(m.group(4) or m.group(6) or a)
    if b < a or a < 1:
        raise ZmemError(f"bad line range in {spec!r}", hint="write it as PATH#L3-L5")
    return path, rev, (a, b)


@dataclass
class Lines:
    """Exactly the cited lines of a memory file (`zmem get`), now or at a commit (rev)."""
    path: str
    start: int
    end_line: int
    lines: int               # how many lines text holds
    total_lines: int
    text: str
    citation: str
    rev: str | None = None

    def to_json(self) -> dict:
        out = {"path": self.path, "from": self.start, "end_line": self.end_line, "lines": self.lines,
               "total_lines": self.total_lines, "text": self.text, "citation": self.citation}
        if self.rev:
            out["rev"] = self.rev
        return out



def read_lines(ws: Workspace, spec: str, *, start: int | None = None, count: int | None = None,
               rev: str | None = None, scope: str = "private") -> dict:
    """Exactly the cited lines of a memory file, now or at a commit (rev, or `path@rev` in spec).
    Paths outside the memory sources, `..` escapes, symlinks, git-ignored and non-.md files are refused, and
    with scope "group" so are private files (MEMORY.md, [scopes] private)."""
    from zmem.text.markdown import decode_note, split_lines
    from zmem.workspace.paths import normalize_rel
    from zmem.workspace.core import resolve_memory_path
    path, cited_rev, cited = split_citation(spec)
    rev = rev or cited_rev
    exact = cited if cited and not start and not count else None  # a citation's own range, read as it is
    if cited:
        start = start or cited[0]
        count = count or (cited[1] - cited[0] + 1)
    start = start or 1
    if rev is None:
        from zmem.git.gitcmd import is_ignored
        rel = resolve_memory_path(ws, path)
        if is_ignored(ws.root, rel):  # recall never shows it, so get must not serve it either
            raise ZmemError(f"{rel} is ignored by git, so zmem neither indexes nor reads it",
                            hint=f"`git check-ignore -v {rel}` shows the rule; take it out of .gitignore to make it memory")
        data = (ws.root / rel).read_bytes()
        sha = None
    else:
        from zmem.git.repo import open_repo
        rel = normalize_rel(path)
        if rel is None or not ws.is_memory_path(rel):
            raise ZmemError(f"not a memory file: {path}",
                            hint="zmem reads MEMORY.md, memory/**.md, bank/**.md and extra_paths (.md files only)")
        repo = open_repo(ws.root)
        sha = repo.resolve(rev)
        if sha is None:
            raise ZmemError(f"unknown revision {rev!r}", hint="use a commit, branch or tag of this repository")
        data = repo.file_at(sha, rel)
        if data is None and repo.is_symlink_at(sha, rel):
            raise ZmemError(f"{rel} is a symlink at {sha[:10]}; zmem does not read through symlinks",
                            hint="cite the file it points to")
        if data is None:
            raise ZmemError(f"{rel} does not exist at {sha[:10]}",
                            hint=f"`zmem log {rel}` shows the commits that touched it")
    if scope == "group" and ws.is_private(rel):
        raise ZmemError(f"{rel} is private and this is a group scope",
                        hint=f"private files (MEMORY.md, [scopes] private in zmem.toml) are read with {arg('scope', 'private')}")
    text, _ = decode_note(rel, data, float("inf"))
    if text is None:
        raise ZmemError(f"{rel} is not a text file", hint="zmem reads Markdown notes only")
    lines = split_lines(text)
    if start > max(len(lines), 1):
        raise ZmemError(f"{rel} has {len(lines)} lines; line {start} is past the end",
                        hint=f"cite a line from 1 to {len(lines)}")
    if exact and exact[1] > len(lines):  # not cut short in silence: the lines it cited are not all there
        raise ZmemError(f"{rel} has {len(lines)} lines; the citation's lines {exact[0]}-{exact[1]} run past the end",
                        hint=f"the file changed since it was cited: recall again, or cite lines {exact[0]} to {len(lines)}")
    chosen = lines[start - 1:start - 1 + count if count else None]
    end = start + len(chosen) - 1
    at = f"@{sha[:10]}" if sha else ""
    out = {"path": rel, "from": start, "end_line": end, "lines": len(chosen), "total_lines": len(lines),
           "text": "\n".join(chosen), "citation": f"{rel}{at}#L{start}-L{end}"}
    if sha:
        out["rev"] = sha
    return out
