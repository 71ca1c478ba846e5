"""The docs' commands run: .ci/readme_smoke.py (also a step of .ci/run, on the "Try it" install) runs
every command of the runnable blocks (a ```sh block after `<!-- smoke -->`) of README.md and
docs/*.md against `zmem demo`, here with the test venv's zmem, so drift shows up locally."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.workspace import zmem_exe

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / ".ci" / "readme_smoke.py"


def _smoke():
    spec = importlib.util.spec_from_file_location("readme_smoke", SMOKE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _block(*lines: str) -> str:
    return "# zmem\n\n## Commands\n\nSome text.\n\n<!-- smoke -->\n```sh\n" + "\n".join(lines) + "\n```\n\n## Next\n"


@pytest.mark.slow
def test_every_documented_command_runs_on_the_demo_workspace():
    proc = subprocess.run([sys.executable, str(SMOKE), "--zmem", zmem_exe()], capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr
    ran = [line.split(None, 2)[2] for line in proc.stdout.splitlines() if line.startswith(("ok ", "FAIL "))]
    per_file = _smoke().documented_commands(_smoke().default_docs())
    assert len(ran) == sum(len(cmds) for _, cmds in per_file) > 60
    files = {f.name for f, _ in per_file}
    assert {"README.md", "commands.md"} <= files and len(files) > 5, files  # the docs' pages run too


def test_the_command_list_holds_every_command_and_the_readme_its_tour():
    smoke = _smoke()
    listed = {" ".join(w for w in argv[1:3] if not w.startswith("-"))
              for argv in smoke.commands_of((ROOT / "docs" / "commands.md").read_text(encoding="utf-8"))}
    from zmem.cli.app import cli
    from zmem.cli.completion import commands
    for path, _ in commands(cli):
        name = " ".join(path)
        assert name in listed or (len(path) == 1 and any(x.startswith(name + " ") for x in listed)), \
            f"docs/commands.md runs no `zmem {name}`"
    assert len(smoke.commands_of((ROOT / "README.md").read_text(encoding="utf-8"))) >= 8


def test_readme_lines_become_every_form_of_their_commands():
    smoke = _smoke()
    cmds = smoke.commands_of(_block(
        "zmem init [DIR]                    # git init if needed, layout",
        "# a comment line runs nothing",
        "zmem get memory/2025-11-24.md#L5-L6        # exactly the cited lines (or --from 5 --lines 2)",
        'zmem append "Prefers tea" --retain O --entity Peter   # - O(c=0.8) @Peter: Prefers tea',
        "zmem graph Peter --depth 2 [--json]; zmem graph --export entities.json",
        "zmem log @Peter [--since 30d] [--json]",
        "zmem mcp [--scope private|group]   # an MCP server on stdin",
        "zmem hooks install|uninstall|status",
        "zmem trust                         # let this workspace's zmem.toml choose"))
    assert cmds == [
        ["zmem", "init"], ["zmem", "init", "\0DIR"],
        ["zmem", "get", "memory/2025-11-24.md#L5-L6"],
        ["zmem", "append", "Prefers tea", "--retain", "O", "--entity", "Peter"],
        ["zmem", "graph", "Peter", "--depth", "2"], ["zmem", "graph", "Peter", "--depth", "2", "--json"],
        ["zmem", "graph", "--export", "entities.json"],
        ["zmem", "log", "@Peter"], ["zmem", "log", "@Peter", "--since", "30d", "--json"],
        ["zmem", "mcp"], ["zmem", "mcp", "--scope", "private"], ["zmem", "mcp", "--scope", "group"],
        ["zmem", "hooks", "install"], ["zmem", "hooks", "uninstall"], ["zmem", "hooks", "status"],
        ["zmem", "trust"]]


def test_only_marked_blocks_run_and_every_marked_block_does():
    smoke = _smoke()
    text = ("```sh\nzmem init\n```\n\n<!-- smoke: on the demo -->\n\n```sh\nzmem status\n```\n\n"
            "```sh\ngit clone x\n```\n<!-- smoke -->\n```sh\nzmem doctor\n```\n")
    assert smoke.commands_of(text) == [["zmem", "status"], ["zmem", "doctor"]]
    assert smoke.commands_of("# no runnable block\n\n```sh\nzmem status\n```\n") == []


@pytest.mark.parametrize("text", [_block("git zmem status"), _block("zmem recall [--k 5"), _block("zmem recall x |"),
                                  _block("| zmem status"), "<!-- smoke -->\n\nplain text\n",
                                  "<!-- smoke -->\n```sh\nzmem status\n"])
def test_a_runnable_block_the_script_cannot_read_is_an_error(text):
    smoke = _smoke()
    with pytest.raises(smoke.ReadmeError):
        smoke.commands_of(text)


def test_docs_without_any_runnable_block_are_an_error(tmp_path):
    smoke = _smoke()
    (tmp_path / "a.md").write_text("# nothing to run\n", encoding="utf-8")
    with pytest.raises(smoke.ReadmeError):
        smoke.documented_commands([tmp_path / "a.md"])


@pytest.mark.slow
def test_a_documented_command_that_fails_fails_the_smoke_test(tmp_path):
    """Not a no-op: an unexpected error exit, an unknown placeholder and bad usage are reported, and
    every file named runs in a workspace of its own."""
    readme, page = tmp_path / "README.md", tmp_path / "page.md"
    readme.write_text(_block("zmem status [--json]", "zmem entity Nobody", "zmem recall --k"), encoding="utf-8")
    page.write_text(_block('zmem append "only here"', "zmem status"), encoding="utf-8")
    proc = subprocess.run([sys.executable, str(SMOKE), "--zmem", zmem_exe(), "--doc", str(readme), "--doc", str(page)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "ok   0  zmem status" in lines and "ok   0  zmem status --json" in lines
    assert any(line.startswith("FAIL 1  zmem entity Nobody") for line in lines)
    assert any(line.startswith("FAIL 2  zmem recall --k") for line in lines)
    assert sum(line.startswith("== ") for line in lines) == 2
    assert "6 documented commands run (2 files), 2 failed" in lines
    readme.write_text(_block("zmem init [WHERE]"), encoding="utf-8")
    proc = subprocess.run([sys.executable, str(SMOKE), "--zmem", zmem_exe(), "--doc", str(readme)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "placeholder [WHERE]" in proc.stderr, proc.stdout + proc.stderr
