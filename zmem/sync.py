"""`zmem sync`: one memory shared through a git remote. Commit the pending memory files, fetch,
merge the upstream branch, push (again, after another fetch and merge, when another clone pushed
meanwhile), catch up the index, and say what came in and what went out.

Merge, not rebase: a rebase would rewrite commits this clone already indexed, blamed and cited
(`path@sha#L…`), and every clone would see other ids for the same notes. With a merge every commit
keeps its id. A sync's merge lists the upstream commit first (_upstream_first), so the first-parent
history of every clone is the hub's. Conflicts only in what reflect wrote are settled and rewritten
(derived_merge); anything else a person must decide (a real conflict, a rewritten hub) stops the
sync before anything is merged or pushed. The git CLI does the network work, so any remote git
understands and git's own credentials (SSH agent, credential helpers) work; zmem stores no token."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from zmem.errors import ZmemError
from zmem.git.gitcmd import commit_id, git_error, run_git
from zmem.workspace.core import Workspace

PUSH_TRIES = 10  # a push rejected because another clone pushed first: fetch, merge and push again


@dataclass
class Upstream:
    remote: str
    branch: str  # on the remote, without refs/heads/
    local: str   # the local branch

    @property
    def tracking(self) -> str:
        return f"refs/remotes/{self.remote}/{self.branch}"

    @property
    def name(self) -> str:
        return f"{self.remote}/{self.branch}"


@dataclass
class SyncResult:
    upstream: Upstream
    head: str | None = None
    committed: str | None = None
    committed_files: list[str] = field(default_factory=list)
    merge: str = "none"  # none | fast-forward | merge
    pushed: bool = False
    push_attempts: int = 0
    incoming: dict = field(default_factory=dict)
    outgoing: dict = field(default_factory=dict)
    regenerated: list[str] = field(default_factory=list)  # reflect-written files whose conflict reflect settled
    reflect_commit: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"remote": self.upstream.remote, "branch": self.upstream.branch, "head": self.head,
                "committed": self.committed, "committed_files": self.committed_files, "merge": self.merge,
                "pushed": self.pushed, "push_attempts": self.push_attempts, "incoming": self.incoming,
                "outgoing": self.outgoing, "regenerated": self.regenerated,
                "reflect_commit": self.reflect_commit, "warnings": self.warnings}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    if not sys.stdin.isatty():  # an agent: a credential prompt nobody answers would hang the sync
        env.setdefault("GIT_TERMINAL_PROMPT", "0")
    return env


def _git(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = env or _env()
    if args[0] in ("merge", "commit", "commit-tree"):  # git refuses these without an identity: zmem's, as append's
        from zmem.git.commit import identity_env
        env = identity_env(root, env)
    return run_git(list(args), cwd=root, env=env, capture_output=True, text=True,
                   encoding="utf-8", errors="replace")


def _out(root: Path, *args: str) -> str | None:
    proc = _git(root, *args)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _said(proc: subprocess.CompletedProcess) -> str:
    err = (proc.stderr or proc.stdout or "").strip()
    return git_error(err) if err else f"git exited {proc.returncode}"


def upstream(root: Path, remote: str | None = None) -> Upstream:
    """Which remote branch to sync with: REMOTE's branch of the same name, else the current
    branch's upstream (branch.<name>.remote/merge). A ZmemError with a hint when there is none."""
    local = _out(root, "symbolic-ref", "--short", "-q", "HEAD")
    if not local:
        raise ZmemError("HEAD is detached: zmem sync merges into and pushes a branch",
                        hint="switch to your branch first: git switch main")
    remotes = (_out(root, "remote") or "").split()
    if not remotes:
        raise ZmemError("this repository has no git remote to sync with",
                        hint="add one (any git server, or a bare repository over SSH): git remote add origin URL, "
                             "then: zmem sync")
    if remote is not None and remote not in remotes:
        raise ZmemError(f"no git remote named {remote!r} (remotes: {', '.join(remotes)})",
                        hint="git remote -v lists them; git remote add NAME URL adds one")
    configured = _out(root, "config", f"branch.{local}.remote")
    merge = _out(root, "config", f"branch.{local}.merge") or ""
    if remote is None:
        if not configured or configured not in remotes:
            raise ZmemError(f"branch {local} has no upstream branch to sync with",
                            hint=f"set one with its first push: git push --set-upstream {remotes[0]} {local}, "
                                 f"or name the remote: zmem sync {remotes[0]}")
        remote = configured
    branch = merge.removeprefix("refs/heads/") if configured == remote and merge.startswith("refs/heads/") else local
    return Upstream(remote, branch, local)


def _unreachable(up: Upstream, proc: subprocess.CompletedProcess, ahead: int | None) -> ZmemError:
    kept = (f"; your {ahead} commit{'s stay' if ahead != 1 else ' stays'} committed here and "
            f"go{'' if ahead != 1 else 'es'} out with the next sync"
            if ahead else "; nothing was lost: your notes stay committed here")
    # `zmem sync REMOTE` again: a bare `zmem sync` goes to the upstream, which may be another remote
    return ZmemError(f"cannot reach the remote {up.remote}: {_said(proc).rstrip('.')}{kept}",
                     hint=f"check the URL (git remote -v), the network and your git credentials "
                          f"(git fetch {up.remote} should work), then: zmem sync {up.remote}")


def fetch(root: Path, up: Upstream) -> str | None:
    """Fetch the upstream branch; its commit, or None when the remote has no such branch yet.
    The remote-tracking ref only moves forward (no `+` in the refspec): when the remote's branch
    was rewritten, the fetch stops here (_rewritten), and keeps stopping until a person decides."""
    # not --quiet: that also hides the "[rejected] (non-fast-forward)" that tells a rewrite
    # --refmap= : the remote's configured `+refs/heads/*` refspec must not force the ref either
    proc = _git(root, "fetch", "--no-tags", "--refmap=", up.remote, f"refs/heads/{up.branch}:{up.tracking}")
    if proc.returncode:
        said = proc.stderr or ""
        if "couldn't find remote ref" in said:
            return None  # an empty hub, or a branch nobody pushed yet: the first push creates it
        if "non-fast-forward" in said or "[rejected]" in said:
            raise _rewritten(root, up)
        fetched = commit_id(root, up.tracking)  # None: never fetched (an extra remote), so how far ahead is unknown
        raise _unreachable(up, proc, _count(root, "HEAD", fetched) if fetched else None)
    return commit_id(root, up.tracking)


def _rewritten(root: Path, up: Upstream) -> ZmemError:
    """The remote's branch no longer contains what this clone fetched from it before (a force push).
    Merging it would quietly put the removed commits back; following it would drop them here."""
    old = commit_id(root, up.tracking) or ""
    new = commit_id(root, "FETCH_HEAD") if _git(root, "fetch", "--quiet", "--no-tags", "--refmap=", up.remote,
                                                f"refs/heads/{up.branch}").returncode == 0 else None
    gone = _count(root, old, new) if new else 0
    force = f"git fetch --force {up.remote} {up.branch}:{up.tracking}"
    return ZmemError(f"{up.name} was rewritten (force-pushed): {gone or 'some'} commit{'s' if gone != 1 else ''} this "
                     f"clone fetched from it before {'are' if gone != 1 else 'is'} no longer in it. Nothing was "
                     "merged or pushed; your notes stay committed here",
                     hint=f"if the rewrite was meant, follow it: {force} && git rebase --onto {up.name} {old[:12]} "
                          f"(keeps the commits only this clone has), then: zmem sync. To undo it instead and put "
                          f"those commits back on {up.name}: {force} && git merge {up.name}, then: zmem sync")


def _count(root: Path, tip: str, base: str | None, *extra: str) -> int:
    out = _out(root, "rev-list", "--count", *extra, tip, *([f"^{base}"] if base else []))
    return int(out) if out and out.isdigit() else 0


def status(ws: Workspace, remote: str | None = None, *, do_fetch: bool = True) -> dict:
    """Ahead/behind of the upstream branch (after a fetch unless do_fetch is False); changes nothing
    but the remote-tracking ref a fetch updates."""
    from zmem.git.repo import open_repo
    up = upstream(ws.root, remote)
    theirs = fetch(ws.root, up) if do_fetch else commit_id(ws.root, up.tracking)
    head = commit_id(ws.root, "HEAD")
    pending = sorted(p for p in open_repo(ws.root).dirty_paths() if ws.is_memory_path(p))
    return {"remote": up.remote, "branch": up.branch, "upstream": up.name, "fetched": do_fetch,
            "remote_head": theirs, "head": head,
            "ahead": _count(ws.root, "HEAD", theirs) if head else 0,
            "behind": _count(ws.root, theirs, head) if theirs else 0,
            "uncommitted": pending}


def sync(ws: Workspace, remote: str | None = None, *, tries: int = PUSH_TRIES) -> SyncResult:
    from zmem.git.repo import open_repo
    from zmem.index.watch import merge_in_progress
    root = ws.root
    repo = open_repo(root)
    marker = merge_in_progress(Path(repo.git_dir()))
    if marker == "MERGE_HEAD" and _finish_interrupted_merge(root, Path(repo.git_dir())):
        marker = merge_in_progress(Path(repo.git_dir()))
    if marker:
        raise ZmemError(f"a merge or rebase is in progress ({marker}): zmem sync does not start another",
                        hint="finish it (git status says how) or abort it (git merge --abort), then: zmem sync")
    up = upstream(root, remote)
    result = SyncResult(up)
    _commit_pending(ws, repo, result)
    start = commit_id(root, "HEAD")
    theirs = None
    for attempt in range(1, tries + 1):
        theirs = fetch(root, up)
        _integrate(ws, up, theirs, result)
        if theirs is not None and _count(root, "HEAD", theirs) == 0:
            break  # nothing of ours the remote lacks
        if commit_id(root, "HEAD") is None:
            break  # no commits at all: nothing to push
        result.push_attempts = attempt
        proc = _git(root, "push", "--porcelain", up.remote, f"HEAD:refs/heads/{up.branch}")
        if proc.returncode == 0:
            result.pushed = True
            _track(root, up)
            if theirs is None:  # a branch this push created: is it a second memory beside the remote's?
                result.warnings += _unrelated_branches(root, up)
            break
        refused = _refusal(proc.stdout)
        if refused is None:
            raise _unreachable(up, proc, _count(root, "HEAD", theirs))
        racing, reason = refused
        if not racing:  # a hook, a protected branch, permissions: retrying will not help
            raise ZmemError(f"{up.name} refused the push: {reason}; your notes stay committed here",
                            hint="the remote's rules decide (a protected branch, a server hook, permissions): ask "
                                 "its owner, or sync with another remote: zmem sync REMOTE")
        if attempt == tries:
            raise ZmemError(f"the push to {up.name} was rejected {tries} times: other clones keep pushing first",
                            hint="nothing was lost (your notes are committed here); run zmem sync again")
        time.sleep(min(4.0, 0.1 * 2 ** attempt) * random.uniform(0.5, 1.5))  # jittered: clones do not collide again
    head = commit_id(root, "HEAD")
    result.head = head
    result.incoming = _changes(ws, start, head) if start and head and start != head else _empty()
    result.outgoing = _changes(ws, theirs, head) if result.pushed else _empty()
    from zmem.index.catchup import catch_up
    result.warnings += catch_up(ws).warnings
    return result


def _unrelated_branches(root: Path, up: Upstream) -> list[str]:
    """A warning when the branch a push just created shares no history with any other branch this
    clone knows of that remote: an empty clone of a hub whose HEAD named a missing branch, made a
    workspace of its own, starts a second memory that no other clone ever merges, silently."""
    listed = _out(root, "for-each-ref", "--format=%(refname:short)", f"refs/remotes/{up.remote}/") or ""
    others = [r for r in listed.split() if r not in (f"{up.remote}/HEAD", f"{up.remote}/{up.branch}", up.remote)]
    if not others or any(_git(root, "merge-base", "HEAD", r).returncode == 0 for r in others):
        return []
    return [f"{up.remote} also has {', '.join(others)}, sharing no history with {up.branch}: this push started a "
            f"second memory beside it, which other clones never see; to join them: git merge "
            f"--allow-unrelated-histories {others[0]}, then zmem sync"]


def _finish_interrupted_merge(root: Path, git_dir: Path) -> bool:
    """A merge a killed `zmem sync` left behind (its own message in MERGE_MSG) is finished: forgotten
    when its commit was made already, committed when nothing conflicts, else undone (the next merge
    redoes it; both sides' commits are intact). True when it was one; a person's merge is left alone."""
    try:
        message = (git_dir / "MERGE_MSG").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if not message.startswith("zmem sync: merge "):
        return False
    if _git(root, "merge-base", "--is-ancestor", "MERGE_HEAD", "HEAD").returncode == 0:
        _git(root, "merge", "--quit")  # killed after the merge commit, before git cleaned up
    elif _out(root, "diff", "--name-only", "--diff-filter=U") == "":
        theirs = commit_id(root, "MERGE_HEAD")
        if _git(root, "commit", "--no-edit").returncode == 0 and theirs:
            _upstream_first(root, theirs)
    else:
        _git(root, "merge", "--abort")
    return True


def _track(root: Path, up: Upstream) -> None:
    """After a first `zmem sync REMOTE` from a branch with no upstream, make it the upstream (as
    `git push --set-upstream` would), so that a plain `zmem sync` and `git pull` find it."""
    if _out(root, "config", f"branch.{up.local}.remote") is None:
        _git(root, "config", f"branch.{up.local}.remote", up.remote)
        _git(root, "config", f"branch.{up.local}.merge", f"refs/heads/{up.branch}")


def _refusal(porcelain: str) -> tuple[bool, str] | None:
    """(another clone got there first?, git's reason) when the remote refused the update, else None.
    Besides a non-fast-forward, two pushes at the same moment lose the ref lock on the hub."""
    for line in porcelain.splitlines():
        if line.startswith("!\t"):
            reason = line.rsplit("\t", 1)[-1]
            racing = reason.startswith("[rejected]") or any(
                s in reason for s in ("cannot lock ref", "failed to update ref", "incorrect old value"))
            return racing, reason
    return None


def _commit_pending(ws: Workspace, repo, result: SyncResult) -> None:
    from zmem.git.commit import ALREADY_COMMITTED, commit_paths
    from zmem.git.scaffold import LAYOUT
    layout = {*LAYOUT, ".gitattributes", ".gitignore"}  # what `zmem init` writes: every clone needs it too
    paths = sorted(p for p in repo.dirty_paths() if ws.is_memory_path(p) or p in layout)
    if not paths:
        return
    subject = f"zmem sync: {paths[0]}" if len(paths) == 1 else f"zmem sync: {len(paths)} memory files"
    sha, why = commit_paths(ws.root, paths, subject + "\n\n" + "\n".join(paths) + "\n")
    if sha is None:
        raise ZmemError(f"cannot commit the changed memory files before syncing: {why}",
                        hint="commit them yourself (git status shows them), then: zmem sync")
    if why != ALREADY_COMMITTED:
        result.committed, result.committed_files = sha, paths


def _integrate(ws: Workspace, up: Upstream, theirs: str | None, result: SyncResult) -> None:
    """Merge the fetched upstream commit into HEAD. Conflicts only in files reflect writes are
    settled and those files written again (_regenerate); on a conflict in what a person wrote,
    undo the merge (the work tree is left as it was) and raise naming the files."""
    root = ws.root
    head = commit_id(root, "HEAD")
    if theirs is None or theirs == head or (head and _count(root, theirs, head) == 0):
        return  # nothing new upstream
    ff = head is None or _count(root, head, theirs) == 0
    # --ff and --no-edit whatever merge.ff or pull.* say: a fast-forward when possible, else a merge commit
    # --no-commit: the union-merged logs lose their repeated lines before the merge is committed
    proc = _git(root, "merge", "--ff", "--no-commit", "--no-edit", "-m", f"zmem sync: merge {up.name}", theirs)
    from zmem.reflect.merge import drop_union_duplicates
    from zmem.git.repo import open_repo
    from zmem.index.watch import merge_in_progress
    repo = open_repo(root)
    if proc.returncode == 0:
        if merge_in_progress(Path(repo.git_dir())) == "MERGE_HEAD":
            drop_union_duplicates(root, head, theirs)
            done = _git(root, "commit", "--no-edit")
            if done.returncode:
                _git(root, "merge", "--abort")
                raise ZmemError(f"cannot commit the merge of {up.name}: {_said(done)}",
                                hint="nothing was lost (your notes stay committed here); a pre-commit hook may have "
                                     "refused it: see git status, then: zmem sync")
            _upstream_first(root, theirs)
        result.merge = "merge" if result.merge == "merge" or not ff else "fast-forward"
        return
    conflicted = (_out(root, "diff", "--name-only", "--diff-filter=U") or "").splitlines()
    if conflicted and merge_in_progress(Path(repo.git_dir())) == "MERGE_HEAD":
        from zmem.reflect.merge import settle
        in_ws = {repo.to_ws(p): p for p in conflicted}
        settled = settle(root, in_ws, theirs) if None not in in_ws else None
        if settled is not None:
            drop_union_duplicates(root, head, theirs)
            done = _git(root, "commit", "--no-edit")
            if done.returncode == 0:
                result.merge = "merge"
                _upstream_first(root, theirs)
                _regenerate(ws, settled, result)
                return
    if merge_in_progress(Path(repo.git_dir())):
        _git(root, "merge", "--abort")
    if not conflicted and head and _out(root, "merge-base", head, theirs) is None:
        raise ZmemError(f"this clone and {up.name} share no history: each was started on its own (`zmem init` "
                        "in two places, or a new repository pushed to an existing hub). Nothing was merged or "
                        "pushed; your notes stay committed here",
                        hint=f"to join both memories: git merge --allow-unrelated-histories {up.name} (files both "
                             "started with, such as MEMORY.md and zmem.toml, may conflict: keep what each says), "
                             f"then: zmem sync. Or start this clone from the hub instead: move this directory "
                             f"aside, git clone {up.remote}'s URL (git remote get-url {up.remote}), and copy your "
                             "notes in")
    if not conflicted:
        in_the_way = _in_the_way(proc.stderr or "")
        if in_the_way:
            raise ZmemError(f"cannot merge {up.name}: {in_the_way}; nothing was merged or pushed",
                            hint="commit those files or move them aside (git stash --include-untracked), then: "
                                 "zmem sync")
        raise ZmemError(f"cannot merge {up.name}: {_said(proc)}",
                        hint="nothing was lost; see git status, move aside what is in the way, then: zmem sync")
    names = ", ".join(conflicted[:10]) + (f" and {len(conflicted) - 10} more" if len(conflicted) > 10 else "")
    raise ZmemError(f"sync stopped: {len(conflicted)} file{'s' if len(conflicted) != 1 else ''} changed here and on "
                    f"{up.name} in ways git cannot merge: {names}. The merge was undone; your notes stay committed "
                    "here, nothing was pushed",
                    hint=f"merge by hand: git pull --no-rebase {up.remote} {up.branch}, fix the conflicts in those "
                         "files, git commit, then: zmem sync")


def _in_the_way(said: str) -> str | None:
    """The files git names when a merge would overwrite them (local changes, untracked files), as one
    clause: git's own one-line error leaves the list out. None when git said something else."""
    kinds = {"local changes": "your uncommitted changes to {} would be overwritten by the merge",
             "untracked": "untracked file{s} {} would be overwritten by the merge"}
    out, kind, files = [], None, []

    def close() -> None:
        if kind and files:
            names = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10 else "")
            out.append(kinds[kind].format(names, s="s" if len(files) != 1 else ""))

    for line in said.splitlines():
        if "would be overwritten by merge" in line:
            close()
            kind, files = ("untracked" if "untracked" in line else "local changes"), []
        elif kind and line.startswith("\t"):
            files.append(line.strip())
        else:
            close()
            kind, files = None, []
    close()
    return "; ".join(out) or None


def _upstream_first(root: Path, theirs: str) -> None:
    """Make the merge commit just made list the upstream commit as its first parent (and this
    clone's commits second), as if the clone's work had been merged into the hub's line. Then the
    first-parent line of every clone is the hub's history, whichever clone won a push race: a note
    counts (in --as-of recall, `log @Entity`, `diff DATE`) from the commit that put it on the hub's
    line, the same on every clone, and a clone that fast-forwards keeps its own commits on its
    line. Same tree, so the work tree and git's index do not change; the commit was never pushed."""
    head = commit_id(root, "HEAD")
    parents = (_out(root, "rev-list", "--parents", "-n", "1", head or "") or "").split()[1:]
    if len(parents) != 2 or parents[1] != theirs:
        return
    message = _git(root, "log", "-1", "--format=%B", head).stdout.rstrip("\n")
    new = _out(root, "commit-tree", f"{head}^{{tree}}", "-p", theirs, "-p", parents[0], "-m", message)
    if new:
        _git(root, "update-ref", "-m", "zmem sync: upstream first", "HEAD", new, head)


def _regenerate(ws: Workspace, settled: list[str], result: SyncResult) -> None:
    """Write the reflect-written files again from the merged notes (every page, every opinion's
    evidence: each fact counts once, by its id), in one reflect commit. A failure here leaves the
    merged files as settled (no conflict markers) and is a warning: `zmem reflect` redoes them."""
    from zmem.reflect.run import reflect
    result.regenerated = sorted({*result.regenerated, *settled})
    try:
        done = reflect(ws, everything=True)
    except ZmemError as e:
        result.warnings.append(f"the merge took one side of {', '.join(settled)}; regenerating them failed: "
                               f"{e.message} (run `zmem reflect --since all`)")
        return
    result.reflect_commit = done.commit or result.reflect_commit


def _empty() -> dict:
    return {"commits": 0, "files": [], "facts_added": [], "facts_removed": [], "entities": []}


def _changes(ws: Workspace, old: str | None, new: str | None) -> dict:
    """What differs from commit old to commit new: commits (merges left out), workspace files, and
    the Retain facts added and removed in the memory files among them."""
    from zmem.git.repo import open_repo
    out = _empty()
    if not new:
        return out
    out["commits"] = _count(ws.root, new, old, "--no-merges")
    repo = open_repo(ws.root)
    if old:
        out["files"] = sorted(repo.changed_paths(old, new))
    else:  # the first push to an empty remote: everything went out
        listed = (_out(ws.root, "ls-tree", "-r", "--name-only", "--full-tree", new) or "").splitlines()
        out["files"] = sorted(rel for p in listed if (rel := repo.to_ws(p)))
    if not old:
        return out
    from zmem.text.markdown import day_from_path
    from zmem.text.retain import parse_facts

    def facts_at(sha: str, rel: str) -> dict:
        data = repo.file_at(sha, rel)
        text = data.decode("utf-8", "replace") if data is not None else ""
        return {f.fact_id(rel): f for f in parse_facts(text, rel, day_from_path(rel))[0]}
    entities: set[str] = set()
    for rel in out["files"]:
        if not ws.is_memory_path(rel):
            continue
        before, after = facts_at(old, rel), facts_at(new, rel)
        for key, side, other in (("facts_added", after, before), ("facts_removed", before, after)):
            for fid, f in side.items():
                if fid not in other:
                    out[key].append({"path": rel, "line": f.start_line, "kind": f.kind, "text": f.text,
                                     "entities": f.entities})
                    entities.update(f.entities)
    out["entities"] = sorted(entities)
    return out
