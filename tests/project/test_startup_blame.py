"""A fresh `zmem blame` of working-tree lines whose blame is cached asks git for the repository's
paths and reads HEAD from the ref files: it imports no pygit2 (~100 ms), and answers as before.
Facts about what the process imported (`-X importtime`), not timings."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers.workspace import commit_all, run, write


def _fresh(ws, *args) -> tuple[subprocess.CompletedProcess, set[str]]:
    """`zmem ARGS` in a new interpreter, and the modules it imported."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "zmem", "-C", str(ws), *args],
                          capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    modules = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    return proc, modules


def test_a_fresh_blame_from_the_cache_imports_no_pygit2_and_answers_the_same(ws):
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n## Notes\n\n- Set up the gateway on the Mac Studio.\n"
          "- Peter prefers short answers on WhatsApp.\n- Booked the dentist.\n")
    commit_all(ws, "one more line")
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    first = run(["-C", str(ws), "blame", "memory/2025-11-24.md#L5-L7", "--json"])  # runs git blame, caches it
    assert first.exit_code == 0, first.output
    proc, modules = _fresh(ws, "blame", "memory/2025-11-24.md#L5-L7", "--json")
    assert proc.returncode == 0, proc.stderr
    assert not {m for m in modules if m.split(".")[0] == "pygit2" or m == "zmem.git.repo"}
    assert json.loads(proc.stdout) == json.loads(first.stdout)
    lines = json.loads(proc.stdout)["ranges"][0]["lines"]
    assert [line["summary"] for line in lines] == ["notes", "notes", "one more line"]


def test_blame_of_lines_not_committed_yet_still_says_so(ws):
    write(ws, "memory/2025-11-27.md", "# 2025-11-27\n\n## Notas\n\n- O Peter está em Marrakech.\n- Nova linha.\n")
    proc, _ = _fresh(ws, "blame", "memory/2025-11-27.md#L5-L6", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = json.loads(proc.stdout)["ranges"][0]["lines"]
    assert [line["commit"] is None for line in lines] == [False, True]
