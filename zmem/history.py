"""Git history as memory: who committed a line and when (blame, cached by file content)."""
from __future__ import annotations

import time

from zmem.entities import FactRow
from zmem.repo import ZERO_COMMIT, blame_file, open_repo
from zmem.snapshot import git_blob_id
from zmem.workspace import Workspace


def blame_lines(ws: Workspace, conn, rel: str) -> dict[int, tuple[str, str, int, str]] | None:
    """line -> (commit, author, time, summary) for the working-tree file `rel`, from the cache when
    this content was blamed before. None when the file cannot be read."""
    try:
        data = (ws.root / rel).read_bytes()
    except OSError:
        return None
    blob = git_blob_id(data)
    rows = conn.execute("SELECT line, commit_id, author, time, summary FROM blame_cache WHERE blob = ?", (blob,))
    cached = {line: (c, a, t, s) for line, c, a, t, s in rows}
    if cached:
        return cached
    repo = open_repo(ws.root)
    blamed = blame_file(repo.workdir, repo.prefix + rel)
    out = {n: (b.commit, b.author, b.time, b.summary) for n, b in enumerate(blamed, 1)}
    if out and not any(c == ZERO_COMMIT for c, _, _, _ in out.values()):
        # only fully committed content: uncommitted lines get their commit later
        conn.executemany("INSERT OR IGNORE INTO blame_cache(blob, line, commit_id, author, time, summary) "
                         "VALUES(?,?,?,?,?,?)", [(blob, n, *v) for n, v in out.items()])
    return out


def attach_origins(ws: Workspace, conn, facts: list[FactRow]) -> None:
    """Fill each fact's commit, author and time (the commit that added its first line). A line not
    committed yet gets commit None and the current time."""
    by_path: dict[str, list[FactRow]] = {}
    for f in facts:
        by_path.setdefault(f.path, []).append(f)
    now = int(time.time())
    for rel, group in by_path.items():
        lines = blame_lines(ws, conn, rel) or {}
        for f in group:
            commit, author, when, _ = lines.get(f.start_line, (ZERO_COMMIT, "", now, ""))
            f.commit = None if commit == ZERO_COMMIT else commit
            f.author = author or None
            f.time = when if commit != ZERO_COMMIT else now
