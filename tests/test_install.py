"""Hints that name an install command work for how zmem was installed (zmem.install): a checkout
install is told to install the checkout with the extra, an index install `zmem[extra]`, and the pip
is always the running interpreter's. Real dist-info directories, read by real Python processes."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALL = ROOT / "zmem" / "install.py"


def _site(tmp_path: Path, direct_url: dict | None) -> Path:
    """A site directory holding a zmem package (its install module) and a zmem dist-info, with
    `direct_url` as its PEP 610 direct_url.json (none: installed from an index)."""
    site = tmp_path / "site"
    (site / "zmem").mkdir(parents=True)
    (site / "zmem" / "__init__.py").write_text("")
    (site / "zmem" / "install.py").write_text(INSTALL.read_text())
    info = site / "zmem-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zmem\nVersion: 0.1.0\n")
    (info / "RECORD").write_text("zmem/__init__.py,,\nzmem/install.py,,\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return site


def _hint(site: Path, extra: str = "semantic") -> str:
    code = (f"import sys; sys.path.insert(0, {str(site)!r}); import zmem.install as i; "
            f"assert i.__file__.startswith({str(site)!r}); print(i.pip_install({extra!r}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_an_index_install_is_told_to_install_zmem_with_the_extra_by_this_interpreters_pip(tmp_path):
    assert _hint(_site(tmp_path, None)) == f"{shlex.quote(sys.executable)} -m pip install 'zmem[semantic]'"


def test_a_checkout_install_is_told_to_install_the_checkout_with_the_extra(tmp_path):
    src = tmp_path / "my src"
    assert _hint(_site(tmp_path, {"url": src.as_uri(), "dir_info": {}}), "mcp") == \
        f"{shlex.quote(sys.executable)} -m pip install '{src}[mcp]'"
    editable = tmp_path / "editable"
    editable.mkdir()
    assert _hint(_site(editable, {"url": src.as_uri(), "dir_info": {"editable": True}}), "local") == \
        f"{shlex.quote(sys.executable)} -m pip install -e '{src}[local]'"


def test_a_wheel_or_git_install_is_told_to_add_the_extra_to_the_same_source(tmp_path):
    wheel = "file:///wheels/zmem-0.1.0-py3-none-any.whl"
    assert _hint(_site(tmp_path, {"url": wheel, "archive_info": {}})) == \
        f"{shlex.quote(sys.executable)} -m pip install 'zmem[semantic] @ {wheel}'"
    vcs = tmp_path / "vcs"
    vcs.mkdir()
    git = {"url": "https://example.org/zmem.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}
    assert _hint(_site(vcs, git)) == \
        f"{shlex.quote(sys.executable)} -m pip install 'zmem[semantic] @ git+https://example.org/zmem.git@abc123'"


def test_the_running_checkout_install_gets_a_command_that_installs_this_checkout(ws):
    """The test venv installs this checkout (editable): `zmem mcp` without the SDK says to install
    this checkout with the extra, with the venv's own pip, and that command names a real project."""
    code = ("import sys; sys.modules['mcp'] = None; sys.argv = ['zmem', '-C', sys.argv[1], 'mcp']; "
            "from zmem.cli.entry import main; main()")
    proc = subprocess.run([sys.executable, "-c", code, str(ws)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    hint = proc.stderr.splitlines()[-1]
    assert hint == f"hint: {shlex.quote(sys.executable)} -m pip install -e '{ROOT}[mcp]'", proc.stderr
    target = shlex.split(hint)[-1]
    assert re.fullmatch(r".*\[mcp\]", target) and (Path(target[:-len("[mcp]")]) / "pyproject.toml").is_file()


def test_no_hint_in_the_package_names_an_install_command_of_its_own():
    """Every install hint comes from zmem.install (grep for the forms that fail from a checkout); the
    OpenClaw plugin, which cannot ask zmem.install, names none either."""
    sources = [*(ROOT / "zmem").rglob("*.py"), *(ROOT / "integrations").rglob("*.mjs")]
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in sources if p != INSTALL
                 for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if re.search(r"pip install\s+(-U\s+)?'?zmem\[", line)]
    assert offenders == []


def test_an_environment_without_pip_is_told_how_to_get_the_extra_there_anyway(tmp_path):
    """A venv made without pip (`uv venv`, `venv --without-pip`): `python -m pip` would fail there."""
    import os
    import shutil
    from helpers.venv import other_venv
    python = other_venv(tmp_path / "no pip", hide=("pip",))
    env = {**os.environ, "PATH": os.environ.get("PATH", "")}
    code = "from zmem.install import pip_install; print(pip_install('semantic'))"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    exe, target = shlex.quote(str(python)), f"-e '{ROOT}[semantic]'"
    expected = (f"uv pip install --python {exe} {target}" if shutil.which("uv", path=env["PATH"]) else
                f"{exe} -m ensurepip && {exe} -m pip install {target}")
    assert out.stdout.strip() == expected
