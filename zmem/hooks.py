"""Installing zmem's git hooks the way pre-commit does.

- Hooks go into the repository's *common* git directory, so linked worktrees share them.
- Each shim carries an ID line; zmem only ever overwrites or removes files that carry it.
- A foreign hook already in place is moved to `NAME.zmem-prev` and still runs first (same
  arguments and stdin); its exit status becomes the hook's. Uninstall puts it back.
- When `core.hooksPath` is set, zmem refuses to install: that directory belongs to another tool
  (husky, a shared hooks repo). Every zmem command catches up by itself, so nothing breaks.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from zmem.errors import ZmemError

HOOK_NAMES = ("post-commit", "post-merge", "post-checkout", "post-rewrite")
HOOK_ID = "# zmem-hook-id: 3f1c6f0a-zmem"
PREV_SUFFIX = ".zmem-prev"


def _template() -> str:
    here = Path(__file__).parent
    for candidate in (here / "_hooks" / "zmem-hook.sh", here.parent / "hooks" / "zmem-hook.sh"):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise ZmemError("zmem's hook template is missing from this installation", hint="reinstall zmem")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def hooks_dir(repo_path: Path, *, for_install: bool = False) -> Path:
    """The hooks directory of the repository holding repo_path (shared by its worktrees)."""
    repo_path = Path(repo_path)
    proc = _git(repo_path, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if proc.returncode:
        raise ZmemError(f"not a git repository: {repo_path}", hint="run `zmem init` first")
    configured = _git(repo_path, "config", "--get", "core.hooksPath").stdout.strip()
    if configured and for_install:
        raise ZmemError(
            f"core.hooksPath is set to {configured}; zmem will not install hooks into another tool's directory",
            hint="add `zmem hook post-commit` (likewise post-merge, post-checkout, post-rewrite) to the hooks that "
                 "tool runs, or `git config --unset core.hooksPath`; without hooks every zmem command still catches up")
    if configured:
        path = Path(configured).expanduser()
        return path if path.is_absolute() else (repo_path / path)
    return Path(proc.stdout.strip()) / "hooks"


def _is_ours(path: Path) -> bool:
    try:
        return not path.is_symlink() and path.is_file() and HOOK_ID in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _shim(name: str, python: str) -> str:
    quoted = python.replace("'", "'\"'\"'")
    return _template().replace("@HOOK@", name).replace("@PYTHON@", quoted)


def install(repo_path: Path, *, python: str | None = None) -> list[str]:
    """Install (or upgrade) zmem's hooks. Idempotent; never loses a foreign hook."""
    directory = hooks_dir(repo_path, for_install=True)
    directory.mkdir(parents=True, exist_ok=True)
    python = python or sys.executable
    installed = []
    for name in HOOK_NAMES:
        path = directory / name
        prev = directory / (name + PREV_SUFFIX)
        content = _shim(name, python)
        if (path.exists() or path.is_symlink()) and not _is_ours(path):
            if prev.exists() or prev.is_symlink():
                # Both a foreign hook and a saved one: keep both rather than choose; never overwrite.
                n = 1
                while (directory / f"{name}{PREV_SUFFIX}.{n}").exists():
                    n += 1
                os.rename(path, directory / f"{name}{PREV_SUFFIX}.{n}")
            else:
                os.rename(path, prev)
        if not (path.is_file() and path.read_text(encoding="utf-8") == content):
            tmp = directory / f".{name}.zmem-tmp"
            tmp.write_text(content, encoding="utf-8")
            os.chmod(tmp, 0o755)
            os.replace(tmp, path)
        installed.append(name)
    return installed


def uninstall(repo_path: Path) -> list[str]:
    """Remove zmem's hooks only, restoring the hooks they had moved aside."""
    directory = hooks_dir(repo_path)
    removed = []
    for name in HOOK_NAMES:
        path = directory / name
        prev = directory / (name + PREV_SUFFIX)
        if _is_ours(path):
            path.unlink()
            removed.append(name)
            if prev.exists() or prev.is_symlink():
                os.rename(prev, path)
    return removed


def status(repo_path: Path, *, python: str | None = None) -> dict[str, str]:
    """Per hook: installed | installed (chains previous hook) | outdated | foreign | missing."""
    try:
        directory = hooks_dir(repo_path, for_install=True)
    except ZmemError as e:
        if "core.hooksPath" in e.message:
            return {name: "not installed (core.hooksPath is set)" for name in HOOK_NAMES}
        raise
    out = {}
    for name in HOOK_NAMES:
        path = directory / name
        if _is_ours(path):
            state = "installed" if path.read_text(encoding="utf-8") == _shim(name, python or sys.executable) else "outdated"
            prev = directory / (name + PREV_SUFFIX)
            if state == "installed" and (prev.exists() or prev.is_symlink()):
                state = "installed (chains previous hook)"
            out[name] = state
        elif path.exists() or path.is_symlink():
            out[name] = "foreign"
        else:
            out[name] = "missing"
    return out
