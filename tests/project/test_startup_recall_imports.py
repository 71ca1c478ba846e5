"""What the plainest fresh recall (`zmem recall WORDS`, through zmem.cli.entry as agents run it) loads
and compiles besides what it needs: facts about sys.modules and compiled patterns, not timings
(bench/README.md has the timings)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from helpers.fresh import fresh
from helpers.workspace import run

# Modules only some of zmem's paths need (tomllib with typing, string and datetime's patterns: a
# zmem.toml that sets something; threading: watchers and local models; session settings: [sessions])
NOT_NEEDED = ("tomllib", "typing", "threading", "string", "zmem.workspace.session_settings")
# Patterns only reading notes (indexing), CJK text or a terminal uses
UNUSED_PATTERNS = ("zmem.text.markdown.FENCE_OPEN", "zmem.text.markdown.SETEXT", "zmem.text.markdown.HR",
                   "zmem.text.markdown.QUOTE", "zmem.text.chunking._BREAK", "zmem.text.retain._HEAD",
                   "zmem.text.retain._ARG", "zmem.text.retain._RELATION", "zmem.store.fts._TOKEN_START",
                   "zmem.store.fts._WCH_RE", "zmem.store.fts._ASTRAL", "zmem.text.chunking.CJK_RE",
                   "zmem.cli.terminal._UNSAFE")


def fresh_recall(ws: Path, *words: str) -> tuple[dict, subprocess.CompletedProcess]:
    return fresh("-C", str(ws), "recall", *words, env={k: v for k, v in os.environ.items() if k != "ZMEM_WORKSPACE"})


def test_a_fresh_recall_with_the_default_zmem_toml_imports_no_tomllib_typing_or_threading(ws):
    assert (ws / "zmem.toml").read_text().startswith("# zmem settings")  # as `zmem init` wrote it
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    report, proc = fresh_recall(ws, "Peter", "gateway")
    assert proc.returncode == 0, proc.stderr
    assert "memory/2025-11-24.md#L" in proc.stdout
    assert [m for m in NOT_NEEDED if m in report["modules"]] == []
    assert [p for p in UNUSED_PATTERNS if report["compiled"].get(p)] == []
    assert all(p in report["compiled"] for p in UNUSED_PATTERNS)  # each is still a lazy pattern


def test_a_zmem_toml_with_settings_is_still_read_by_tomllib(ws):
    (ws / "zmem.toml").write_text("[recall]\nk = 1\n")
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    report, proc = fresh_recall(ws, "Peter")
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.strip().splitlines()) == 2  # one hit (its citation line and its snippet)
    assert "tomllib" in report["modules"]
