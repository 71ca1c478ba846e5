"""HEAD, the uncommitted paths and shallowness from the git command line, for `zmem status` and
`zmem doctor`: pygit2's import alone costs a fresh process ~100 ms, two git processes ~10 ms."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from zmem.git.gitcmd import CommitInfo, commit_id, is_ignored, run_git

IGNORE_ASKS = 8  # is_ignored questions a CommandRepo asks of git before it asks pygit2
CHAIN_BATCH = 16  # commits one `git log` reads back along HEAD's first parents (first_parent_chain)
NOT_NOTES = ("120000", "160000")  # git's modes of a symbolic link and a submodule: never a note


@dataclass
class WorktreeStatus:
    head: str | None  # None: no commits yet
    dirty: set[str]  # workspace-relative paths with uncommitted changes, or untracked (not ignored)
    shallow: bool


def worktree_status(root: Path) -> WorktreeStatus | None:
    """As Repo.head, Repo.dirty_paths and Repo.is_shallow say it; None when git cannot tell (not a
    work tree, a bare repository, …: open_repo then says why)."""
    where = run_git(["rev-parse", "--is-inside-work-tree", "--show-prefix", "--git-common-dir"], cwd=root,
                    capture_output=True, text=True)
    lines = where.stdout.split("\n")
    if where.returncode or len(lines) < 3 or lines[0] != "true":
        return None
    prefix, common = lines[1], os.path.join(root, lines[2])
    # renames as a deletion and an addition, as pygit2's status names them; paths from the repository's top
    proc = run_git(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--no-renames"],
                   cwd=root, capture_output=True)
    if proc.returncode:
        return None
    head, dirty = None, set()
    for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if entry.startswith("# branch.oid "):
            oid = entry[len("# branch.oid "):]
            head = None if oid == "(initial)" else oid
        elif entry[:2] in ("1 ", "u ", "? "):  # changed, unmerged, untracked: the path is the last field
            path = entry[2:] if entry[0] == "?" else entry.split(" ", 8 if entry[0] == "1" else 10)[-1]
            if path.startswith(prefix):
                dirty.add(path[len(prefix):])
    return WorktreeStatus(head=head, dirty=dirty, shallow=os.path.exists(os.path.join(common, "shallow")))


class CommandRepo:
    """A repository as blame asks of it (its work tree, the workspace's prefix, HEAD, shallowness)
    from one `git rev-parse` and the ref files; anything else (a file at a commit, the shallow
    boundary's time, …) opens it with pygit2 (open_repo) on first use: pygit2's import alone
    costs a fresh process ~100 ms, a working-tree blame from the cache needs none of it."""

    def __init__(self, root: Path, workdir: Path, prefix: str, git_dir: str, common_dir: str):
        self.root, self.workdir, self.prefix = root, workdir, prefix
        self._git_dir, self._common_dir = git_dir, common_dir
        self._repo = None
        self._ignore_asks = 0

    def head(self) -> str | None:
        from zmem.workspace.snapshot import read_head
        return read_head(self._git_dir, self._common_dir) or self.opened().head()  # None: unborn, or odd refs

    def is_shallow(self) -> bool:
        return os.path.exists(os.path.join(self._common_dir, "shallow"))

    def resolve(self, rev: str) -> str | None:
        """A revision (sha, branch, tag, HEAD~3) -> commit id, or None: Repo.resolve from `git rev-parse`."""
        return commit_id(self.root, rev)

    def git_dir(self) -> str:
        return str(Path(self._git_dir).resolve())  # as Repo.git_dir

    def common_dir(self) -> str:
        return str(Path(self._common_dir).resolve())

    def head_is_detached(self) -> bool:
        try:
            head = Path(self._git_dir, "HEAD").read_text().strip()
        except OSError:
            head = ""
        if head.startswith("ref: "):
            return False
        if len(head) in (40, 64):  # a commit id
            return True
        return self.opened().head_is_detached()  # a reftable repository, or anything odd

    def has_commit(self, oid: str) -> bool:
        proc = run_git(["cat-file", "-t", oid], cwd=self.workdir, capture_output=True, text=True)
        return proc.returncode == 0 and proc.stdout.strip() == "commit"

    def changed_paths(self, old: str, new: str) -> set[str]:
        """Workspace paths that differ between two commits' trees (renames are delete + add), as Repo's."""
        proc = run_git(["--no-replace-objects", "diff-tree", "-r", "-z", "--no-renames", "--name-only", old, new],
                       cwd=self.workdir, capture_output=True)
        if proc.returncode:
            return self.opened().changed_paths(old, new)
        names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
        return {name[len(self.prefix):] for name in names if name and name.startswith(self.prefix)}

    def first_parent_chain(self, known: set[str] | None = None, start: str | None = None) -> list[CommitInfo]:
        """Repo.first_parent_chain from one `git log` when a known commit is among the newest
        CHAIN_BATCH on the chain (the history index catching up after a commit or a pull: an append
        with the history index on imported pygit2 for this alone); pygit2's walk otherwise (a first
        build, a long way back, a shallow clone)."""
        if known and not self.is_shallow():
            # as pygit2 walks: no mailmap, no `git replace` (run_git leaves the signatures out)
            proc = run_git(["--no-replace-objects", "log", "--first-parent", "--no-use-mailmap", "-z",
                            "-n", str(CHAIN_BATCH),
                            "--format=%H%x00%P%x00%ct%x00%an%x00%B", start or "HEAD", "--"],
                           cwd=self.workdir, capture_output=True)
            fields = proc.stdout.split(b"\0") if proc.returncode == 0 else []
            out = []
            for i in range(0, len(fields) - 4, 5):
                sha, parents, time, author, message = (f.decode("utf-8", "replace") for f in fields[i:i + 5])
                # pygit2's message starts after any blank lines a verbatim message begins with
                out.append(CommitInfo(sha, int(time), author, message.lstrip("\n").split("\n", 1)[0],
                                      parents.split(" ")[0] if parents else None))
                if sha in known:
                    return out
        return self.opened().first_parent_chain(known, start)

    def tree_changes(self, parent: str | None, sha: str) -> list[tuple[str, str | None]]:
        """Repo.tree_changes from `git diff-tree` (a typechange as pygit2 sees it: the old entry
        deleted, the new one added; symlinks and submodules are no notes); pygit2's for a root commit or a parent
        git cannot read (a shallow clone's boundary)."""
        proc = run_git(["--no-replace-objects", "diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev",
                        parent, sha], cwd=self.workdir, capture_output=True) if parent else None
        if proc is None or proc.returncode:
            return self.opened().tree_changes(parent, sha)
        fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
        out: list[tuple[str, str | None]] = []
        for meta, path in zip(fields[0::2], fields[1::2]):
            _, new_mode, _, blob, status = meta.lstrip(":").split(" ")
            rel = path[len(self.prefix):] if path.startswith(self.prefix) else None
            if rel is None:
                continue
            if status in ("D", "T") or new_mode in NOT_NOTES:
                out.append((rel, None))
            if status != "D" and new_mode not in NOT_NOTES:
                out.append((rel, blob))
        return out

    def read_blob(self, blob: str) -> bytes:
        """Repo.read_blob from `git cat-file` (KeyError when the repository lacks it)."""
        return next(read_blobs(self.workdir, [blob]))[1]

    def _index_entries(self, rel: str) -> list[str]:
        """`git ls-files --stage -t` lines of this exact workspace path (a tag, mode, blob, stage and path each)."""
        path = self.prefix + rel
        proc = run_git(["--literal-pathspecs", "ls-files", "--stage", "-t", "-z", "--", path], cwd=self.workdir,
                       capture_output=True)
        entries = proc.stdout.decode("utf-8", "surrogateescape").split("\0") if proc.returncode == 0 else []
        return [e for e in entries if e.partition("\t")[2] == path]

    def in_index(self, rel: str) -> bool:
        return bool(self._index_entries(rel))

    def in_conflict(self, rel: str) -> bool:
        return any(e.partition("\t")[0].split(" ")[-1] != "0" for e in self._index_entries(rel))

    def skip_worktree(self, rel: str) -> bool:
        return any(e.startswith("S ") for e in self._index_entries(rel))

    def in_head(self, rel: str) -> bool:
        if self.head() is None:
            return False
        proc = run_git(["cat-file", "-e", f"HEAD:{self.prefix + rel}"], cwd=self.workdir, capture_output=True)
        return proc.returncode == 0

    def is_ignored(self, rel: str) -> bool:
        """git check-ignore for the first few paths; pygit2 after that (one import costs less than
        dozens of processes)."""
        self._ignore_asks += 1
        if self._ignore_asks > IGNORE_ASKS:
            return self.opened().is_ignored(rel)
        return is_ignored(self.workdir, self.prefix + rel)

    def opened(self):
        if self._repo is None:
            from zmem.git.repo import open_repo
            self._repo = open_repo(self.root)
        return self._repo

    def __getattr__(self, name: str):  # what is not above: the pygit2 repository's
        return getattr(self.opened(), name)


def open_command_repo(root: Path, *, git_optional: bool = False):
    """A CommandRepo of the repository holding the workspace root, or open_repo's Repo when git
    cannot tell (not a work tree, a bare repository, …: open_repo then says why). git_optional:
    open_repo's Repo too when git is not on PATH (indexing, or an append without a commit, needs no
    git), instead of the error saying so."""
    if git_optional:
        import shutil
        if shutil.which("git") is None:
            from zmem.git.repo import open_repo
            return open_repo(root)
    where = run_git(["rev-parse", "--is-inside-work-tree", "--show-toplevel", "--show-prefix", "--git-dir",
                     "--git-common-dir"], cwd=root, capture_output=True, text=True)
    lines = where.stdout.split("\n")
    if where.returncode or len(lines) < 5 or lines[0] != "true" or not lines[1]:
        from zmem.git.repo import open_repo
        return open_repo(root)
    return CommandRepo(root, Path(lines[1]).resolve(), lines[2], os.path.join(root, lines[3]),
                       os.path.join(root, lines[4]))


def read_blobs(root: Path, blobs: Iterable[str], batch: int = 64) -> Iterator[tuple[str, bytes]]:
    """(blob id, content) of each blob, in order, from `git cat-file --batch` (one process per batch,
    so that only a batch's contents are held at once); KeyError for a blob the repository lacks."""
    blobs = list(blobs)
    for i in range(0, len(blobs), batch):
        part = blobs[i:i + batch]
        proc = run_git(["cat-file", "--batch"], cwd=root, input="".join(b + "\n" for b in part).encode(),
                       capture_output=True)
        data, pos = proc.stdout, 0
        for blob in part:
            end = data.find(b"\n", pos)
            header = data[pos:end].split(b" ")
            if proc.returncode or end < 0 or len(header) != 3 or header[1] != b"blob":
                raise KeyError(blob)
            size = int(header[2])
            yield blob, data[end + 1:end + 1 + size]
            pos = end + 2 + size  # the content is followed by a newline
