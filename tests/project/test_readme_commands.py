"""README.md's command list runs: .ci/readme_smoke.py (also a step of .ci/run, on the "Try it" install)
runs every command of it against `zmem demo`, here with the test venv's zmem, so drift shows up locally."""
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
    return "# zmem\n\n## Commands\n\nSome text.\n\n```sh\n" + "\n".join(lines) + "\n```\n\n## Next\n"


@pytest.mark.slow
def test_every_readme_command_runs_on_the_demo_workspace():
    proc = subprocess.run([sys.executable, str(SMOKE), "--zmem", zmem_exe()], capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr
    ran = [line.split(None, 2)[2] for line in proc.stdout.splitlines() if line.startswith(("ok ", "FAIL "))]
    assert len(ran) == len(_smoke().readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))) > 40


def test_readme_lines_become_every_form_of_their_commands():
    smoke = _smoke()
    cmds = smoke.readme_commands(_block(
        "zmem init [DIR]                    # git init if needed, layout",
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


@pytest.mark.parametrize("readme", ["# zmem\n\nno command list\n", _block("git zmem status"),
                                    _block("zmem recall [--k 5"), _block("zmem recall x |"), _block("| zmem status")])
def test_a_command_list_the_script_cannot_read_is_an_error(readme):
    smoke = _smoke()
    with pytest.raises(smoke.ReadmeError):
        smoke.readme_commands(readme)


@pytest.mark.slow
def test_a_readme_command_that_fails_fails_the_smoke_test(tmp_path):
    """Not a no-op: an unexpected error exit, an unknown placeholder and bad usage are reported."""
    readme = tmp_path / "README.md"
    readme.write_text(_block("zmem status [--json]", "zmem entity Nobody", "zmem recall --k"), encoding="utf-8")
    proc = subprocess.run([sys.executable, str(SMOKE), "--zmem", zmem_exe(), "--readme", str(readme)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "ok   0  zmem status" in lines and "ok   0  zmem status --json" in lines
    assert any(line.startswith("FAIL 1  zmem entity Nobody") for line in lines)
    assert any(line.startswith("FAIL 2  zmem recall --k") for line in lines)
    assert "4 README commands run, 2 failed" in lines
    readme.write_text(_block("zmem init [WHERE]"), encoding="utf-8")
    proc = subprocess.run([sys.executable, str(SMOKE), "--zmem", zmem_exe(), "--readme", str(readme)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "placeholder [WHERE]" in proc.stderr, proc.stdout + proc.stderr
