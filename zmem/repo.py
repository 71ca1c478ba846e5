"""The only module that imports pygit2: repositories, tree diffs, status, blob ids."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pygit2

from zmem.errors import WorkspaceError


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
    pygit2.init_repository(str(root), initial_head="main")
    return True


def _quote(p: Path) -> str:
    s = str(p)
    return f"'{s}'" if any(c in s for c in " \t'\"$") else s


def git_env(repo: Repo) -> dict[str, str]:
    """Environment for `git commit`: fall back to a zmem identity only where git has none."""
    env = dict(os.environ)
    for key, var, default in (("user.name", "NAME", "zmem"), ("user.email", "EMAIL", "zmem@localhost")):
        if key in repo.git.config:
            continue
        for who in ("AUTHOR", "COMMITTER"):
            env.setdefault(f"GIT_{who}_{var}", default)
    return env


WORKSPACE_KEY = "zmem.workspace"  # multi-valued: workspaces in subdirectories of a repository


def register_workspace(repo: Repo) -> None:
    """Remember a workspace that is a subdirectory of its repository, so the hooks (which run at
    the repository's top) can find it."""
    if not repo.prefix:
        return
    rel = repo.prefix.rstrip("/")
    if rel not in registered_workspaces(repo):
        repo.git.config.set_multivar(WORKSPACE_KEY, "^$", rel)


def registered_workspaces(repo: Repo) -> list[str]:
    try:
        return [e.value for e in repo.git.config.get_multivar(WORKSPACE_KEY)]
    except (KeyError, pygit2.GitError):
        return []
