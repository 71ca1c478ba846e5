"""Running the git command (pygit2 reads repositories; commits, blame and hooks need git itself).
No pygit2 here: hooks and init use it without paying pygit2's import."""
from __future__ import annotations

import subprocess

from zmem.errors import WorkspaceError


GIT_MISSING_HINT = "install git, or add the directory that holds it to PATH"


def git_missing(hint: str = GIT_MISSING_HINT) -> WorkspaceError:
    """The error for a git that cannot be run: zmem needs it for commits, blame and history."""
    return WorkspaceError("git is not on PATH (zmem runs git for commits, blame and history)", hint=hint)


def run_git(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """`git ARGS` (subprocess.run's keyword arguments). Every git zmem runs goes through here, so
    that a git missing from PATH is one clear error (exit 1 with a hint) for every command. Paths
    in git's output are as named (core.quotePath off), not `"Jo\\303\\243o.md"`."""
    try:
        return subprocess.run(["git", "-c", "core.quotePath=false", *args], **kwargs)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
        import shutil
        if e.filename in (None, "git") or shutil.which("git") is None:
            raise git_missing() from None
        raise
