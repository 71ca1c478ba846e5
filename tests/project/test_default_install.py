"""The install the README's "Try it" gives (`pip install .`, no extras): no numpy, no llama.cpp, no
gguf, no safetensors, no mcp. Optional packages are hidden from a subprocess by a directory on
PYTHONPATH whose stand-ins raise ModuleNotFoundError on import, as a missing package does."""
from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.workspace import commit_all, write, zmem_proc
from zmem.query.entities import duplicate_message, suspected_duplicates

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL = ("numpy", "llama_cpp", "gguf", "safetensors", "mcp")


def hiding(directory: Path, *modules: str) -> dict:
    """An environment in which `import M` fails for every M of modules (and this checkout is imported)."""
    for name in modules:
        write(directory, f"{name}/__init__.py",
              f"raise ModuleNotFoundError({f'No module named {name!r}'!r}, name={name!r})\n")
    path = [str(directory), str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = {"PYTHONPATH": os.pathsep.join(p for p in path if p)}
    for name in modules:  # the stand-ins work: the import fails in a subprocess with this environment
        proc = subprocess.run([sys.executable, "-c", f"import {name}"], env={**os.environ, **env},
                              capture_output=True, text=True)
        assert proc.returncode == 1 and "ModuleNotFoundError" in proc.stderr, proc.stderr
    return env


@pytest.fixture
def no_numpy(tmp_path) -> dict:
    return hiding(tmp_path / "hidden", "numpy")


@pytest.fixture
def demo_with_duplicates(tmp_path, no_numpy) -> Path:
    """`zmem demo` plus a day that spells two entities two ways, committed and indexed."""
    root = tmp_path / "demo"
    res = zmem_proc("demo", str(root), env=no_numpy)
    assert res.returncode == 0, res.stderr
    write(root, "memory/2025-11-29.md", "# 2025-11-29\n\n## Retain\n\n- W @Petter: Flew to @Marrakesh for the party.\n"
          "- W @Marrakech: Hot in late November.\n- W @Ana: Booked the riad.\n")
    commit_all(root, "memory: 2025-11-29")
    # doctor reads the index as it is (it does not catch up): index now, not whenever the hook's run ends
    res = zmem_proc("-C", str(root), "index", env=no_numpy)
    assert res.returncode == 0, res.stderr
    return root


EXPECTED = [duplicate_message("Marrakech", "Marrakesh", 88.9), duplicate_message("Peter", "Petter", 90.9)]


@pytest.mark.parametrize("args", [["entity", "Peter"], ["entity", "Petter", "--json"], ["reflect", "--dry-run"],
                                  ["reflect", "--no-commit"], ["doctor"]])
@pytest.mark.slow
def test_duplicate_entity_check_runs_without_numpy(demo_with_duplicates, no_numpy, args):
    res = zmem_proc("-C", str(demo_with_duplicates), *args, env=no_numpy)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "numpy" not in res.stdout + res.stderr
    found = [m for m in EXPECTED if m in res.stdout + res.stderr]
    if "--json" in args:
        assert json.loads(res.stdout)["suspected_duplicates"] == [["Peter", "Petter", 90.9]]
    elif args[0] == "entity":  # an entity page names its own look-alikes only
        assert found == [m for m in EXPECTED if f"@{args[1]} " in m]
    else:
        assert found == EXPECTED


def test_duplicate_pairs_are_every_pair_at_the_threshold():
    """The length-pruned search finds exactly the pairs an all-pairs comparison finds."""
    from rapidfuzz import fuzz

    from zmem.query.entities import Entity, _fold
    rng = random.Random(7)
    names = {"Peter", "Petter", "Zoë", "Zoe", "Ana", "Anna", "Wang-Wei", "Wang Wei", "Jo", "Joe", "Marrakech",
             "Marrakesh", "São-Paulo", "Sao Paulo"}
    while len(names) < 600:
        name = "".join(rng.choice(string.ascii_lowercase + "áé-") for _ in range(rng.randint(1, 14)))
        names |= {name, name + rng.choice("sxé"), name[1:]}
    entities = {n: Entity(key=n, name=n, page=None) for n in names}
    keys = sorted(entities)
    folded = {k: _fold(k).replace("-", " ") for k in keys}
    expected = []
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            score = fuzz.ratio(folded[a], folded[b])
            if score >= 88 and min(len(folded[a]), len(folded[b])) >= 3:
                expected.append((a, b, round(score, 1)))
    assert len(expected) > 50
    assert suspected_duplicates(entities) == expected


def _demo_next(tmp_path, argv0: str, cwd: Path, path_dirs: list[str]) -> tuple[str, dict]:
    """`zmem demo` started as argv0 from cwd with PATH = path_dirs: (its `next:` command, that env)."""
    env = {**os.environ, "PATH": os.pathsep.join(path_dirs)}
    proc = subprocess.run([argv0, "demo", str(tmp_path / "demo")], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    nexts = [line for line in proc.stdout.splitlines() if line.startswith("next: ")]
    assert len(nexts) == 1, proc.stdout
    return nexts[0][len("next: "):], env


def _works_as_written(command: str, env: dict, cwd: Path) -> None:
    proc = subprocess.run(["sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "memory/2025-11-24.md#L" in proc.stdout and "# 2025-11-24" in proc.stdout  # the recall, then the get


def _git_dir() -> str:
    import shutil
    return str(Path(shutil.which("git")).parent)


@pytest.mark.slow
def test_demo_next_command_works_after_the_try_it_install(tmp_path):
    """`.venv/bin/zmem demo DIR` with zmem not on PATH: the printed command runs this zmem by its path."""
    from helpers.workspace import zmem_exe
    exe = Path(zmem_exe())
    venv = exe.parent.parent
    command, env = _demo_next(tmp_path, str(exe.relative_to(venv.parent)), venv.parent, [_git_dir(), "/usr/bin", "/bin"])
    assert command.startswith(f"cd {tmp_path / 'demo'} && {exe} recall"), command
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _works_as_written(command, env, elsewhere)


@pytest.mark.slow
def test_demo_next_command_says_zmem_when_path_finds_this_zmem(tmp_path):
    from helpers.workspace import zmem_exe
    exe = Path(zmem_exe())
    command, env = _demo_next(tmp_path, "zmem", tmp_path, [str(exe.parent), _git_dir(), "/usr/bin", "/bin"])
    assert command == f'cd {tmp_path / "demo"} && zmem recall "Peter" && zmem get memory/2025-11-24.md'
    _works_as_written(command, env, tmp_path)


@pytest.mark.slow
def test_the_suite_collects_without_the_optional_packages(tmp_path):
    """`pip install -e '.[test]'` (no `local`, no `mcp` extra): modules that need them are skipped, never
    a collection error."""
    env = {**os.environ, **hiding(tmp_path / "hidden", *OPTIONAL)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-rs", "-p", "no:cacheprovider",
                           str(ROOT / "tests")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    skipped = {line.split("]", 1)[1].split(":", 1)[0].strip() for line in proc.stdout.splitlines()
               if line.startswith("SKIPPED")}
    assert {"test_local_embeddings.py", "test_mcp.py"} <= {Path(s).name for s in skipped}, proc.stdout


@pytest.mark.slow
def test_the_wheel_installs_the_man_pages(tmp_path):
    """`man zmem` and `git zmem --help` (= `man git-zmem`) after pip install: both pages are data files
    under share/man/man1, and git-zmem.1 shows zmem.1."""
    import zipfile
    pytest.importorskip("hatchling", reason="hatchling (the build backend, in the test extra) is not installed: "
                        "pip install -e '.[test]'")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("zmem-*.whl")
    with zipfile.ZipFile(wheel) as z:
        data = {Path(n).relative_to(Path(n).parts[0]).as_posix(): n for n in z.namelist() if ".data/" in n}
        assert set(data) >= {"data/share/man/man1/zmem.1", "data/share/man/man1/git-zmem.1"}, sorted(data)
        assert z.read(data["data/share/man/man1/zmem.1"]) == (ROOT / "man" / "zmem.1").read_bytes()
        assert z.read(data["data/share/man/man1/git-zmem.1"]).decode() == ".so man1/zmem.1\n"
