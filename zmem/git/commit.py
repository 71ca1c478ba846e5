"""Committing workspace paths with the git command, without pygit2: `zmem append` is a fresh
process per note, and pygit2's import alone costs it more CPU than the few git processes that
answer what a commit needs to know (gitstatus.CommandRepo)."""
from __future__ import annotations

import os
from pathlib import Path

from zmem.git.gitcmd import git_error, run_git
from zmem.git.gitstatus import open_command_repo
from zmem.workspace.snapshot import stat_signature

# commit_paths' second value when it made no commit because HEAD already held the paths as they are
ALREADY_COMMITTED = "already committed"


def git_env(repo) -> dict[str, str]:
    """Environment for `git commit` in repo's work tree (identity_env of the process's environment)."""
    return identity_env(repo.workdir)


def identity_env(workdir, env: dict[str, str] | None = None) -> dict[str, str]:
    """env (default: the process's) for a git command that makes a commit: fall back to a zmem identity
    only where git has none. Asked of git itself (`git var`), which honours GIT_CONFIG_GLOBAL and the
    like as the commit will."""
    env = dict(os.environ if env is None else env)
    for who in ("AUTHOR", "COMMITTER"):
        if run_git(["var", f"GIT_{who}_IDENT"], cwd=workdir, env=env,
                   capture_output=True).returncode != 0:
            env.setdefault(f"GIT_{who}_NAME", "zmem")
            env.setdefault(f"GIT_{who}_EMAIL", "zmem@localhost")
    return env


def commit_paths(root: Path, paths: list[str], message: str, *, retry_seconds: float = 15.0,
                 repo=None) -> tuple[str | None, str | None]:
    """Commit exactly these workspace paths (other staged work stays staged). Returns
    (commit id, None), (HEAD, ALREADY_COMMITTED) when HEAD already holds every path exactly as it
    is (someone else committed it meanwhile), or (None, why not). Retries while git's index is
    locked by another git, and (a few times) when another commit moved HEAD while git was at work.
    repo: the workspace's repository (open_command_repo's) if the caller has it already."""
    import time
    repo = repo or open_command_repo(root)
    env = git_env(repo)
    deadline = time.monotonic() + retry_seconds
    raced = 0
    while True:
        head, files = repo.head(), _stats(root, paths)
        # `git add` fails on a path gone from both the work tree and the index (a `git rm`, or a
        # `git mv` away, already staged), and `git commit -- PATH` on one git knows nowhere: each
        # gets only the paths it can take, so a staged deletion is still committed
        addable = [p for p in paths if os.path.lexists(Path(root) / p) or repo.in_index(p)]
        add = run_git(["add", "-A", "--", *addable], cwd=root, env=env, capture_output=True,
                      text=True) if addable else None
        if add is not None and add.returncode:
            proc = add
        else:
            # the index as `git add` left it: every path it took that exists is in it (asking is a
            # git process); a deleted one may be known to HEAD alone
            known = paths if addable == paths and all(os.path.lexists(Path(root) / p) for p in paths) \
                else _known_to_git(root, paths)
            if not known:
                return None, "nothing to commit: none of these paths exists or is known to git"
            # the message on stdin, not in argv: a long one (a 4 MB note) would exceed the kernel's limit
            proc = run_git(
                ["commit", "--quiet", "-F", "-", "--", *known], cwd=root, env=env, input=message,
                capture_output=True, text=True, encoding="utf-8", errors="surrogateescape")
        if proc.returncode == 0:
            return repo.head(), None
        if all(repo.matches_head(p) for p in paths):
            # another committer (a watcher, a concurrent append, a hook) got there first: HEAD
            # already holds exactly these contents, so git had nothing to commit
            return repo.head(), ALREADY_COMMITTED
        err = (proc.stderr or proc.stdout).strip()
        if "index.lock" in err and time.monotonic() < deadline:
            time.sleep(0.1)
            continue
        if (repo.head() != head or _stats(root, paths) != files) and raced < 3:
            # HEAD moved or a file changed while git was at work (it found nothing to commit in a
            # state that is gone): try again with the state as it is now
            raced += 1
            continue
        return None, git_error(err) if err else _git_exit(proc.returncode)


def _known_to_git(root: Path, paths: list[str]) -> list[str]:
    """The paths (relative to root) that git's index or HEAD holds, in order: those `git commit --
    PATH` accepts. One `git ls-files`, then one `git ls-tree` for the rest; pathspecs taken literally."""
    def listed(args: list[str], wanted: list[str]) -> set[str]:
        proc = run_git(["--literal-pathspecs", *args, "-z", "--", *wanted], cwd=root, capture_output=True)
        return set(proc.stdout.decode("utf-8", "surrogateescape").split("\0")) if proc.returncode == 0 else set()
    found = listed(["ls-files", "--cached"], paths)
    rest = [p for p in paths if p not in found]
    if rest:
        found |= listed(["ls-tree", "--name-only", "HEAD"], rest)
    return [p for p in paths if p in found]


def _git_exit(code: int) -> str:
    """A git that said nothing: how it ended (killed by a signal when code is negative)."""
    if code >= 0:
        return f"git exited {code}"
    import signal
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    why = " (a file size limit was reached: `ulimit -f`)" if name == "SIGXFSZ" else ""
    return f"git was killed by {name}{why}"


def _stats(root: Path, paths: list[str]) -> list[tuple | None]:
    return [stat_signature(Path(root) / p) for p in paths]
