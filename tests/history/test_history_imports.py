"""What a fresh `zmem log`, `zmem diff` and `zmem entity` load: pygit2 (~100 ms to import under load) is
not needed to read the history index, revisions and blobs come from the git command; rapidfuzz (~7 ms)
only when there is something to compare. Facts about imported modules (`-X importtime`), not timings."""
from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.workspace import RETAIN, commit_all, run, write


def imported(ws, *args) -> tuple[set[str], subprocess.CompletedProcess]:
    """(the modules a fresh `zmem ARGS` imported, the process)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "zmem", "-C", str(ws), *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}, proc


@pytest.mark.slow
def test_log_diff_and_entity_import_neither_pygit2_nor_rapidfuzz_without_need(ws):
    write(ws, "memory/2025-11-20.md", RETAIN.format(day="2025-11-20", facts="- W @Peter: Lives in Lisbon.\n- W @José: Cooks."))
    write(ws, "bank/opinions.md", "# Opinions\n\n## Likes tea.\n- entities: @Peter\n- confidence: 0.6\n")
    commit_all(ws, "first")
    write(ws, "memory/2025-11-21.md", RETAIN.format(day="2025-11-21", facts="- B @Peter: Moved to Porto."))
    write(ws, "bank/opinions.md", "# Opinions\n\n## Likes tea.\n- entities: @Peter\n- confidence: 0.8\n")
    commit_all(ws, "second")
    assert run(["-C", str(ws), "index", "--history", "-q"]).exit_code == 0
    for args in (["log", "@Peter"], ["log", "@Peter", "--since", "2025-11-01"], ["diff", "HEAD~2", "HEAD"],
                 ["diff", "HEAD~1", "HEAD", "--entity", "Peter"], ["entity", "Peter"]):
        modules, proc = imported(ws, *args)
        assert proc.stdout
        assert not {"pygit2", "zmem.git.repo", "rapidfuzz"} & modules, args
        if args[0] == "diff" and "--entity" in args:  # the opinions file changed: read with git cat-file
            assert "~ opinion c 0.60 -> 0.80: Likes tea." in proc.stdout
        if args[0] == "log":
            assert "confidence changed" in proc.stdout
    write(ws, "memory/2025-11-22.md", RETAIN.format(day="2025-11-22", facts="- W @Jose: Sings."))
    commit_all(ws, "third")
    modules, proc = imported(ws, "entity", "Jose")
    assert "rapidfuzz" in modules and "@Jose and @José look like one entity" in proc.stderr


def test_a_fresh_command_builds_only_its_own_result_classes(ws):
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    for args, module in ((["index", "-q"], "index"), (["blame", "memory/2025-11-24.md#L5"], "history"), (["status"], "status")):
        modules, _ = imported(ws, *args)
        assert {m for m in modules if m.startswith("zmem.results.")} == {f"zmem.results.{module}"}, args
