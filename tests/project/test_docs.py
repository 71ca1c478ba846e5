"""Docs are part of the feature: man page and completions match the CLI, README covers every command."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.workspace import run
from zmem import __version__
from zmem.cli.app import cli
from zmem.cli.completion import commands

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from docgen import COMPLETION_FILES, rendered  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_generated_files_match_the_cli():
    for rel, content in rendered(cli, __version__).items():
        path = ROOT / rel
        assert path.is_file(), f"{rel} is missing: run python tools/docgen.py"
        assert path.read_text(encoding="utf-8") == content, f"{rel} drifted from the CLI: run python tools/docgen.py"


def test_completion_command_prints_the_committed_scripts():
    for shell, rel in COMPLETION_FILES.items():
        res = run(["completion", shell])
        assert res.exit_code == 0 and res.stdout == (ROOT / rel).read_text(encoding="utf-8")


def test_every_command_is_in_the_man_page_and_readme():
    man = (ROOT / "man" / "zmem.1").read_text()
    # the README or a page of docs/ (where the README's topics move)
    readme = "\n".join(p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    for path, cmd in commands(cli):
        name = " ".join(path)
        assert f".SS {name}" in man, name
        assert f"zmem {name}" in readme or f"zmem {path[0]}" in readme, f"README has no example of `zmem {name}`"


def _bash_complete(words: list[str]) -> list[str]:
    script = ROOT / "completions" / "zmem.bash"
    arr = " ".join(f"'{w}'" for w in words)
    proc = subprocess.run(["bash", "-c", f'source "{script}"; COMP_WORDS=({arr}); COMP_CWORD={len(words) - 1}; _zmem; '
                           'printf "%s\\n" "${COMPREPLY[@]}"'], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_bash_completion_completes_commands_options_and_choices():
    assert _bash_complete(["zmem", "rec"]) == ["recall"]
    assert set(_bash_complete(["zmem", "hooks", ""])) >= {"install", "uninstall", "status"}
    assert _bash_complete(["zmem", "recall", "--format", ""]) == ["text", "table", "json", "md"]
    assert "--max-chars" in _bash_complete(["zmem", "recall", "--m"])
    assert _bash_complete(["zmem", "completion", ""]) == ["bash", "zsh", "fish"]
    assert _bash_complete(["git", "zmem", "stat"]) == ["status"]


@pytest.mark.skipif(not shutil.which("groff"), reason="groff not installed")
def test_man_page_renders_without_warnings():
    proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(ROOT / "man" / "zmem.1")],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == ""


@pytest.mark.parametrize("shell,rel", [("zsh", "completions/_zmem"), ("fish", "completions/zmem.fish")])
def test_other_shells_parse_their_scripts(shell, rel):
    if not shutil.which(shell):
        pytest.skip(f"{shell} not installed")
    proc = subprocess.run([shell, "-n", str(ROOT / rel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
