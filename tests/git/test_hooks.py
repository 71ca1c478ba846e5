"""Hook coexistence, as pre-commit does it: real repositories, real `git commit`, a logging fake
interpreter standing in for zmem (what is under test here is the installer and the shim)."""
from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, run, wait_for as wait_until, write
from zmem.git import hooks
from zmem.errors import ZmemError


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo with spaces ü"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root, "a.md", "a\n")
    commit_all(root, "init")
    return root


@pytest.fixture
def fake_python(tmp_path) -> tuple[str, Path]:
    """An executable that logs its arguments after `-P -m zmem.hookrun`, standing in for Python."""
    log = tmp_path / "calls.log"
    exe = tmp_path / "fake pythön's" / "python"  # a space, non-ASCII and a quote to survive the shim
    exe.parent.mkdir()
    exe.write_text(f'#!/bin/sh\nshift 3\necho "$@" >> "{log}"\n')
    exe.chmod(0o755)
    return str(exe), log


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def wait_for(log: Path, line: str, count: int = 1, timeout: float = 10.0) -> list[str]:
    """The shim runs zmem in the background: wait until `line` was logged `count` times."""
    def found() -> list[str]:
        return [c for c in calls(log) if c.startswith(line)]
    if not wait_until(lambda: len(found()) >= count, timeout, interval=0.02):
        raise AssertionError(f"{line!r} not logged {count} time(s); log: {calls(log)}")
    return found()


def hook_path(repo: Path, name: str) -> Path:
    return repo / ".git" / "hooks" / name


def test_install_fires_on_commit_checkout_amend_merge(repo, fake_python):
    py, log = fake_python
    assert hooks.install(repo, python=py) == list(hooks.HOOK_NAMES)
    for name in hooks.HOOK_NAMES:
        assert os.access(hook_path(repo, name), os.X_OK)
    write(repo, "b.md", "b\n")
    git(repo, "add", "-A")
    proc = subprocess.run(["git", "commit", "-m", "b"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == ""  # zmem's part adds no output
    wait_for(log, "post-commit")
    git(repo, "checkout", "-q", "-b", "x")
    assert len(wait_for(log, "post-checkout ")[0].split()) == 4  # name + old, new, branch flag
    git(repo, "commit", "-q", "--amend", "-m", "b2")
    wait_for(log, "post-rewrite amend")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "x")
    wait_for(log, "post-merge")


def test_install_is_idempotent(repo, fake_python):
    py, _ = fake_python
    hooks.install(repo, python=py)
    before = {p.name: p.read_bytes() for p in (repo / ".git" / "hooks").iterdir()}
    hooks.install(repo, python=py)
    after = {p.name: p.read_bytes() for p in (repo / ".git" / "hooks").iterdir()}
    assert before == after
    assert not any(n.endswith(".zmem-prev") for n in after)
    assert set(hooks.status(repo, python=py).values()) == {"installed"}


def test_foreign_hook_is_kept_run_first_and_its_status_propagates(repo, fake_python, tmp_path):
    py, log = fake_python
    marker = tmp_path / "foreign-ran"
    foreign = f'#!/bin/sh\necho "$@" >> "{marker}"\nexit 3\n'
    hook_path(repo, "post-checkout").write_text(foreign)
    hook_path(repo, "post-checkout").chmod(0o755)
    hook_path(repo, "post-commit").write_text(f'#!/bin/sh\necho commit >> "{marker}"\n')
    hook_path(repo, "post-commit").chmod(0o755)
    hooks.install(repo, python=py)
    assert hooks.status(repo, python=py)["post-checkout"] == "installed (chains previous hook)"
    write(repo, "c.md", "c\n")
    commit_all(repo, "c")
    assert "commit" in marker.read_text()
    wait_for(log, "post-commit")
    proc = subprocess.run(["git", "checkout", "-q", "-b", "y"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 1  # git reports the foreign post-checkout's failure, as before zmem
    wait_for(log, "post-checkout")  # and zmem's part still ran
    hooks.uninstall(repo)
    assert hook_path(repo, "post-checkout").read_text() == foreign
    assert os.access(hook_path(repo, "post-checkout"), os.X_OK)
    assert not (repo / ".git" / "hooks" / "post-merge").exists()


def test_uninstall_without_install_and_foreign_untouched(repo):
    hook_path(repo, "post-merge").write_text("#!/bin/sh\necho mine\n")
    assert hooks.uninstall(repo) == []
    assert hook_path(repo, "post-merge").read_text() == "#!/bin/sh\necho mine\n"
    assert hooks.status(repo)["post-merge"] == "foreign"
    assert hooks.status(repo)["post-commit"] == "missing"


def test_linked_worktree_shares_the_common_hooks(repo, fake_python, tmp_path):
    py, log = fake_python
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "wt-branch")
    assert hooks.install(wt, python=py)
    assert hook_path(repo, "post-commit").is_file()
    write(wt, "w.md", "w\n")
    commit_all(wt, "in worktree")
    wait_for(log, "post-commit")


@pytest.mark.parametrize("scope", ["--local", "--global"])
def test_core_hookspath_is_refused_with_a_hint(repo, scope):
    git(repo, "config", scope, "core.hooksPath", ".husky")
    with pytest.raises(ZmemError) as err:
        hooks.install(repo)
    assert "core.hooksPath" in err.value.message and "zmem hook post-commit" in err.value.hint
    assert not (repo / ".husky").exists()
    assert not hook_path(repo, "post-commit").exists()
    assert set(hooks.status(repo).values()) == {hooks.HOOKS_PATH_STATE}


def test_doctor_does_not_suggest_an_install_that_core_hookspath_refuses(ws):
    git(ws, "config", "core.hooksPath", ".husky")
    line = next(x for x in run(["-C", str(ws), "doctor"]).stdout.splitlines() if "hooks:" in x)
    assert "core.hooksPath is set" in line and "zmem hook post-commit" in line
    assert "— run `zmem hooks install`" not in line


def test_uninstall_cleans_the_common_dir_even_after_core_hookspath_was_set(repo, fake_python):
    py, _ = fake_python
    hook_path(repo, "post-merge").write_text("#!/bin/sh\n")
    hooks.install(repo, python=py)
    git(repo, "config", "core.hooksPath", ".husky")
    assert hooks.uninstall(repo) == list(hooks.HOOK_NAMES)
    assert sorted(p.name for p in (repo / ".git" / "hooks").iterdir() if not p.name.endswith(".sample")) == ["post-merge"]


def test_dead_symlink_hook_is_moved_aside_and_restored(repo, fake_python):
    py, log = fake_python
    link = hook_path(repo, "post-commit")
    link.symlink_to("/nonexistent/hook")
    hooks.install(repo, python=py)
    write(repo, "d.md", "d\n")
    commit_all(repo, "d")  # the dangling previous hook is not executable: skipped, no crash
    wait_for(log, "post-commit")
    hooks.uninstall(repo)
    assert link.is_symlink() and os.readlink(link) == "/nonexistent/hook"


def test_outdated_shim_is_reported_and_upgraded(repo, fake_python):
    py, _ = fake_python
    hooks.install(repo, python=py)
    path = hook_path(repo, "post-merge")
    path.write_text(path.read_text() + "# old version\n")
    assert hooks.status(repo, python=py)["post-merge"] == "outdated"
    hooks.install(repo, python=py)
    assert hooks.status(repo, python=py)["post-merge"] == "installed"
    assert not (repo / ".git" / "hooks" / "post-merge.zmem-prev").exists()  # ours: upgraded, not moved


def test_copied_shim_as_previous_hook_does_not_loop(repo, fake_python):
    py, log = fake_python
    hooks.install(repo, python=py)
    shim = hook_path(repo, "post-commit").read_text()
    prev = repo / ".git" / "hooks" / "post-commit.zmem-prev"
    prev.write_text(shim.replace("3f1c6f0a", "copied"))  # a copy that no longer looks like ours
    prev.chmod(0o755)
    write(repo, "e.md", "e\n")
    commit_all(repo, "e")
    wait_for(log, "post-commit")
    time.sleep(0.5)  # a second, looping call would have arrived by now (an absence: nothing to wait for)
    assert calls(log).count("post-commit") == 1


def test_shim_is_silent_and_succeeds_without_any_zmem(repo, tmp_path):
    hooks.install(repo, python=str(tmp_path / "gone" / "python"))
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([str(hook_path(repo, "post-commit"))], cwd=repo, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert stat.S_IMODE(hook_path(repo, "post-commit").stat().st_mode) == 0o755


def test_install_from_a_subdirectory_creates_a_missing_hooks_dir(repo, fake_python):
    py, _ = fake_python
    for p in (repo / ".git" / "hooks").iterdir():
        p.unlink()
    (repo / ".git" / "hooks").rmdir()
    sub = repo / "deep" / "er"
    sub.mkdir(parents=True)
    assert hooks.hooks_dir(sub) == (repo / ".git" / "hooks").resolve()
    assert hooks.install(sub, python=py) == list(hooks.HOOK_NAMES)
    assert set(hooks.status(sub, python=py).values()) == {"installed"}


def test_not_a_repository(tmp_path):
    with pytest.raises(ZmemError, match="not a git repository"):
        hooks.install(tmp_path)


def test_previous_hook_gets_the_same_stdin(repo, fake_python, tmp_path):
    py, log = fake_python
    seen = tmp_path / "rewritten"
    hook_path(repo, "post-rewrite").write_text(f'#!/bin/sh\necho "$1" >> "{seen}"\ncat >> "{seen}"\n')
    hook_path(repo, "post-rewrite").chmod(0o755)
    hooks.install(repo, python=py)
    old = git(repo, "rev-parse", "HEAD")
    git(repo, "commit", "-q", "--amend", "-m", "amended")
    new = git(repo, "rev-parse", "HEAD")
    assert seen.read_text().splitlines() == ["amend", f"{old} {new}"]
    wait_for(log, "post-rewrite amend")


def test_non_executable_foreign_hook_is_moved_aside_not_run_and_restored(repo, fake_python, tmp_path):
    py, log = fake_python
    marker = tmp_path / "ran"
    body = f'#!/bin/sh\ntouch "{marker}"\n'
    hook_path(repo, "post-commit").write_text(body)
    hook_path(repo, "post-commit").chmod(0o644)
    hooks.install(repo, python=py)
    assert hooks.status(repo, python=py)["post-commit"] == "installed"  # nothing to chain: git skipped it too
    commit_all(repo, "x")
    wait_for(log, "post-commit")
    assert not marker.exists()
    hooks.uninstall(repo)
    assert hook_path(repo, "post-commit").read_text() == body
    assert stat.S_IMODE(hook_path(repo, "post-commit").stat().st_mode) == 0o644


def test_guard_is_per_hook_so_a_chained_hook_can_run_git(repo, fake_python, tmp_path):
    """A user's post-checkout that commits: the nested post-commit (user's and zmem's) still runs."""
    py, log = fake_python
    marker = tmp_path / "commit-hook-ran"
    hook_path(repo, "post-checkout").write_text(
        '#!/bin/sh\n[ "$3" = 1 ] && git commit -q --allow-empty -m from-hook\nexit 0\n')
    hook_path(repo, "post-checkout").chmod(0o755)
    hook_path(repo, "post-commit").write_text(f'#!/bin/sh\ntouch "{marker}"\n')
    hook_path(repo, "post-commit").chmod(0o755)
    hooks.install(repo, python=py)
    git(repo, "checkout", "-q", "-b", "z")
    assert git(repo, "log", "-1", "--format=%s") == "from-hook"
    assert marker.exists()
    wait_for(log, "post-commit")
    wait_for(log, "post-checkout")


def test_wrapper_that_calls_the_hook_back_does_not_loop(repo, fake_python):
    """A moved-aside hook that runs `.git/hooks/post-commit` (e.g. another manager's wrapper)."""
    py, log = fake_python
    hook_path(repo, "post-commit").write_text('#!/bin/sh\nexec "$(dirname "$0")/post-commit" "$@"\n')
    hook_path(repo, "post-commit").chmod(0o755)
    hooks.install(repo, python=py)
    proc = subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "w"], cwd=repo,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    wait_for(log, "post-commit")
    time.sleep(0.5)  # a second, looping call would have arrived by now (an absence: nothing to wait for)
    assert calls(log).count("post-commit") == 1


def test_foreign_hook_over_a_saved_one_is_left_alone(repo, fake_python):
    """Something replaced zmem's shim after it had saved a hook: both foreign hooks stay as they are."""
    py, _ = fake_python
    hook_path(repo, "post-commit").write_text("#!/bin/sh\necho first\n")
    hooks.install(repo, python=py)
    hook_path(repo, "post-commit").write_text("#!/bin/sh\necho second\n")
    assert hooks.install(repo, python=py) == [n for n in hooks.HOOK_NAMES if n != "post-commit"]
    assert hook_path(repo, "post-commit").read_text() == "#!/bin/sh\necho second\n"
    assert (repo / ".git" / "hooks" / "post-commit.zmem-prev").read_text() == "#!/bin/sh\necho first\n"
    assert hooks.status(repo, python=py)["post-commit"] == "foreign"
    # A hand-made copy of the saved hook is no conflict: zmem installs again.
    hook_path(repo, "post-commit").write_text("#!/bin/sh\necho first\n")
    assert hooks.install(repo, python=py) == list(hooks.HOOK_NAMES)
    assert (repo / ".git" / "hooks" / "post-commit.zmem-prev").read_text() == "#!/bin/sh\necho first\n"


def test_lost_executable_bit_is_outdated_and_repaired(repo, fake_python):
    py, _ = fake_python
    hooks.install(repo, python=py)
    hook_path(repo, "post-commit").chmod(0o644)
    assert hooks.status(repo, python=py)["post-commit"] == "outdated"
    hooks.install(repo, python=py)
    assert hooks.status(repo, python=py)["post-commit"] == "installed"


def test_uninstall_restores_a_saved_hook_whose_shim_was_deleted(repo, fake_python):
    py, _ = fake_python
    hook_path(repo, "post-merge").write_text("#!/bin/sh\necho mine\n")
    hooks.install(repo, python=py)
    hook_path(repo, "post-merge").unlink()
    assert "post-merge" in hooks.uninstall(repo)
    assert hook_path(repo, "post-merge").read_text() == "#!/bin/sh\necho mine\n"
    assert not (repo / ".git" / "hooks" / "post-merge.zmem-prev").exists()
