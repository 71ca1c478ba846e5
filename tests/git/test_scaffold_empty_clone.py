"""`zmem init` in an empty clone: a hub made with `git init --bare` names master as its HEAD while
zmem pushes main, so `git clone` of it checks out nothing ("remote HEAD refers to nonexistent ref").
docs/sync.md's tour (`git clone … && zmem init`, `zmem append`, `zmem sync`) then started a second
memory on master that shared no history with the first, and `zmem sync --status` on the first clone
said 0 behind: the note never arrived, silently. Real repositories, real processes."""
from __future__ import annotations

import pytest

from helpers.workspace import git, zmem_proc


@pytest.mark.slow
def test_init_in_an_empty_clone_starts_from_the_hubs_branch_and_a_note_reaches_the_first_clone(tmp_path):
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "master", str(hub))
    first, second = tmp_path / "first", tmp_path / "second"
    assert zmem_proc("init", str(first)).returncode == 0
    git(first, "remote", "add", "origin", str(hub))
    proc = zmem_proc("-C", str(first), "sync", "origin")
    assert proc.returncode == 0, proc.stderr
    git(tmp_path, "clone", "-q", str(hub), str(second))  # warns: remote HEAD refers to nonexistent ref
    proc = zmem_proc("init", str(second))
    assert proc.returncode == 0, proc.stderr
    assert "checked out origin/main" in proc.stdout
    assert git(second, "rev-parse", "HEAD") == git(first, "rev-parse", "HEAD")
    assert git(second, "rev-parse", "--abbrev-ref", "@{upstream}") == "origin/main"
    proc = zmem_proc("-C", str(second), "append", "Deployed the gateway on the new host")
    assert proc.returncode == 0, proc.stderr
    assert zmem_proc("-C", str(second), "sync").returncode == 0
    proc = zmem_proc("-C", str(first), "sync")
    assert proc.returncode == 0, proc.stderr
    found = zmem_proc("-C", str(first), "recall", "gateway new host")
    assert "Deployed the gateway on the new host" in found.stdout
    assert git(hub, "for-each-ref", "--format=%(refname)") == "refs/heads/main"  # no second memory on master


def test_init_in_an_empty_clone_of_a_hub_with_several_branches_and_no_main_says_which_to_take(tmp_path):
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "trunk", str(hub))
    src = tmp_path / "src"
    git(tmp_path, "init", "-q", "-b", "alpha", str(src))
    (src / "a.md").write_text("a\n")
    git(src, "add", "a.md")
    git(src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
    git(src, "branch", "beta")
    git(src, "push", "-q", str(hub), "alpha", "beta")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(hub), str(clone))
    proc = zmem_proc("init", str(clone))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("zmem: this clone has no commit yet and origin has several branches")
    assert lines[1] == "hint: check out the memory's branch first, e.g. `git checkout --track origin/alpha`, " \
                       "then `zmem init` again"
    assert not (clone / "zmem.toml").exists()
