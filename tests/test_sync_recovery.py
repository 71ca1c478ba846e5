"""`zmem sync` when things go wrong on the way, against a real bare hub: the process killed -9
between its fetch and its push, a hub whose history was rewritten by a force push, and a clone that
never shared history with the hub. Nothing is lost, and the message says what to do."""
from __future__ import annotations

import json
import subprocess

import pytest

from helpers.workspace import git, zmem_exe
from helpers.hub import make_hub, no_conflict_markers, sync, today_log, zmem


def _kill_on_ref(root, ref: str, flag) -> None:
    """A reference-transaction hook that kills `zmem sync` and every git it runs (its process
    group) with SIGKILL the first time `ref` is updated."""
    hook = root / ".git/hooks/reference-transaction"
    hook.write_text(f"""#!/bin/sh
[ "$1" = committed ] || exit 0
grep -q " {ref}$" || exit 0
[ -e "{flag}" ] && exit 0
touch "{flag}"
read -r _ _ _ _ group _ < /proc/$PPID/stat
kill -KILL "-$group"
""")
    hook.chmod(0o755)


@pytest.mark.slow
@pytest.mark.parametrize("ref", ["refs/remotes/origin/main", "refs/heads/main"], ids=["after-fetch", "after-merge"])
def test_sync_killed_between_fetch_and_push_is_finished_by_the_next_sync(tmp_path, ref):
    a, b = make_hub(tmp_path, 2)
    zmem("-C", str(b), "append", "from b meanwhile")
    sync(b)
    zmem("-C", str(a), "append", "from a before the kill")
    flag = tmp_path / "killed"
    _kill_on_ref(a, ref, flag)
    proc = subprocess.run([zmem_exe(), "-C", str(a), "sync"], capture_output=True, text=True, start_new_session=True)
    assert proc.returncode == -9 and flag.exists(), (proc.returncode, proc.stderr)
    (a / ".git/hooks/reference-transaction").unlink()
    if ref == "refs/heads/main":  # git was killed between the merge commit and its clean-up
        assert (a / ".git/MERGE_HEAD").exists()
    out = sync(a)
    assert out["pushed"], out
    hub_text = git(tmp_path / "hub.git", "show", "main:" + next((a / "memory").glob("2*.md")).relative_to(a).as_posix())
    assert hub_text.count("from a before the kill") == 1 and hub_text.count("from b meanwhile") == 1
    sync(b)
    assert today_log(b) == today_log(a) and git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    st = json.loads(zmem("-C", str(a), "status", "--json").stdout)
    assert not st["stale"] and st["indexed_commit"] == git(a, "rev-parse", "HEAD")
    assert not git(a, "status", "--porcelain") and no_conflict_markers(a)


@pytest.mark.slow
def test_a_force_pushed_hub_stops_the_sync_with_what_to_do_and_loses_nothing(tmp_path):
    a, b = make_hub(tmp_path, 2)
    zmem("-C", str(a), "append", "a note the rewrite drops")
    sync(a)
    sync(b)
    dropped = git(a, "rev-parse", "HEAD")
    git(a, "reset", "-q", "--hard", "HEAD~1")  # a rewrites the hub's history
    zmem("-C", str(a), "append", "a note after the rewrite")
    git(a, "push", "-q", "--force", "origin", "HEAD:main")
    zmem("-C", str(b), "append", "b's own note")
    mine = git(b, "rev-parse", "HEAD")
    proc = sync(b, ok=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    first, hint = proc.stderr.strip().splitlines()
    assert first == ("zmem: origin/main was rewritten (force-pushed): 1 commit this clone fetched from it before "
                     "is no longer in it. Nothing was merged or pushed; your notes stay committed here")
    assert hint.startswith("hint: if the rewrite was meant, follow it: git fetch --force origin")
    assert f"git rebase --onto origin/main {dropped[:12]}" in hint and "git merge origin/main" in hint
    assert git(b, "rev-parse", "HEAD") == mine and "b's own note" in today_log(b)
    assert sync(b, ok=False).returncode == 1  # still stopped: a person decides, not the next sync
    # following the hint: b's own commit goes on top of the rewritten history, the dropped commit stays
    # out (its line may come back: the union merge of the daily log keeps the context b's commit had)
    git(b, "fetch", "-q", "--force", "origin", "main:refs/remotes/origin/main")
    git(b, "rebase", "-q", "--onto", "origin/main", dropped)
    out = sync(b)
    assert out["pushed"] and out["outgoing"]["commits"] == 1
    text = today_log(b)
    assert "b's own note" in text and "a note after the rewrite" in text
    hub = tmp_path / "hub.git"
    assert subprocess.run(["git", "-C", str(hub), "merge-base", "--is-ancestor", dropped, "main"]).returncode == 1


@pytest.mark.slow
def test_two_clones_started_on_their_own_get_a_specific_hint(tmp_path):
    (a,) = make_hub(tmp_path, 1)
    other = tmp_path / "other"
    zmem("init", str(other))
    zmem("-C", str(other), "append", "a note from a memory started elsewhere")
    git(other, "remote", "add", "origin", str(tmp_path / "hub.git"))
    proc = zmem("-C", str(other), "sync", "origin", ok=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    first, hint = proc.stderr.strip().splitlines()
    assert first.startswith("zmem: this clone and origin/main share no history: each was started on its own")
    assert "git merge --allow-unrelated-histories origin/main" in hint and "git clone" in hint
    assert "a note from a memory started elsewhere" in git(other, "log", "-p")
    assert git(tmp_path / "hub.git", "rev-parse", "main") == git(a, "rev-parse", "HEAD")  # the hub is untouched
