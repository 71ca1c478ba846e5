"""Finding the workspace, its memory sources, and path safety."""
from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from zmem.workspace.config import Config, load_config
from zmem.errors import WorkspaceError, cwd_error
from zmem.workspace.paths import normalize_rel

STATE_DIR = ".zmem"
ROOT_FILES = ("MEMORY.md", "memory.md")
ROOT_DIRS = ("memory", "bank")
# A directory is a workspace if it holds one of these (zmem.toml or .zmem/ first).
MARKERS = ("zmem.toml", STATE_DIR, "MEMORY.md", "memory.md", "memory")


@dataclass
class Workspace:
    root: Path  # absolute, resolved
    config: Config

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def index_path(self) -> Path:
        return self.state_dir / "index.sqlite"

    def extra_roots(self) -> list[str]:
        """Configured extra paths as clean workspace-relative POSIX paths (outside ones dropped)."""
        roots = []
        for p in self.config.extra_paths:
            rel = normalize_rel(p)
            if rel is not None:
                roots.append(rel)
        return roots

    def memory_roots(self) -> list[str]:
        """The folders memory lives in: memory/, bank/ and the configured extra paths."""
        return [*ROOT_DIRS, *self.extra_roots()]

    def private_globs(self) -> list[str]:
        """SQLite GLOB patterns of what `--scope group` never returns: MEMORY.md and config's
        [scopes] private (a `**` matches across directories; an entry without glob characters, or
        one ending in /, is a file or directory: it and everything below it)."""
        out = ["MEMORY.md", "memory.md"]
        for entry in self.config.private_paths:
            pattern = glob_to_sql(entry)
            if not any(c in entry for c in "*?["):
                pattern = pattern.rstrip("/")
                out += [pattern, pattern + "/*"] if pattern else []
            else:
                out.append(pattern + "*" if pattern.endswith("/") else pattern)
        return out

    def is_private(self, rel: str) -> bool:
        from fnmatch import fnmatchcase
        return any(fnmatchcase(rel, g) for g in self.private_globs())

    def is_memory_path(self, rel: str) -> bool:
        """Is this workspace-relative POSIX path one of the memory sources? Not a name zmem cannot cite
        (unciteable)."""
        if not rel.endswith(".md") or rel.startswith(STATE_DIR + "/"):
            return False
        if unciteable(rel):
            return False
        if rel in ROOT_FILES:
            return True
        head = rel.split("/", 1)[0]
        if head in ROOT_DIRS and "/" in rel:
            return True
        return any(rel == r or rel.startswith(r.rstrip("/") + "/") for r in self.extra_roots())

    def memory_files(self, unnamed: list[str] | None = None) -> list[str]:
        """All memory files on disk: workspace-relative, sorted; symlinks (files and dirs) skipped.
        unnamed: receives the .md files left out because zmem cannot cite their name (unciteable)."""
        found: set[str] = set()
        for name in ROOT_FILES:
            p = self.root / name
            if p.is_file() and not p.is_symlink() and _exact_name(self.root, name):
                found.add(name)
        for top in self.memory_roots():
            base = self.root / top
            if base.is_symlink():
                continue
            if base.is_file():
                if top.endswith(".md"):
                    found.add(top)
                continue
            for dirpath, dirnames, filenames in os.walk(base):  # followlinks=False
                dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                                     and not os.path.islink(os.path.join(dirpath, d)))
                rel_dir = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
                for f in filenames:
                    if f.endswith(".md") and not os.path.islink(os.path.join(dirpath, f)):
                        found.add(f"{rel_dir}/{f}")
        out = sorted(r for r in found if self.is_memory_path(r))
        if unnamed is not None and len(out) < len(found):
            unnamed += sorted(r for r in found - set(out) if unciteable(r))
        return out


def unciteable(rel: str) -> str | None:
    """Why a citation could not name this file, or None: a name that is not UTF-8 (its bytes reach Python
    as lone surrogates, which git's library, SQLite and JSON cannot take), or one with a backslash (`zmem
    get` reads a pasted `memory\\x.md` as memory/x.md, so the cited lines could not be read back)."""
    if not _utf8(rel):
        return "its name is not UTF-8 (zmem stores and cites paths as UTF-8)"
    if "\\" in rel:
        return "its name has a backslash, which a citation reads as `/`"
    return None


def _utf8(rel: str) -> bool:
    """Is this name UTF-8 on disk? (Other bytes reach Python as lone surrogates.)"""
    if rel.isascii():
        return True
    try:
        rel.encode()
        return True
    except UnicodeEncodeError:
        return False


def shown_name(rel: str) -> str:
    """A name that is not UTF-8, printable: its other bytes as \\xNN."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _exact_name(root: Path, name: str) -> bool:
    """On case-insensitive file systems MEMORY.md and memory.md are one file; count it once."""
    return name in os.listdir(root)


def glob_to_sql(pattern: str) -> str:
    """A path glob as SQLite GLOB / fnmatch understands it: `**` (any depth) becomes `*`; a leading
    `./` goes (only that: `.hidden/` stays)."""
    import re
    return re.sub(r"\*\*/?", "*", re.sub(r"^(\./)+", "", pattern))


def path_filter(pattern: str) -> str:
    """`recall --path` as one glob: a glob as it is; without glob characters a file, or a directory
    and everything below it (`memory`, `bank/people/`), as [scopes] private reads its entries."""
    if any(c in pattern for c in "*?["):
        return glob_to_sql(pattern)
    plain = glob_to_sql(pattern).rstrip("/")
    return plain if plain.lower().endswith(".md") else f"{plain}/*"


def looks_like_workspace(d: Path) -> bool:
    return any(os.path.exists(d / m) for m in MARKERS)


def current_dir() -> Path:
    """The current directory, or a WorkspaceError when it was deleted (or cannot be read) under us."""
    try:
        return Path(os.getcwd())
    except OSError as e:
        raise cwd_error(e) from None


def find_workspace(directory: str | os.PathLike | None = None, *, must_exist: bool = True) -> Workspace:
    """-C DIR, else $ZMEM_WORKSPACE, else the nearest ancestor of the current directory that
    looks like a workspace (zmem.toml, .zmem/, MEMORY.md, memory.md or memory/)."""
    explicit = directory if directory is not None else os.environ.get("ZMEM_WORKSPACE") or None
    if explicit is not None:
        root = Path(explicit).expanduser()
        if not root.is_absolute():
            current_dir()  # a relative -C needs the current directory
        if not os.path.isdir(root):  # False for any OSError (a name too long, no permission), not a crash
            raise WorkspaceError(f"workspace directory does not exist: {root}",
                                 hint="pass an existing directory with -C, or create one with `zmem init DIR`")
        root = root.resolve()
    else:
        cwd = current_dir().resolve()
        for d in (cwd, *cwd.parents):
            if looks_like_workspace(d) and d != Path.home():
                root = d
                break
            if os.path.exists(d / ".git"):
                # The repository's top: stop here rather than wander into an enclosing tree.
                raise WorkspaceError(
                    f"not inside a zmem workspace: {cwd}",
                    hint="run `zmem init` here to make this repository a workspace, or pass -C DIR / set ZMEM_WORKSPACE")
        else:
            raise WorkspaceError(f"not inside a zmem workspace: {cwd}",
                                 hint="run `zmem init DIR` to create one, or pass -C DIR / set ZMEM_WORKSPACE")
    state = root / STATE_DIR
    if os.path.islink(state):
        # .gitignore's `.zmem/` does not cover a symlink, so one can be committed: a clone would then
        # write its index, lock and socket wherever the link points
        raise WorkspaceError(f"{state} is a symlink (to {os.readlink(state)}); zmem keeps its index only in a real"
                             f" {STATE_DIR}/ directory", hint=f"remove the link (`rm {state}`); `zmem index` rebuilds the index")
    return Workspace(root=root, config=load_config(root))


def resolve_memory_path(ws: Workspace, path: str) -> str:
    """Validate a user-supplied path for reading: inside the workspace, a memory source, `.md`,
    no symlinks, an existing readable file. Returns the workspace-relative POSIX path. Every refusal
    is a WorkspaceError (exit 1 with a hint), whatever the file system says about the name."""
    raw = path
    example = "e.g. memory/2025-11-27.md (`zmem recall` prints citations of existing files)"
    if not path.strip():
        raise WorkspaceError("the path is empty", hint=f"give a memory file, {example}")
    p = Path(path).expanduser()
    if p.is_absolute():
        try:
            path = str(p.resolve(strict=False).relative_to(ws.root))
        except ValueError:
            raise WorkspaceError(f"path is outside the workspace: {raw}",
                                 hint=f"use a path relative to {ws.root}, e.g. memory/2025-11-27.md")
    rel = normalize_rel(path)
    if ".." in PurePosixPath(path.replace("\\", "/")).parts or (rel is None and path.replace("\\", "/").startswith("/")):
        raise WorkspaceError(f"path escapes the workspace: {raw}",
                             hint="use a path inside the workspace, e.g. memory/2025-11-27.md")
    if rel is None:  # ".", "./", or an absolute path naming the root itself
        raise WorkspaceError(f"{raw} is the workspace directory, not a memory file", hint=f"give a memory file, {example}")
    if not rel.endswith(".md"):
        raise WorkspaceError(f"not a Markdown memory file: {raw}", hint="zmem reads only .md files")
    if not ws.is_memory_path(rel):
        raise WorkspaceError(
            f"not a memory file: {raw}",
            hint="memory files are MEMORY.md, memory.md, memory/**/*.md, bank/**/*.md and extra_paths from zmem.toml")
    cur = ws.root
    for part in rel.split("/"):
        cur = cur / part
        try:
            st = os.lstat(cur)
        except OSError as e:
            raise _unreadable(rel, e) from None
        if stat.S_ISLNK(st.st_mode):
            raise WorkspaceError(f"refusing to read through a symlink: {rel}",
                                 hint="zmem skips symlinks; point at the real file inside the workspace")
    if not stat.S_ISREG(st.st_mode):
        raise WorkspaceError(f"no such memory file: {rel} (it is not a regular file)",
                             hint="`zmem recall` prints citations of existing files")
    try:
        with open(cur, "rb"):
            pass
    except OSError as e:
        raise _unreadable(rel, e) from None
    return rel


def open_dir_in(root: Path, rel_dir: str, *, create: bool = False) -> int:
    """A descriptor of the workspace directory rel_dir ("" for the root), opened one component at a
    time without following symlinks (each missing one created when create). Writes made relative
    to it (dir_fd=) stay inside the workspace even if a directory is swapped for a symlink
    meanwhile: reads refuse symlinks, and so must writes. A symlink on the way is a WorkspaceError."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    done = []
    try:
        for part in [p for p in rel_dir.split("/") if p]:
            done.append(part)
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                except OSError as e:
                    e.filename = str(root.joinpath(*done))
                    raise
            try:
                sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as e:
                if _is_link(fd, part):
                    raise write_through_symlink(root, "/".join(done)) from None
                e.filename = str(root.joinpath(*done))
                raise
            os.close(fd)
            fd = sub
        return fd
    except BaseException:
        os.close(fd)
        raise


def write_file_in(root: Path, rel: str, data: bytes, *, append: bool = False) -> None:
    """Write (or with append, add to the end of) the workspace file rel, creating it and its
    directories; never through a symlink (a WorkspaceError), wherever it points."""
    parent, _, name = rel.rpartition("/")
    dfd = open_dir_in(root, parent, create=True)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if append else os.O_TRUNC)
        try:
            fd = os.open(name, flags, 0o666, dir_fd=dfd)
        except OSError as e:
            if _is_link(dfd, name):
                raise write_through_symlink(root, rel) from None
            e.filename = str(root / rel)
            raise
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    finally:
        os.close(dfd)


def symlink_on_path(root: Path, rel: str) -> str | None:
    """The first of rel's directories, or rel itself, that is a symlink (workspace-relative)."""
    parts = rel.split("/")
    return next(("/".join(parts[:i]) for i in range(1, len(parts) + 1) if os.path.islink(root.joinpath(*parts[:i]))),
                None)


def check_no_symlink(root: Path, rel: str) -> None:
    """Refuse, before anything is written, a path to write whose file or a directory above it is a
    symlink (open_dir_in and O_NOFOLLOW still guard the write itself against a later swap)."""
    link = symlink_on_path(root, rel)
    if link is not None:
        raise write_through_symlink(root, link)


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def write_through_symlink(root: Path, rel: str) -> WorkspaceError:
    """The refusal to write through the symlink rel (a file or a directory of the workspace)."""
    try:
        target = os.readlink(root / rel)
    except OSError:
        target = "?"
    return WorkspaceError(f"refusing to write through a symlink: {rel} -> {target}; nothing was written",
                          hint=f"zmem reads and writes memory only inside the workspace (symlinks are skipped): "
                               f"replace the symlink {rel} with the real file or directory, then try again")


def _unreadable(rel: str, e: OSError) -> WorkspaceError:
    """A memory path the file system refused: missing, a name too long for it, permissions, I/O."""
    if e.errno in (errno.ENOENT, errno.ENOTDIR):
        return WorkspaceError(f"no such memory file: {rel}", hint="`zmem recall` prints citations of existing files")
    if e.errno == errno.ENAMETOOLONG:
        return WorkspaceError(f"no such memory file: {rel} (the name is too long for the file system)",
                              hint="`zmem recall` prints citations of existing files")
    return WorkspaceError(f"cannot read {rel}: {e.strerror or e}",
                          hint="check the file's permissions (and the directories above it)")
