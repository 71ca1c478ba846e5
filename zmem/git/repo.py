"""The only module that imports pygit2: repositories, tree diffs, status, blob ids."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pygit2

from zmem.errors import WorkspaceError
from zmem.git.gitcmd import CommitInfo, git_error, run_git


@dataclass
class Repo:
    git: pygit2.Repository
    workdir: Path  # resolved work tree root
    prefix: str  # workspace root relative to workdir, "" or "sub/dir/"

    def to_ws(self, git_path: str) -> str | None:
        """Repository path -> workspace-relative path (None when outside the workspace)."""
        if not self.prefix:
            return git_path
        return git_path[len(self.prefix):] if git_path.startswith(self.prefix) else None

    def head(self) -> str | None:
        """HEAD's commit id, or None in a repository with no commits yet."""
        try:
            return str(self.git.head.target) if not self.git.head_is_unborn else None
        except pygit2.GitError:
            return None

    def has_commit(self, oid: str) -> bool:
        try:
            return isinstance(self.git[oid], pygit2.Commit)
        except (KeyError, ValueError):
            return False

    def changed_paths(self, old: str, new: str | None) -> set[str]:
        """Workspace paths that differ between two commits' trees (renames are delete + add)."""
        old_tree = self.git[old].peel(pygit2.Tree)
        new_tree = self.git[new].peel(pygit2.Tree) if new else None
        diff = old_tree.diff_to_tree(new_tree) if new_tree is not None else old_tree.diff_to_tree(swap=True)
        out = set()
        for delta in diff.deltas:
            for p in (delta.old_file.path, delta.new_file.path):
                rel = self.to_ws(p)
                if rel:
                    out.add(rel)
        return out

    def dirty_paths(self) -> set[str]:
        """Workspace paths with uncommitted changes or untracked (not ignored)."""
        out = set()
        for p, flags in self.git.status(untracked_files="all", ignored=False).items():
            if flags == pygit2.enums.FileStatus.CURRENT or flags & pygit2.enums.FileStatus.IGNORED:
                continue
            rel = self.to_ws(p)
            if rel:
                out.add(rel)
        return out

    def is_ignored(self, rel: str) -> bool:
        return self.git.path_is_ignored(self.prefix + rel)

    def in_conflict(self, rel: str) -> bool:
        """Does the index hold unresolved conflict entries for this workspace path?"""
        conflicts = self.git.index.conflicts
        return conflicts is not None and self.prefix + rel in conflicts

    def in_index(self, rel: str) -> bool:
        """Does git's index (the staging area, as it is on disk now) hold this workspace path?"""
        try:
            self.git.index.read()
            return self.prefix + rel in self.git.index
        except (pygit2.GitError, OSError, ValueError):
            return False

    def in_head(self, rel: str) -> bool:
        """Does HEAD's tree hold this workspace path?"""
        head = self.head()
        return head is not None and self._entry_at(head, rel) is not None

    def matches_head(self, rel: str) -> bool:
        """Is this workspace path exactly as HEAD has it: the same content in the index and the work
        tree (git's filters applied), or absent from all three? Then there is nothing left to commit
        there (someone else committed it)."""
        if self.head() is None:
            return False
        try:
            self.git.index.read()
            return self.git.status_file(self.prefix + rel) == pygit2.enums.FileStatus.CURRENT
        except KeyError:  # in none of HEAD, the index and the work tree
            return not os.path.lexists(self.workdir / (self.prefix + rel))
        except (pygit2.GitError, OSError, ValueError):
            return False

    def skip_worktree(self, rel: str) -> bool:
        """Is this path's index entry marked skip-worktree (a sparse checkout leaves it out of the
        work tree)? Asked of git (libgit2 does not show the flag); without git, whether a sparse
        checkout is on at all."""
        try:
            proc = run_git(["ls-files", "-t", "--", self.prefix + rel], cwd=self.workdir,
                           capture_output=True, text=True)
        except (OSError, WorkspaceError):  # git is not on PATH
            return self.sparse_checkout()
        return proc.returncode == 0 and proc.stdout.startswith("S ")

    def sparse_checkout(self) -> str | None:
        """"cone" or "no-cone" when a sparse checkout is on (core.sparseCheckout), else None."""
        def flag(name: str) -> bool:
            try:
                return self.git.config.get_bool(name)
            except (KeyError, pygit2.GitError, ValueError):
                return False
        if not flag("core.sparseCheckout"):
            return None
        return "cone" if flag("core.sparseCheckoutCone") else "no-cone"

    def head_is_detached(self) -> bool:
        return self.git.head_is_detached

    def git_dir(self) -> str:
        return str(Path(self.git.path).resolve())

    def common_dir(self) -> str:
        """Where refs live (a linked worktree's git dir points to it in its `commondir` file)."""
        git_dir = Path(self.git.path)
        pointer = git_dir / "commondir"
        if pointer.is_file():
            return str((git_dir / pointer.read_text().strip()).resolve())
        return str(git_dir.resolve())

    def is_shallow(self) -> bool:
        return self.git.is_shallow

    def is_ancestor(self, sha: str, of: str) -> bool:
        """Whether commit sha is in the history of commit of (through any parent)."""
        try:
            return sha == of or self.git.descendant_of(self.git[of].id, self.git[sha].id)
        except (KeyError, ValueError, pygit2.GitError):
            return False

    def reachable_from_refs(self, sha: str) -> bool:
        """Whether a commit is still on some branch, tag or remote-tracking branch (not only in
        the reflog): a checkout leaves the commits it moved off reachable, a rewrite does not."""
        try:
            target = self.git[sha].id
        except (KeyError, ValueError):
            return False
        for name in self.git.references:
            if name == "refs/stash":
                continue
            try:
                tip = self.git.references[name].peel(pygit2.Commit).id
            except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
                continue
            if tip == target or self.git.descendant_of(tip, target):
                return True
        return False

    def shallow_since(self) -> int | None:
        """In a shallow clone, the commit time of its oldest fetched commit (the boundary listed in
        `.git/shallow`); None in a full clone."""
        if not self.git.is_shallow:
            return None
        times = []
        try:
            shas = (Path(self.common_dir()) / "shallow").read_text().split()
        except OSError:
            shas = []
        for sha in shas:
            try:
                times.append(self.git[sha].commit_time)
            except (KeyError, ValueError):
                continue
        return min(times) if times else None

    # -- history (history.py)
    def first_parent_chain(self, known: set[str] | None = None, start: str | None = None) -> list[CommitInfo]:
        """Commits from HEAD (or start) back along first parents, newest first, stopping before the
        first one in `known` (that one is returned as the last element, so callers see the fork)."""
        sha = start or self.head()
        out = []
        while sha:
            try:
                c = self.git[sha]
            except (KeyError, ValueError):  # a shallow clone's boundary
                break
            out.append(CommitInfo(str(c.id), c.commit_time, c.author.name, c.message.split("\n", 1)[0],
                                  str(c.parent_ids[0]) if c.parent_ids else None))
            if known and str(c.id) in known:
                break
            sha = str(c.parent_ids[0]) if c.parent_ids else None
        return out

    def tree_changes(self, parent: str | None, sha: str) -> list[tuple[str, str | None]]:
        """(workspace path, blob id or None when deleted) of what changed from parent to sha."""
        new = self.git[sha].peel(pygit2.Tree)
        if parent is None:
            return [(rel, blob) for rel, blob in self.tree_files(sha).items()]
        try:
            old = self.git[parent].peel(pygit2.Tree)
        except (KeyError, ValueError):  # parent missing (shallow): treat as a root commit
            return [(rel, blob) for rel, blob in self.tree_files(sha).items()]
        out = []
        # symlinks and submodules are not notes (tree_files skips them too): a submodule's commit is
        # no blob of this repository
        not_notes = (pygit2.enums.FileMode.LINK, pygit2.enums.FileMode.COMMIT)
        for d in old.diff_to_tree(new).deltas:
            deleted = d.status == pygit2.enums.DeltaStatus.DELETED
            # a note that became a symlink is gone from the notes (its path is ended)
            if d.old_file.path != d.new_file.path or deleted or d.new_file.mode in not_notes:
                rel = self.to_ws(d.old_file.path)
                if rel:
                    out.append((rel, None))
            if not deleted and d.new_file.mode not in not_notes:
                rel = self.to_ws(d.new_file.path)
                if rel:
                    out.append((rel, str(d.new_file.id)))
        return out

    def tree_files(self, sha: str) -> dict[str, str]:
        """workspace path -> blob id of every file in a commit's tree."""
        out = {}
        tree = self.git[sha].peel(pygit2.Tree)
        stack = [(tree, "")]
        while stack:
            t, prefix = stack.pop()
            for e in t:
                if e.type_str == "tree":
                    stack.append((self.git[e.id], f"{prefix}{e.name}/"))
                elif e.type_str == "blob" and e.filemode != pygit2.enums.FileMode.LINK:
                    rel = self.to_ws(prefix + e.name)
                    if rel:
                        out[rel] = str(e.id)
        return out

    def read_blob(self, blob: str) -> bytes:
        return self.git[blob].data

    def resolve(self, rev: str) -> str | None:
        """A revision (sha, branch, tag, HEAD~3) -> commit id, or None."""
        try:
            return str(self.git.revparse_single(rev).peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return None

    def commit_info(self, sha: str) -> CommitInfo:
        c = self.git[sha]
        return CommitInfo(str(c.id), c.commit_time, c.author.name, c.message.split("\n", 1)[0],
                          str(c.parent_ids[0]) if c.parent_ids else None)

    def _entry_at(self, sha: str, rel: str):
        try:
            return self.git[sha].peel(pygit2.Tree)[self.prefix + rel]
        except (KeyError, ValueError):
            return None

    def file_at(self, sha: str, rel: str) -> bytes | None:
        """A note's bytes at a commit; None when it is not a regular file there (absent, a
        directory, or a symlink: symlinks are never notes, in history as in the work tree)."""
        entry = self._entry_at(sha, rel)
        if entry is None or entry.type_str != "blob" or entry.filemode == pygit2.enums.FileMode.LINK:
            return None
        return self.git[entry.id].data

    def is_symlink_at(self, sha: str, rel: str) -> bool:
        """Is this workspace path a symlink in the commit's tree? (why file_at returned None)"""
        entry = self._entry_at(sha, rel)
        return entry is not None and entry.filemode == pygit2.enums.FileMode.LINK


def open_repo(root: Path) -> Repo:
    """The repository holding the workspace root. Bare repositories are refused."""
    found = pygit2.discover_repository(str(root))
    if found is None:
        raise WorkspaceError(f"not a git repository: {root}",
                             hint=f"run `zmem init {_quote(root)}` to make it a workspace (it runs `git init`)")
    git = pygit2.Repository(found)
    if git.is_bare or git.workdir is None:
        raise WorkspaceError(f"bare repository: {root}",
                             hint="zmem needs a work tree; clone it first: git clone REPO DIR && zmem -C DIR index")
    workdir = Path(git.workdir).resolve()
    try:
        rel = root.resolve().relative_to(workdir).as_posix()
    except ValueError:
        raise WorkspaceError(f"workspace {root} is not inside the work tree {workdir}",
                             hint="pass the repository's work tree with -C")
    return Repo(git=git, workdir=workdir, prefix="" if rel == "." else rel + "/")


def init_repo(root: Path) -> bool:
    """`git init` unless root is already inside a work tree. Returns True if it created one."""
    found = pygit2.discover_repository(str(root))
    if found is not None:
        git = pygit2.Repository(found)
        if git.is_bare:
            raise WorkspaceError(f"bare repository: {root}", hint="clone it into a work tree first")
        return False
    try:
        pygit2.init_repository(str(root), initial_head="main")
    except pygit2.GitError as e:  # e.g. no permission to create .git
        raise WorkspaceError(f"git init failed in {root}: {e}", hint="check that the directory is writable") from e
    return True


def _quote(p: Path) -> str:
    s = str(p)
    return f"'{s}'" if any(c in s for c in " \t'\"$") else s


WORKSPACE_KEY = "zmem.workspace"  # multi-valued: workspaces in subdirectories of a repository


def register_workspace(repo: Repo) -> None:
    """Remember a workspace that is a subdirectory of its repository, so the hooks (which run at
    the repository's top) can find it."""
    if not repo.prefix:
        return
    rel = repo.prefix.rstrip("/")
    if rel not in registered_workspaces(repo):
        try:
            repo.git.config.set_multivar(WORKSPACE_KEY, "^$", rel)
        except (pygit2.GitError, OSError) as e:
            raise WorkspaceError(f"cannot record the workspace {rel} in the repository's git config: {e}",
                                 hint=f"git config --add {WORKSPACE_KEY} {rel}") from e


def registered_workspaces(repo: Repo) -> list[str]:
    """The registered subdirectory workspaces (repository-relative). pygit2's get_multivar yields
    str in the versions zmem runs with, ConfigEntry objects (`.value`) in some others: take both."""
    try:
        values = list(repo.git.config.get_multivar(WORKSPACE_KEY))
    except (KeyError, pygit2.GitError):
        return []
    out = []
    for v in values:
        v = v if isinstance(v, str) else getattr(v, "value", None)
        if isinstance(v, str) and v.strip() and v not in out:
            out.append(v)
    return out


@dataclass
class BlameLine:
    commit: str      # gitcmd.ZERO_COMMIT for a line not committed yet
    author: str
    time: int        # author time, Unix seconds
    summary: str


def blame_file(workdir: Path, git_path: str, rev: str | None = None) -> list[BlameLine]:
    """git blame -M of the working-tree file (or of the file at commit rev), one entry per line.
    git's own blame: several times faster than libgit2's on deep history (DESIGN.md §5)."""
    # -M: a line moved within the file keeps the commit that wrote it (-C, across files, costs
    # a scan of every file the commit touched; not worth it here)
    proc = run_git(["blame", "--porcelain", "-M", *([rev] if rev else []), "--", git_path], cwd=workdir,
                   capture_output=True)
    if proc.returncode:
        # untracked, or no commits yet: nothing to blame. A file the commit holds is blamed unless git
        # itself cannot (blame.ignoreRevsFile naming a missing file): its lines are not "not committed"
        if run_git(["cat-file", "-e", f"{rev or 'HEAD'}:{git_path}"], cwd=workdir, capture_output=True).returncode:
            return []
        err = proc.stderr.decode("utf-8", "replace").strip()
        why = git_error(err) if err else f"git exited {proc.returncode}"
        raise WorkspaceError(f"git blame failed on {git_path}: {why}",
                             hint="run `git blame` on the file to see why; its settings are in "
                                  "`git config --show-origin --get-regexp '^blame\\.'`")
    commits: dict[str, dict[str, str]] = {}
    out: list[BlameLine] = []
    current: dict[str, str] = {}
    sha = ""
    for raw in proc.stdout.split(b"\n"):
        if raw.startswith(b"\t"):
            info = commits.setdefault(sha, current)
            out.append(BlameLine(sha, info.get("author", ""), int(info.get("author-time", "0") or 0),
                                 info.get("summary", "")))
            continue
        parts = raw.split(b" ", 1)
        head = parts[0].decode("ascii", "replace")
        if len(head) == 40 and all(c in "0123456789abcdef" for c in head):
            sha = head
            current = commits.get(sha, {})
            if sha not in commits:
                commits[sha] = current
        elif len(parts) == 2:
            current[head] = parts[1].decode("utf-8", "replace")
    return out


def last_commit_with_trailer(root: Path, trailer: str) -> str | None:
    """The newest commit on HEAD whose message has a `trailer:` line (None if none)."""
    proc = run_git(["log", "-1", "--format=%H", f"--grep=^{trailer}:"], cwd=root,
                   capture_output=True, text=True)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def commits_since(root: Path, *, since: int | None = None, after: str | None = None) -> tuple[set[str], set[str]]:
    """(commit ids, workspace paths they touched) of the commits on HEAD committed after the Unix
    time `since`, or not reachable from the commit `after` (whatever their dates say)."""
    repo = open_repo(root)
    if repo.head() is None:
        return set(), set()
    args = ["log", "--format=%x00%H", "--name-only", "--no-renames"]
    stdin = None
    if since is not None:
        # not git's --since: its walk stops at the first few older commits, and a commit dated before a
        # later one (a rebase, a clock set back, a backdated commit) hid the commits behind it
        dated = run_git(["log", "--format=%H %ct", *([f"{after}..HEAD"] if after else [])], cwd=repo.workdir,
                        capture_output=True, text=True)
        wanted = [sha for sha, _, ct in (line.partition(" ") for line in dated.stdout.splitlines())
                  if ct.strip().isdigit() and int(ct) >= since] if dated.returncode == 0 else []
        if not wanted:
            return set(), set()
        args += ["--no-walk=unsorted", "--stdin"]
        stdin = "\n".join(wanted) + "\n"
    elif after:
        args.append(f"{after}..HEAD")
    proc = run_git(args, cwd=repo.workdir, capture_output=True, text=True, input=stdin)
    commits, paths = set(), set()
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        if line.startswith("\0"):
            commits.add(line[1:])
        elif line and (rel := repo.to_ws(line)):
            paths.add(rel)
    return commits, paths


def file_log(root: Path, rel: str) -> list[dict]:
    """Commits on HEAD that touched a workspace file, newest first, following renames:
    [{commit, time, author, summary, path, added, removed}]."""
    repo = open_repo(root)
    proc = run_git(["log", "--follow", "--format=%x00%H%x09%ct%x09%an%x09%s", "--numstat", "--",
                    repo.prefix + rel], cwd=repo.workdir, capture_output=True, text=True)
    out: list[dict] = []
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        if line.startswith("\0"):
            sha, when, author, summary = (line[1:].split("\t", 3) + ["", "", "", ""])[:4]
            out.append({"commit": sha, "time": int(when or 0), "author": author, "summary": summary, "path": rel,
                        "added": 0, "removed": 0})
        elif line.strip() and out:
            parts = line.split("\t")
            if len(parts) >= 3:
                out[-1]["added"] += int(parts[0]) if parts[0].isdigit() else 0
                out[-1]["removed"] += int(parts[1]) if parts[1].isdigit() else 0
                name = parts[-1]
                if "=>" in name:  # a rename: "old => new" or "dir/{a => b}.md"
                    name = re.sub(r"\{[^{}]*? => ([^{}]*)\}", r"\1", name)
                    name = name.split(" => ")[-1]
                out[-1]["path"] = repo.to_ws(name.replace("//", "/")) or rel
    return out
