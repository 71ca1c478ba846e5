"""The zmem children zmem starts (zmem/workspace/spawn.py) run this zmem, never one committed in a workspace."""
from __future__ import annotations

import subprocess

import pytest

from helpers.workspace import commit_all, recall_json, write, zmem_proc


@pytest.mark.slow
def test_a_cloned_repository_cannot_run_its_own_zmem_package(ws, tmp_path, monkeypatch):
    """zmem starts zmem children (hooks, background index and embedding, a model's first run) with
    the workspace as working directory; Python must not import a `zmem/` committed there."""
    marker = tmp_path / "PWNED"
    write(ws, "zmem/__init__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    write(ws, "zmem/__main__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    commit_all(ws, "a package named zmem")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ws), str(clone)], check=True)
    assert zmem_proc("-C", str(clone), "hooks", "install").returncode == 0
    write(clone, "memory/2025-12-03.md", "# d\n\n- a note that fires the hooks\n")
    commit_all(clone, "note")  # post-commit: python -P -m zmem.hookrun, in the clone's top directory
    from helpers.workspace import wait_for
    assert wait_for(lambda: "memory/2025-12-03.md" in {r["path"] for r in recall_json(clone, "fires")["results"]})
    monkeypatch.chdir(clone)
    from zmem.workspace.spawn import zmem_command
    proc = subprocess.run(zmem_command("zmem", "--version"), capture_output=True, text=True)
    assert proc.returncode == 0 and "zmem" in proc.stdout
    from zmem.index.catchup import spawn_detached_index
    from zmem.workspace.core import find_workspace
    spawn_detached_index(find_workspace(clone))
    wait_for(lambda: "--quiet" not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout,
             timeout=10)
    assert not marker.exists()
