"""The entry point's plain recall (zmem/cli/entry.py): `zmem [-C DIR] recall WORDS... [--json]` into a
pipe is answered without importing click, and prints byte for byte what the click command prints,
with the same exit code; everything else (options, --help, errors, a terminal) is the click command
line itself."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from helpers.workspace import commit_all, write
from zmem.cli.entry import plain_recall

ENTRY = "import sys; from zmem.cli.entry import main; sys.argv[0] = 'zmem'; main()"
CLICK = "import sys; from zmem.cli.app import main; sys.argv[0] = 'zmem'; main()"
# the entry point, then which modules it loaded, in a file (the command owns stdout and stderr)
REPORT = ("import json, sys; from zmem.cli.entry import main; out = sys.argv.pop(1); sys.argv[0] = 'zmem'\n"
          "try:\n    main()\nexcept SystemExit:\n    pass\n"
          "json.dump(sorted(sys.modules), open(out, 'w'))")


def _run(code: str, *args, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, cwd=cwd, timeout=120,
                          env={**os.environ, **(env or {})})


def _same(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    entry, click = _run(ENTRY, *args, cwd=cwd, env=env), _run(CLICK, *args, cwd=cwd, env=env)
    assert (entry.returncode, entry.stdout, entry.stderr) == (click.returncode, click.stdout, click.stderr), args
    return entry


@pytest.mark.slow
def test_plain_recall_prints_exactly_what_the_click_command_prints(ws, tmp_path):
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n- Gateway \x1b[31mred\x1b[0m and \u202eevil\u202c text.\n")
    commit_all(ws, "escapes")
    cases = [("recall", "gateway"), ("recall", "gateway", "--json"), ("recall", "--json", "Peter", "Marrakech"),
             ("recall", "北京"), ("recall", "nothingmatchesthis"), ("recall", "nothingmatchesthis", "--json"),
             ("recall", "!!!"), ("recall", "!!!", "--json"), ("recall", "red", "evil"),
             ("recall", "gateway", "--json", "--json"), ("recall", "-k", "1", "gateway"),
             ("recall", "gateway", "--k", "1000", "--json"), ("recall", "Peter", "--k", "2")]
    for args in cases:
        assert _same("-C", str(ws), *args).returncode == 0
        _same(*args, cwd=ws)
        _same(*args, cwd=tmp_path, env={"ZMEM_WORKSPACE": str(ws)})
    hits = json.loads(_same("-C", str(ws), "recall", "gateway", "--json").stdout)["results"]
    assert {h["path"] for h in hits} == {"memory/2025-11-24.md", "memory/2025-11-28.md"}
    assert b"no results" in _same("-C", str(ws), "recall", "nothingmatchesthis").stderr
    assert b"warning: " in _same("-C", str(ws), "recall", "!!!").stderr


@pytest.mark.slow
def test_errors_help_and_options_are_the_click_command_lines(ws, tmp_path):
    assert _same("-C", str(tmp_path), "recall", "gateway").returncode == 1  # not a workspace: the error, once
    assert _same("-C", str(tmp_path / "missing"), "recall", "gateway").returncode == 1
    (tmp_path / "file").write_text("x")
    assert _same("-C", str(tmp_path / "file"), "recall", "gateway").returncode == 2
    assert _same("recall", "gateway", cwd=tmp_path).returncode == 1
    for args in [("recall", "--help"), ("recall", "-k", "0", "gateway"), ("recall", "-k", "1001", "gateway"),
                 ("recall", "-k", "+2", "gateway"), ("recall", "-k", "2", "-k", "3", "gateway"), ("recall", "-k"),
                 ("recall", "gateway", "-k"), ("recall", "-k3", "gateway"), ("recall", "--bogus", "x"), ("recall",),
                 ("recall", "--json"), ("recall", "--", "-gateway"), ("recall", ""), ("-C", str(ws), "recall")]:
        _same(*(args if args[0] == "-C" else ("-C", str(ws), *args)))


def test_plain_recall_loads_no_click_and_anything_else_does(ws, tmp_path):
    report = tmp_path / "modules.json"
    proc = _run(REPORT, str(report), "-C", str(ws), "recall", "gateway", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"], proc.stderr
    assert not [m for m in json.loads(report.read_text()) if m == "click" or m.startswith("click.")]
    proc = _run(REPORT, str(report), "-C", str(ws), "recall", "gateway", "--since", "7d")
    assert proc.returncode == 0 and "click" in json.loads(report.read_text())


@pytest.mark.parametrize("args, plain", [
    (["recall", "a", "b"], (None, ["a", "b"], False, None)),
    (["recall", "--json", "a"], (None, ["a"], True, None)),
    (["-C", ".", "recall", "a"], (".", ["a"], False, None)),
    (["recall", "a", "-k", "12", "--json"], (None, ["a"], True, 12)), (["recall", "--k", "1000", "a"], (None, ["a"], False, 1000)),
    (["recall", "-k", "007", "a"], None), (["recall", "-k", "1", "-k", "2", "a"], None), (["recall", "a", "-k"], None),
    (["recall", "-k", "٣", "a"], None),
    (["-C", "/nonexistent-dir", "recall", "a"], None),
    (["recall"], None), (["recall", "--json"], None), (["recall", "--max-chars", "3", "a"], None),
    (["recall", "a", "--help"], None), (["recall", "--", "a"], None), (["recall", ""], None),
    (["recall", "caf\udce9"], None), (["--help"], None), (["get", "x"], None), (["-C"], None),
    (["-C", ".", "get", "x"], None), (["recall", "-"], None),
])
def test_which_arguments_take_the_plain_path(args, plain, monkeypatch):
    pipe = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", pipe)
    monkeypatch.setattr(sys, "stderr", pipe)
    assert plain_recall(args) == plain


def test_a_terminal_or_another_encoding_takes_the_click_path(monkeypatch):
    class Tty(io.TextIOWrapper):
        def isatty(self):
            return True
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    monkeypatch.setattr(sys, "stdout", Tty(io.BytesIO(), encoding="utf-8"))
    assert plain_recall(["recall", "a"]) is None
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="latin-1"))
    assert plain_recall(["recall", "a"]) is None
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    assert plain_recall(["recall", "a"]) == (None, ["a"], False, None)
