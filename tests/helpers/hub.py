"""A bare git repository as the hub and real clones of it, each a zmem workspace; `zmem sync` and
friends run as real processes."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.workspace import git, zmem_proc


def zmem(*args, ok=True) -> subprocess.CompletedProcess:
    proc = zmem_proc(*args)
    if ok:
        assert proc.returncode == 0, f"zmem {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc


def sync(root: Path, *extra, ok=True):
    """`zmem sync --json`: its JSON (ok), or the finished process (ok=False)."""
    proc = zmem("-C", str(root), "sync", "--json", *extra, ok=ok)
    return json.loads(proc.stdout) if ok else proc


def clone(hub: Path, root: Path, name: str) -> Path:
    git(root.parent, "clone", "-q", str(hub), str(root))
    git(root, "config", "user.name", name)
    git(root, "config", "user.email", f"{name}@example.org")
    return root


def make_hub(tmp_path: Path, n: int) -> list[Path]:
    """A bare hub and n clones with hooks installed; the first clone's `zmem init` went out first."""
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    clones = []
    for i in range(n):
        root = clone(hub, tmp_path / f"clone{i}", f"agent{i}")
        zmem("init", str(root))
        if i == 0:
            out = sync(root)
            assert out["pushed"] and {".gitattributes", "zmem.toml", "MEMORY.md"} <= set(out["outgoing"]["files"])
        clones.append(root)
    return clones


def today_log(root: Path) -> str:
    return next((root / "memory").glob("2*.md")).read_text(encoding="utf-8")


def no_conflict_markers(root: Path) -> bool:
    """No commit on any branch ever added a line starting with a conflict marker."""
    patch = git(root, "log", "-p", "--all")
    return not any(line[1:].startswith(("<<<<<<<", ">>>>>>>")) for line in patch.splitlines() if line.startswith("+"))


def assert_converged(clones: list[Path], notes: list[str]) -> None:
    """Every clone at one HEAD, holding each note exactly once, no conflict markers ever committed,
    and its index at its HEAD."""
    head = git(clones[0], "rev-parse", "HEAD")
    for root in clones:
        assert git(root, "rev-parse", "HEAD") == head
        text = today_log(root)
        for note in notes:
            assert text.count(note) == 1, (root, note, text)
        assert no_conflict_markers(root)
        st = json.loads(zmem("-C", str(root), "status", "--json").stdout)
        assert not st["stale"] and st["indexed_commit"] == head and not st["dirty"], st
