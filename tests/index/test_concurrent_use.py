"""Several zmem processes on one workspace at once, as real processes: full rebuilds side by side, and
the first use of a fresh clone by several recalls creating the schema once."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from helpers.workspace import commit_all, recall_json, write, zmem_exe


def _spawn(*args):
    return subprocess.Popen([zmem_exe(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_two_full_rebuilds_at_once_both_succeed(ws):
    for i in range(40):  # enough work that the two overlap
        write(ws, f"memory/2025-02-{i % 28 + 1:02d}-{i}.md", f"# n{i}\n\n- note {i} about the garden\n" * 20)
    commit_all(ws, "many")
    for _ in range(3):
        procs = [_spawn("-C", str(ws), "index", "--full") for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
    assert not list((ws / ".zmem").glob("index.sqlite.rebuild-*"))
    assert recall_json(ws, "garden")["results"]


@pytest.mark.slow
def test_first_use_by_several_processes_at_once_creates_the_schema_once(ws, tmp_path):
    for attempt in range(3):
        copy = tmp_path / f"copy{attempt}"
        shutil.copytree(ws, copy)
        shutil.rmtree(copy / ".zmem", ignore_errors=True)
        procs = [_spawn("-C", str(copy), "recall", "gateway", "--json") for _ in range(5)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0] * 5, [o[1] for o in outs]
        assert all(json.loads(o[0])["results"] for o in outs)
