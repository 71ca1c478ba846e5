"""Hooks installed by another environment (another venv) with this zmem are installed, not outdated:
status says which interpreter they run, and reports one that is gone or can no longer run zmem."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers.venv import other_venv
from helpers.workspace import commit_all, git, wait_for, write, zmem_proc


def _hooks(root) -> dict:
    proc = zmem_proc("hooks", "status", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_hooks_from_another_venv_are_installed_and_a_gone_interpreter_is_reported(ws, tmp_path):
    python = other_venv(tmp_path / "other venv")
    proc = subprocess.run([str(python), "-m", "zmem", "-C", str(ws), "hooks", "install"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _hooks(ws) == {name: f"installed (runs {python})" for name in
                          ("post-commit", "post-merge", "post-checkout", "post-rewrite")}
    doctor = zmem_proc("doctor", cwd=ws).stdout
    assert f"[ok  ] hooks: post-commit, post-merge, post-checkout, post-rewrite installed (runs {python})" in doctor

    # they work: a real commit runs the other environment's zmem, which catches the index up
    write(ws, "memory/2025-12-01.md", "# 2025-12-01\n\n- the quince orchard\n")
    head = commit_all(ws)

    def caught_up():
        return json.loads(zmem_proc("status", "--json", cwd=ws).stdout)["indexed_commit"] == head
    assert wait_for(caught_up)

    python.unlink()  # an interpreter there that cannot run zmem (PYTHONPATH would let the real one import it)
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    assert set(_hooks(ws).values()) == {f"interpreter broken: {python} cannot run zmem (the hook does nothing)"}

    subprocess.run(["rm", "-rf", str(tmp_path / "other venv")], check=True)
    states = set(_hooks(ws).values())
    assert len(states) == 1 and states.pop().startswith(f"interpreter missing: {python} no longer exists ("), states
    proc = zmem_proc("hooks", "status", cwd=ws)
    assert proc.stdout.startswith(f"post-commit    interpreter missing: {python} no longer exists")
    assert proc.stderr.startswith("hint: `zmem hooks install` installs them to run this zmem (")
    doctor = zmem_proc("doctor", cwd=ws).stdout
    assert (f"[WARN] hooks: post-commit, post-merge, post-checkout, post-rewrite: interpreter missing: {python} "
            "no longer exists") in doctor and "run `zmem hooks install`" in doctor
    status = zmem_proc("status", cwd=ws).stdout
    assert f"hooks:          post-commit, post-merge, post-checkout, post-rewrite interpreter missing: {python}" in status

    assert zmem_proc("hooks", "install", cwd=ws).returncode == 0
    assert set(_hooks(ws).values()) == {"installed"}


def test_a_shim_of_another_version_is_outdated_whatever_interpreter_it_runs(ws, tmp_path):
    python = other_venv(tmp_path / "venv2")
    subprocess.run([str(python), "-m", "zmem", "-C", str(ws), "hooks", "install"], check=True, timeout=120)
    hook = Path(git(ws, "rev-parse", "--git-common-dir"))
    hook = (hook if hook.is_absolute() else ws / hook) / "hooks" / "post-merge"
    hook.write_text(hook.read_text().replace("# zmem's part", "# an older zmem's part"))
    states = _hooks(ws)
    assert states["post-merge"] == "outdated" and states["post-commit"] == f"installed (runs {python})"
