"""Installing zmem's git hooks the way pre-commit does.

- Hooks go into the repository's *common* git directory, so linked worktrees share them.
- Each shim carries an ID line; zmem only ever overwrites or removes files that carry it.
- A foreign hook already in place (any other file, a dangling symlink or a non-executable file
  included) is moved to `NAME.zmem-prev` and still runs first, with the same arguments and stdin;
  its exit status becomes the hook's. Uninstall puts it back.
- A `NAME.zmem-prev` is never overwritten. If a foreign hook sits at NAME *and* a different
  `NAME.zmem-prev` exists (something replaced zmem's shim after it had saved a hook), the shim
  could chain only one of them, so zmem leaves that hook alone: `install` leaves it out of its
  result and `status` reports it "foreign".
- When `core.hooksPath` is set, zmem refuses to install: that directory belongs to another tool
  (husky, a shared hooks repo), as pre-commit also refuses. Every zmem command catches up by
  itself, so nothing breaks; `zmem hook NAME` can be added to that tool's hooks.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from zmem.errors import ZmemError
from zmem.git.gitcmd import run_git

HOOK_NAMES = ("post-commit", "post-merge", "post-checkout", "post-rewrite")
HOOK_ID = "# zmem-hook-id: 3f1c6f0a-zmem"
PREV_SUFFIX = ".zmem-prev"
HOOKS_PATH_STATE = "not installed (core.hooksPath is set)"


def _template() -> str:
    here = Path(__file__).parent.parent  # the zmem package: the wheel ships the template in zmem/_hooks
    for candidate in (here / "_hooks" / "zmem-hook.sh", here.parent / "hooks" / "zmem-hook.sh"):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise ZmemError("zmem's hook template is missing from this installation", hint="reinstall zmem")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return run_git(list(args), cwd=cwd, capture_output=True, text=True)
    except OSError as e:  # cwd is not a directory
        raise ZmemError(f"cannot run git in {cwd}: {e}", hint="check that the workspace directory exists") from e


def _common_hooks_dir(repo_path: Path) -> Path:
    """Where zmem installs: <common git dir>/hooks, whatever core.hooksPath says."""
    proc = _git(repo_path, "rev-parse", "--git-common-dir")
    if proc.returncode:
        raise ZmemError(f"not a git repository: {repo_path}", hint="run `zmem init` first")
    return (Path(repo_path) / proc.stdout.rstrip("\n")).resolve() / "hooks"  # relative to cwd, or absolute


def _hooks_path_setting(repo_path: Path) -> str | None:
    """core.hooksPath from any config level (a global one applies to this repository too)."""
    proc = _git(repo_path, "config", "--get", "core.hooksPath")
    return proc.stdout.rstrip("\n") if proc.returncode == 0 else None


def hooks_dir(repo_path: Path) -> Path:
    """The hooks directory of the repository holding repo_path (shared by its worktrees).

    Raises ZmemError when core.hooksPath is set: zmem does not write into another tool's hooks."""
    directory = _common_hooks_dir(repo_path)
    configured = _hooks_path_setting(repo_path)
    if configured is not None:
        raise ZmemError(
            f"core.hooksPath is set to {configured}; zmem will not install hooks there",
            hint="add `zmem hook post-commit` (likewise post-merge, post-checkout, post-rewrite) to the hooks "
                 "your hook manager runs (e.g. a husky or lefthook post-commit script), or "
                 "`git config --unset core.hooksPath`; without hooks every zmem command still catches up")
    return directory


def _is_ours(path: Path) -> bool:
    try:
        return not path.is_symlink() and path.is_file() and HOOK_ID.encode() in path.read_bytes()
    except OSError:
        return False


def _is_current(path: Path, content: str) -> bool:
    """Ours, byte-identical to what install would write now, and executable (git skips it otherwise)."""
    return _is_ours(path) and path.read_bytes() == content.encode() and os.access(path, os.X_OK)


def _same(a: Path, b: Path) -> bool:
    """Two hook files with the same content (symlinks compare by target)."""
    try:
        if a.is_symlink() or b.is_symlink():
            return a.is_symlink() and b.is_symlink() and os.readlink(a) == os.readlink(b)
        return a.is_file() and b.is_file() and a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def _shim(name: str, python: str) -> str:
    quoted = python.replace("'", "'\"'\"'")  # the template puts it inside '...'
    return _template().replace("@HOOK@", name).replace("@PYTHON@", quoted)


def _shim_python(path: Path) -> str | None:
    """The interpreter a shim runs, as install wrote it into the ZMEM_PYTHON line."""
    try:
        m = re.search(r"^ZMEM_PYTHON='((?:[^']|'\"'\"')*)'$", path.read_text(encoding="utf-8"), re.M)
    except (OSError, UnicodeDecodeError):
        return None
    return m.group(1).replace("'\"'\"'", "'") if m else None


def _interpreter_problem(python: str) -> str | None:
    """Why a shim that runs `python -P -m zmem.hookrun` does not run zmem (a hook state), or None."""
    if not os.path.exists(python) or not os.access(python, os.X_OK):
        what = "no longer exists" if not os.path.exists(python) else "is not executable"
        # the shim then runs `zmem hook` from PATH, if there is one
        instead = "the hook runs `zmem` from PATH instead" if shutil.which("zmem") else "the hook does nothing"
        return f"interpreter missing: {python} {what} ({instead})"
    try:  # the shim's own flags: -P needs Python 3.11, and that environment must still hold zmem
        proc = subprocess.run([python, "-P", "-c", "import importlib.util, sys; "
                               "sys.exit(importlib.util.find_spec('zmem.hookrun') is None)"],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:  # a slow machine is no broken hook
        return None
    except OSError as e:
        return f"interpreter broken: {python} cannot run ({e.strerror or e}; the hook does nothing)"
    return None if proc.returncode == 0 else f"interpreter broken: {python} cannot run zmem (the hook does nothing)"


def interpreters(repo_path: Path) -> dict[str, list[str]]:
    """The interpreters zmem's installed shims run (as `install` baked them in), each with its hooks;
    none with core.hooksPath set (git then runs no shim of zmem's)."""
    if _hooks_path_setting(repo_path) is not None:
        return {}
    directory = _common_hooks_dir(repo_path)
    out: dict[str, list[str]] = {}
    for name in HOOK_NAMES:
        path = directory / name
        python = _shim_python(path) if _is_ours(path) else None
        if python:
            out.setdefault(python, []).append(name)
    return out


def cannot_import(python: str, modules: list[str]) -> list[str] | None:
    """Which of modules the interpreter `python` cannot import (found, not imported), as a hook runs it
    (`-P`); None when that cannot be told (the interpreter is gone or broken: status says so)."""
    code = ("import importlib.util as u, sys\n"
            "def gone(m):\n"
            "    try:\n"
            "        return u.find_spec(m) is None\n"
            "    except (ImportError, ValueError):\n"
            "        return True\n"
            "print(' '.join(m for m in sys.argv[1:] if gone(m)))")
    try:
        proc = subprocess.run([python, "-P", "-c", code, *modules], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.split() if proc.returncode == 0 else None


def install(repo_path: Path, *, python: str | None = None) -> list[str]:
    """Install or upgrade zmem's hooks; returns the names now holding zmem's shim.

    Idempotent; never loses a foreign hook (see the module docstring)."""
    directory = hooks_dir(repo_path)
    directory.mkdir(parents=True, exist_ok=True)
    python = python or sys.executable
    installed = []
    for name in HOOK_NAMES:
        path, prev = directory / name, directory / (name + PREV_SUFFIX)
        content = _shim(name, python)
        if os.path.lexists(path) and not _is_ours(path):
            if os.path.lexists(prev) and not _same(path, prev):
                continue  # two foreign hooks, one chain slot: stopping either from running would lose it
            os.replace(path, prev)  # (an identical copy of the saved hook just replaces it)
        if not _is_current(path, content):
            tmp = directory / f".{name}.zmem-tmp"
            tmp.write_text(content, encoding="utf-8")
            os.chmod(tmp, 0o755)
            os.replace(tmp, path)  # atomic: git never runs a half-written hook
        installed.append(name)
    return installed


def uninstall(repo_path: Path) -> list[str]:
    """Remove zmem's hooks only and put back the hooks they had moved aside; returns the names changed.

    Works in the common hooks directory even when core.hooksPath is set (zmem installs nowhere else)."""
    directory = _common_hooks_dir(repo_path)
    changed = []
    for name in HOOK_NAMES:
        path, prev = directory / name, directory / (name + PREV_SUFFIX)
        if _is_ours(path):
            path.unlink()
            changed.append(name)
        # Also when the shim was deleted by hand: a saved hook nobody runs is a lost hook.
        if not os.path.lexists(path) and os.path.lexists(prev):
            os.replace(prev, path)
            if name not in changed:
                changed.append(name)
    return changed


def status(repo_path: Path, *, python: str | None = None) -> dict[str, str]:
    """Per hook: installed | installed (chains previous hook) | outdated | foreign | missing.

    A shim this zmem would write but for another interpreter (installed from another environment)
    is installed too: "installed (runs PYTHON)", or "interpreter missing: …" / "interpreter
    broken: …" when that interpreter is gone or cannot run zmem any more.
    With core.hooksPath set, every hook is "not installed (core.hooksPath is set)"."""
    directory = _common_hooks_dir(repo_path)
    if _hooks_path_setting(repo_path) is not None:
        return {name: HOOKS_PATH_STATE for name in HOOK_NAMES}
    python = python or sys.executable
    out = {}
    problems: dict[str, str | None] = {}  # interpreter -> _interpreter_problem, checked once
    for name in HOOK_NAMES:
        path, prev = directory / name, directory / (name + PREV_SUFFIX)
        if _is_ours(path):
            runs = python if _is_current(path, _shim(name, python)) else _shim_python(path)
            if runs is None or not _is_current(path, _shim(name, runs)):
                out[name] = "outdated"
                continue
            if runs != python and runs not in problems:
                problems[runs] = _interpreter_problem(runs)
            problem = problems.get(runs)
            notes = [f"runs {runs}"] if runs != python else []
            if os.access(prev, os.X_OK):  # what the shim checks before running it
                notes.append("chains previous hook")
            out[name] = problem or "installed" + (f" ({'; '.join(notes)})" if notes else "")
        elif os.path.lexists(path):
            out[name] = "foreign"
        else:
            out[name] = "missing"
    return out
