"""A cheap "has anything changed?" check that needs no pygit2 (whose import alone costs ~100 ms):
HEAD read from the git directory's files, plus the stat signature of every indexed file and of the
directories that could gain new ones. When it says "unchanged", a reading command skips catch-up;
when in doubt it says "changed" and the full git-based catch-up decides."""
from __future__ import annotations

import hashlib
import os
import re
import stat as st_mode
import time
from pathlib import Path

RACY_NS = 2_000_000_000  # a file modified this close to the snapshot may change within one mtime tick
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def git_blob_id(data: bytes) -> str:
    """The git blob id (SHA-1 object format) of some bytes, as pygit2.hash computes it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def read_head(git_dir: str, common_dir: str) -> str | None:
    """HEAD's commit id read from files, or None when unsure (unborn, reftable, anything odd)."""
    try:
        head = Path(git_dir, "HEAD").read_text().strip()
        if _SHA.match(head):
            return head  # detached
        if not head.startswith("ref: "):
            return None
        ref = head[5:].strip()
        loose = Path(common_dir, ref)
        if loose.is_file():
            value = loose.read_text().strip()
            return value if _SHA.match(value) else None
        with open(Path(common_dir, "packed-refs")) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref and _SHA.match(parts[0]):
                    return parts[0]
    except OSError:
        return None
    return None


def stat_signature(path: Path) -> tuple[int, int, int, int] | None:
    """(mtime, size, inode, ctime): ctime because mtime can be set back, ctime cannot."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns


def memory_dirs(root: Path, tops: list[str]) -> list[str]:
    """The workspace root and every directory under the memory roots (workspace-relative)."""
    out = [""]
    for top in tops:
        base = root / top
        if top.endswith(".md") and not base.is_dir():  # one file: watch its directory
            parent = os.path.dirname(top)
            if parent and (root / parent).is_dir():
                out.append(parent)
            continue
        if not base.is_dir() or base.is_symlink():
            continue
        for dirpath, dirnames, _ in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and not os.path.islink(os.path.join(dirpath, d))]
            out.append(os.path.relpath(dirpath, root).replace(os.sep, "/"))
    return out


class Changes:
    """What differs on disk from the snapshot: candidate files and directories to re-record."""

    def __init__(self):
        self.files: set[str] = set()  # content differs, gone, or new
        self.restat: dict[str, tuple[int, int, int, int]] = {}  # same content, new stat signature
        self.dirs: set[str] = set()
        self.rehashed = 0  # files read because their stat was too close to the snapshot to trust


def changed_since_snapshot(root: Path, conn, taken_ns: int, is_memory_path, tops: list[str]) -> Changes:
    """Indexed files whose content differs (stat changed, then blob compared), files that are
    gone, and new memory files in directories whose mtime moved."""
    out = Changes()
    known = set()
    suspects: dict[str, tuple[int, int, int, int] | None] = {}  # stat moved or too recent to trust
    base = str(root) + os.sep  # plain strings: pathlib would triple the cost of 10,000 stats
    stat = os.stat
    racy = taken_ns - RACY_NS
    # the stat columns only (a covering index): blobs are read for the few suspects
    for rel, mtime, size, ino, ctime in conn.execute("SELECT path, mtime_ns, size, ino, ctime_ns FROM files"):
        known.add(rel)
        try:
            st = stat(base + rel, follow_symlinks=False)
        except OSError:
            out.files.add(rel)
            continue
        if st.st_mtime_ns != mtime or st.st_size != size or st.st_ino != ino or st.st_ctime_ns != ctime \
                or mtime >= racy:
            sig = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
            suspects[rel] = None if sig == (mtime, size, ino, ctime) else sig
    for rel, blob in _blobs(conn, list(suspects)):
        out.rehashed += 1
        try:
            if git_blob_id((root / rel).read_bytes()) != blob:
                out.files.add(rel)
            elif suspects[rel] is not None:
                out.restat[rel] = suspects[rel]
        except OSError:
            out.files.add(rel)
    recorded = dict(conn.execute("SELECT path, mtime_ns FROM dirs"))
    for rel, mtime in recorded.items():
        directory = root / rel if rel else root
        st = _dir_stat(directory)
        if st is not None and st.st_mtime_ns == mtime:
            continue
        out.dirs.add(rel)
        if st is None:  # gone, or now a file (`memory/x.md` was a directory): its notes went with it
            if rel not in known and is_memory_path(rel) and os.path.isfile(directory) and not os.path.islink(directory):
                out.files.add(rel)
            continue
        for entry in _scandir(directory):
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_symlink() or entry.name.startswith("."):
                continue
            if entry.is_dir() and child not in recorded:
                # at the top, only the memory roots (memory/, bank/, extra_paths) are walked
                roots = [child] if rel else [t for t in tops if t == child or t.startswith(child + "/")]
                for sub in memory_dirs(root, roots)[1:]:
                    out.dirs.add(sub)
                    for f in _scandir(root / sub):
                        frel = f"{sub}/{f.name}"
                        if f.is_file(follow_symlinks=False) and is_memory_path(frel) and frel not in known:
                            out.files.add(frel)
            elif entry.is_file(follow_symlinks=False) and is_memory_path(child) and child not in known:
                out.files.add(child)
    return out


def _dir_stat(path: Path) -> os.stat_result | None:
    """The stat of a real directory; None when it is gone, a file or a symlink."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st if st_mode.S_ISDIR(st.st_mode) else None


def _scandir(path: Path) -> list[os.DirEntry]:
    """A directory's entries; none when it vanished or turned into a file since it was seen."""
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError:
        return []


def _blobs(conn, paths: list[str]):
    for i in range(0, len(paths), 500):
        part = paths[i:i + 500]
        yield from conn.execute(f"SELECT path, blob FROM files WHERE path IN ({','.join('?' * len(part))})", part)


def record_dirs(root: Path, conn, rels) -> None:
    """Remember directory mtimes (the caller holds the transaction)."""
    for rel in rels:
        st = _dir_stat(root / rel if rel else root)
        if st is None:  # gone or no longer a directory
            conn.execute("DELETE FROM dirs WHERE path = ? OR path LIKE ?", (rel, rel + "/%"))
        else:
            conn.execute("INSERT OR REPLACE INTO dirs(path, mtime_ns) VALUES(?, ?)", (rel, st.st_mtime_ns))


def now_ns() -> int:
    return time.time_ns()
