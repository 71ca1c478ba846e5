"""Running the git command (pygit2 reads repositories; commits, blame and hooks need git itself).
No pygit2 here: hooks and init use it without paying pygit2's import."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from zmem.errors import WorkspaceError


ZERO_COMMIT = "0" * 40  # git blame's commit for a line not committed yet
# Where git finds a repository, inherited from another one's hook (`git commit` there running `zmem -C
# ~/notes append`): zmem works on the repository holding its workspace, as pygit2 finds it (which reads none).
REPOSITORY_ENV = frozenset(("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                            "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX"))
GIT_MISSING_HINT = "install git, or add the directory that holds it to PATH"


@dataclass
class CommitInfo:
    """A commit as history reads it (Repo's and CommandRepo's first_parent_chain, commit_info)."""
    sha: str
    time: int
    author: str
    summary: str
    parent: str | None


def git_missing(hint: str = GIT_MISSING_HINT) -> WorkspaceError:
    """The error for a git that cannot be run: zmem needs it for commits, blame and history."""
    return WorkspaceError("git is not on PATH (zmem runs git for commits, blame and history)", hint=hint)


def run_git(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """`git ARGS` (subprocess.run's keyword arguments). Every git zmem runs goes through here, so
    that a git missing from PATH is one clear error (exit 1 with a hint) for every command. Paths
    in git's output are as named (core.quotePath off), not `"Jo\\303\\243o.md"`; `git log` and
    `git show` print what their format asks in UTF-8, whatever the user's config: no signature
    check before it (log.showSignature put one into a commit id: reflect's last run, the history
    index's new commits, sync's rewritten message), no other log encoding (i18n.logOutputEncoding)."""
    env = os.environ if kwargs.get("env") is None else kwargs["env"]
    if any(var in env for var in REPOSITORY_ENV):
        kwargs["env"] = {k: v for k, v in env.items() if k not in REPOSITORY_ENV}
    try:
        return subprocess.run(["git", "-c", "core.quotePath=false", "-c", "log.showSignature=false",
                               "-c", "i18n.logOutputEncoding=UTF-8", *args], **kwargs)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
        import shutil
        if e.filename in (None, "git") or shutil.which("git") is None:
            raise git_missing() from None
        raise


def is_ignored(cwd, rel: str) -> bool:
    """Do git's ignore rules cover rel (relative to cwd)? The rules alone, tracked or not, as the
    indexer asks pygit2 (`path_is_ignored`); an answer without pygit2's import, for `get`."""
    proc = run_git(["check-ignore", "-q", "--no-index", "--", rel], cwd=cwd, capture_output=True)
    return proc.returncode == 0


def git_error(err: str) -> str:
    """What git said went wrong, in one line: its `fatal:`/`error:` line, not the last line of
    advice ("remove the file manually to continue" is about index.lock, not the note). Without
    one, its last paragraph but the `hint:` advice lines ("Disable this message with …" names a
    setting, not the problem), which is the last line, or the whole paragraph joined when it
    introduces a list ("… will not be updated in the index:" and the paths)."""
    lines = [line.strip() for line in err.splitlines()]
    said = [line for line in lines if line.startswith(("fatal:", "error:"))]
    if said and "index.lock" in said[0]:
        return f"{said[0]} (another git process is running, or one crashed and left the lock file)"
    if said:
        return said[0]
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line and not line.startswith("hint:"):
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    last = next((p for p in reversed(paragraphs) if p), None)
    if last is None:  # nothing but advice
        return next(line for line in reversed(lines) if line)
    return " ".join(last) if any(line.endswith(":") for line in last[:-1]) else last[-1]


def commit_id(root, rev: str) -> str | None:
    """A revision (sha, branch, tag, HEAD~3, FETCH_HEAD) -> its commit id, or None when it names none."""
    if rev.startswith("-"):  # no revision does; git would read it as an option (--end-of-options: git 2.30)
        return None
    proc = run_git(["rev-parse", "-q", "--verify", rev + "^{commit}"], cwd=root, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None
