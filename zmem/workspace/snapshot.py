"""A cheap "has anything changed?" check that needs no pygit2 (whose import alone costs ~100 ms):
HEAD read from the git directory's files, plus the stat signature of every indexed file and of the
directories that could gain new ones. When it says "unchanged", a reading command skips catch-up;
when in doubt it says "changed" and the full git-based catch-up decides."""
from __future__ import annotations

import json
import os
import re
import stat as st_mode
import time
from pathlib import Path

RACY_NS = 2_000_000_000  # a file modified this close to the snapshot may change within one mtime tick
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def git_blob_id(data: bytes) -> str:
    """The git blob id (SHA-1 object format) of some bytes, as pygit2.hash computes it."""
    import hashlib  # loads OpenSSL (~15 ms): only in the processes that hash something
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
        self.checked_ns = now_ns()  # before any stat of this check: what it saw is at least this old
        self.files: set[str] = set()  # content differs, gone, or new
        self.restat: dict[str, tuple[int, int, int, int]] = {}  # same content, new stat signature
        # directory -> its signature taken before it was listed (None: gone); recording any later
        # stat could cover an entry the listing never saw
        self.dirs: dict[str, tuple[int, int] | None] = {}
        self.rehashed = 0  # files read because their stat was too close to the snapshot to trust
        self.rescanned = 0  # directories listed again for the same reason
        self.ignores = False  # a .gitignore (or info/exclude, core.excludesFile) says something new


def changed_since_snapshot(root: Path, conn, taken_ns: int, is_memory_path, tops: list[str]) -> Changes:
    """Indexed files whose content differs (stat changed, then blob compared), files that are
    gone, and new memory files in directories whose signature moved or is too recent to trust."""
    out = Changes()
    out.ignores = ignore_rules_changed(stored_ignore_record(conn))
    suspects: dict[str, tuple[int, int, int, int] | None] = {}  # stat moved or too recent to trust
    base = str(root) + os.sep  # plain strings: pathlib would triple the cost of 10,000 stats
    stat = os.stat
    racy = taken_ns - RACY_NS
    dir_fds: dict[str, int] = {}  # stat by name in an open directory: no path walk per file (~20% faster)
    try:
        # the stat columns only (a covering index): blobs are read for the few suspects
        for rel, mtime, size, ino, ctime in conn.execute("SELECT path, mtime_ns, size, ino, ctime_ns FROM files"):
            parent, _, name = rel.rpartition("/")
            fd = dir_fds.get(parent)
            if fd is None:
                fd = dir_fds[parent] = _open_dir(base + parent)
            try:
                st = stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:  # gone (or its directory is: fd -1)
                out.files.add(rel)
                continue
            if st.st_mtime_ns != mtime or st.st_size != size or st.st_ino != ino or st.st_ctime_ns != ctime \
                    or mtime >= racy:
                sig = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
                suspects[rel] = None if sig == (mtime, size, ino, ctime) else sig
    finally:
        for fd in dir_fds.values():
            if fd >= 0:
                os.close(fd)
    for rel, blob in _blobs(conn, list(suspects)):
        out.rehashed += 1
        try:
            if git_blob_id((root / rel).read_bytes()) != blob:
                out.files.add(rel)
            elif suspects[rel] is not None:
                out.restat[rel] = suspects[rel]
        except OSError:  # gone, or (still) unreadable: the catch-up decides
            out.files.add(rel)
    recorded = {rel: (mtime, ctime) for rel, mtime, ctime in conn.execute("SELECT path, mtime_ns, ctime_ns FROM dirs")}
    known: set[str] | None = None  # the indexed paths: read once a directory is to be listed
    for rel, was in recorded.items():
        directory = base + rel if rel else str(root)
        sig = dir_signature(directory)
        if sig == was:
            # an entry made within the clock tick of the recorded stat left it as it was: a
            # directory changed this close to the snapshot is listed again, as such files are read
            if max(was) < racy:
                continue
            out.rescanned += 1
        else:
            out.dirs[rel] = sig
        if known is None:
            known = {p for (p,) in conn.execute("SELECT path FROM files")}
        if sig is None:  # gone, or now a file (`memory/x.md` was a directory): its notes went with it
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
                for sub, sub_sig, entries in _signed_walk(root, roots):
                    out.dirs[sub] = sub_sig
                    for f in entries:
                        frel = f"{sub}/{f.name}"
                        if frel not in known and f.is_file(follow_symlinks=False) and is_memory_path(frel):
                            out.files.add(frel)
            elif child not in known and entry.is_file(follow_symlinks=False) and is_memory_path(child):
                out.files.add(child)
    return out


def dir_signature(path) -> tuple[int, int] | None:
    """(mtime, ctime) of a real directory (None when it is gone, a file or a symlink): new and
    removed entries move both; ctime because tar, rsync -a and unzip put a directory's mtime back."""
    st = _dir_stat(path)
    return None if st is None else (st.st_mtime_ns, st.st_ctime_ns)


def dir_signatures(root: Path, tops: list[str]) -> dict[str, tuple[int, int]]:
    """memory_dirs with each directory's signature, taken before the directory is listed (by this
    walk or by whoever lists the files afterwards): an entry that appears later changes it."""
    out = {}
    sig = dir_signature(root)
    if sig is not None:
        out[""] = sig
    out.update((rel, sig) for rel, sig, _ in _signed_walk(root, tops))
    return out


def _signed_walk(root: Path, tops: list[str]):
    """(rel, signature, entries) of every directory memory_dirs lists under tops (the workspace
    root itself excepted); each signature taken before the listing that follows it."""
    stack: list[tuple[str, bool]] = []
    for top in reversed(tops):
        if top.endswith(".md") and not os.path.isdir(root / top):  # one file: watch its directory
            parent = os.path.dirname(top)
            if parent:
                stack.append((parent, False))
        else:
            stack.append((top, True))
    while stack:
        rel, deep = stack.pop()
        path = os.path.join(root, rel)
        sig = dir_signature(path)
        if sig is None:
            continue
        entries = _scandir(path)
        yield rel, sig, entries
        if deep:
            stack.extend((f"{rel}/{e.name}", True) for e in entries
                         if not e.name.startswith(".") and e.is_dir(follow_symlinks=False))


def _open_dir(path: str) -> int:
    """A descriptor of the directory at path (symlinks followed, as a path walk would), or -1."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return -1


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


IGNORE_META = "ignore_inputs"  # meta key: the ignore rules' inputs as the last catch-up saw them


def ignore_inputs(root: Path, workdir: Path, common_dir: str, dirs) -> list[tuple[str, str]]:
    """(absolute path, kind) of every file whose content decides which memory files git ignores:
    `.gitignore` in the memory directories (dirs, workspace-relative), in the directories between
    them and the workspace root, and from there up to the repository's top; info/exclude; the
    core.excludesFile (or git's default XDG ignore file); and the git config files that may set it
    (kind "config": only that setting counts). Missing files are listed too: creating one counts."""
    rels: set[str] = set()
    for d in dirs:
        parts = d.split("/") if d else []
        rels.update("/".join(parts[:i]) for i in range(len(parts) + 1))
    out = [(os.path.join(root, r, ".gitignore") if r else os.path.join(root, ".gitignore"), "file")
           for r in sorted(rels)]
    top, here = Path(workdir).resolve(), Path(root).resolve()
    while here != top and top in here.parents:
        here = here.parent
        out.append((os.path.join(here, ".gitignore"), "file"))
    out.append((os.path.join(common_dir, "info", "exclude"), "file"))
    configs = _git_config_files(common_dir)
    excludes = None
    for path in configs:
        value = _digest(path, "config")
        if value:
            excludes = value.partition("=")[2] or None
    if excludes is None:
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        excludes = os.path.join(xdg, "git", "ignore")
    excludes = os.path.join(workdir, os.path.expanduser(excludes))  # an absolute path stays as it is
    out.append((excludes, "file"))
    out += [(path, "config") for path in configs]
    return out


def _git_config_files(common_dir: str) -> list[str]:
    """The config files git reads, lowest precedence first (includes are not followed)."""
    out = [] if os.environ.get("GIT_CONFIG_NOSYSTEM") else ["/etc/gitconfig"]
    if os.environ.get("GIT_CONFIG_GLOBAL"):
        out.append(os.environ["GIT_CONFIG_GLOBAL"])
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        out += [os.path.join(xdg, "git", "config"), os.path.join(os.path.expanduser("~"), ".gitconfig")]
    return out + [os.path.join(common_dir, "config")]


def _digest(path: str, kind: str) -> str | None:
    """What of a file matters for ignore rules: a hash of an ignore file's content; a config
    file's core.excludesFile setting ("excludesfile=VALUE", "" when unset); None when missing."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if kind != "config":
        import hashlib
        return hashlib.sha1(data).hexdigest()
    value, section = "", None
    for line in data.decode("utf-8", "replace").splitlines():
        s = line.strip()
        if s.startswith("["):
            section = s[1:s.find("]")].strip().lower() if "]" in s else None
            continue
        key, eq, v = s.partition("=")
        if section == "core" and eq and key.strip().lower() == "excludesfile":
            v = re.split(r"\s[#;]", v.strip(), maxsplit=1)[0].strip()
            value = v[1:-1] if len(v) >= 2 and v[0] == v[-1] == '"' else v
    return f"excludesfile={value}" if value else ""


def _followed_signature(path: str) -> tuple[int, int, int, int] | None:
    """stat_signature of what a path points to (dotfile managers symlink ~/.gitconfig and the like)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns


def ignore_record(inputs: list[tuple[str, str]]) -> dict:
    """{"at": when it was taken, "inputs": [[path, kind, stat signature or None, digest or None], …]}."""
    out = {"at": now_ns(), "inputs": []}
    for path, kind in inputs:
        sig = _followed_signature(path)
        out["inputs"].append([path, kind, list(sig) if sig else None, _digest(path, kind) if sig else None])
    return out


def stored_ignore_record(conn) -> dict | None:
    """The ignore record the last catch-up stored (None when missing or unreadable: the rules then
    count as changed, and the next catch-up decides again)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (IGNORE_META,)).fetchone()
    try:
        record = json.loads(row[0]) if row else None
    except ValueError:
        return None
    ok = isinstance(record, dict) and isinstance(record.get("at"), int) and isinstance(record.get("inputs"), list) \
        and all(isinstance(i, list) and len(i) == 4 for i in record["inputs"])
    return record if ok else None


def ignore_rules_changed(record: dict | None, current: dict | None = None) -> bool:
    """Whether any recorded input now says something else (no record: unknown, so yes), compared
    with a current ignore_record, else with the files: a file whose stat is unchanged and was older
    than the record by RACY_NS is trusted; others are read again."""
    if not isinstance(record, dict):
        return True
    racy = record["at"] - RACY_NS
    seen = {path: digest for path, _, _, digest in current["inputs"]} if current else {}
    for path, kind, sig, digest in record["inputs"]:
        if path in seen:
            if seen[path] != digest:
                return True
            continue
        now = _followed_signature(path)
        if now is not None and sig is not None and list(now) == sig and sig[0] < racy:
            continue
        if (None if now is None else _digest(path, kind)) != digest:
            return True
    return False


def record_dirs(conn, dirs: dict[str, tuple[int, int] | None]) -> None:
    """Remember directory signatures as taken before their listings (None: gone, with everything
    under it; the caller holds the transaction)."""
    for rel, sig in dirs.items():
        if sig is None:
            # (a range, not LIKE: '_' and '%' in a name would match other directories)
            conn.execute("DELETE FROM dirs WHERE path = ? OR (path > ? AND path < ?)", (rel, rel + "/", rel + "0"))
        else:
            conn.execute("INSERT OR REPLACE INTO dirs(path, mtime_ns, ctime_ns) VALUES(?, ?, ?)", (rel, *sig))


def now_ns() -> int:
    return time.time_ns()
