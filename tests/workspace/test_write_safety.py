"""Writes never leave the workspace: a symlinked memory/, daily log, bank/ or entity page is refused
(exit 1, a hint, nothing written anywhere) by `zmem append`, MCP memory_append, `zmem reflect`,
`zmem init` and `zmem demo`, as reads through symlinks already are."""
from __future__ import annotations

import asyncio
import datetime as dt
import os
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, write, zmem_proc


def _tree(d: Path) -> dict[str, bytes]:
    """Every file below d with its bytes (symlinks as their target), to see that nothing changed."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(d):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(d))
            if p.is_symlink():
                out[rel] = b"-> " + os.readlink(p).encode()
            elif p.is_file():
                out[rel] = p.read_bytes()
    return out


def _refused(res, link: str) -> None:
    assert res.returncode == 1, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert lines[0].startswith(f"zmem: refusing to write through a symlink: {link} -> "), res.stderr
    assert lines[1].startswith("hint: ") and "replace the symlink" in lines[1], res.stderr
    assert "Traceback" not in res.stderr


def _today() -> str:
    return dt.date.today().isoformat()


@pytest.fixture
def outside(tmp_path) -> Path:
    d = tmp_path / "elsewhere"
    d.mkdir()
    (d / "keep.md").write_text("# not memory\n")
    return d


def test_append_refuses_a_symlinked_memory_dir(ws, outside):
    os.rename(ws / "memory", ws / "memory.real")
    os.symlink(outside, ws / "memory")
    before, head = _tree(outside), git(ws, "rev-parse", "HEAD")
    res = zmem_proc("-C", str(ws), "append", "a note that must not leave the workspace")
    _refused(res, "memory")
    assert _tree(outside) == before and not (outside / f"{_today()}.md").exists()
    assert git(ws, "rev-parse", "HEAD") == head
    # --no-commit and --json take the same path
    _refused(zmem_proc("-C", str(ws), "append", "--no-commit", "--json", "x"), "memory")
    assert _tree(outside) == before


@pytest.mark.slow
def test_append_refuses_a_symlinked_daily_log(ws, outside):
    target = outside / "victim.md"
    target.write_text("# victim\n")
    os.symlink(target, ws / "memory" / f"{_today()}.md")
    res = zmem_proc("-C", str(ws), "append", "--retain", "W", "--entity", "Peter", "Moved to Porto")
    _refused(res, f"memory/{_today()}.md")
    assert target.read_text() == "# victim\n"
    # a dangling link (to a file that does not exist yet) is no different
    (ws / "memory" / f"{_today()}.md").unlink()
    os.symlink(outside / "new.md", ws / "memory" / f"{_today()}.md")
    _refused(zmem_proc("-C", str(ws), "append", "x"), f"memory/{_today()}.md")
    assert not (outside / "new.md").exists()


def test_append_is_refused_when_memory_becomes_a_symlink_after_the_check(ws, outside, monkeypatch):
    """The race: memory/ swapped for a symlink between the check and the write. The write itself
    opens memory/ without following symlinks, so the note cannot land outside."""
    from zmem.index import append as append_mod
    from zmem.errors import WorkspaceError
    from zmem.workspace.core import find_workspace
    checked = append_mod._check_can_write

    def check_then_swap(repo, root, rel, commit):
        checked(repo, root, rel, commit)
        os.rename(ws / "memory", ws / "memory.real")
        os.symlink(outside, ws / "memory")
    monkeypatch.setattr(append_mod, "_check_can_write", check_then_swap)
    with pytest.raises(WorkspaceError, match="refusing to write through a symlink: memory -> "):
        append_mod.append(find_workspace(ws), "raced note", commit=False)
    assert _tree(outside) == {"keep.md": b"# not memory\n"}


def test_append_is_refused_when_the_log_becomes_a_symlink_after_the_check(ws, outside, monkeypatch):
    from zmem.index import append as append_mod
    from zmem.errors import WorkspaceError
    from zmem.workspace.core import find_workspace
    target = outside / "victim.md"
    target.write_text("# victim\n")
    checked = append_mod._check_can_write

    def check_then_swap(repo, root, rel, commit):
        checked(repo, root, rel, commit)
        os.symlink(target, root / rel)
    monkeypatch.setattr(append_mod, "_check_can_write", check_then_swap)
    with pytest.raises(WorkspaceError, match=f"refusing to write through a symlink: memory/{_today()}.md -> "):
        append_mod.append(find_workspace(ws), "raced note", commit=False)
    assert target.read_text() == "# victim\n"


@pytest.mark.slow
def test_mcp_memory_append_refuses_a_symlinked_memory_dir(ws, outside):
    pytest.importorskip("mcp")
    from helpers.mcp_client import error, session
    os.rename(ws / "memory", ws / "memory.real")
    os.symlink(outside, ws / "memory")
    before = _tree(outside)

    async def go():
        async with session(ws) as s:
            return await error(s, "memory_append", text="an agent's note"), \
                await error(s, "memory_append", text="Prefers tea", retain="O", entities=["Peter"], confidence=0.7)
    for text in asyncio.run(go()):
        assert "refusing to write through a symlink: memory -> " in text and "replace the symlink" in text, text
    assert _tree(outside) == before


@pytest.mark.slow
def test_reflect_refuses_a_symlinked_entity_dir_and_writes_nothing(ws, outside):
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Retain\n\n- W @Peter: Moved to Porto.\n"
          "- O(c=0.8) @Peter: Likes short answers.\n")
    (ws / "bank/entities/.gitkeep").unlink()
    os.rmdir(ws / "bank/entities")
    os.symlink(outside, ws / "bank" / "entities")
    commit_all(ws, "facts, and bank/entities elsewhere")
    before, opinions, head = _tree(outside), (ws / "bank/opinions.md").read_bytes(), git(ws, "rev-parse", "HEAD")
    for extra in ([], ["--dry-run"], ["--no-commit"]):
        res = zmem_proc("-C", str(ws), "reflect", *extra)
        _refused(res, "bank/entities")
    assert _tree(outside) == before and not (outside / "Peter.md").exists()
    assert (ws / "bank/opinions.md").read_bytes() == opinions  # not even the other files: all or nothing
    assert git(ws, "rev-parse", "HEAD") == head


def test_reflect_refuses_a_symlinked_opinions_file(ws, outside):
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Retain\n\n- O(c=0.8) @Peter: Likes short answers.\n")
    target = outside / "opinions.md"
    target.write_text("# Opinions\n")
    (ws / "bank/opinions.md").unlink()
    os.symlink(target, ws / "bank/opinions.md")
    commit_all(ws, "facts")
    _refused(zmem_proc("-C", str(ws), "reflect"), "bank/opinions.md")
    assert target.read_text() == "# Opinions\n" and not (ws / "bank/entities/Peter.md").exists()


def test_reflect_still_writes_real_pages(ws):
    """The descriptor-relative writer keeps what _write did: pages created, a page's mode kept."""
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Retain\n\n- W @Peter: Moved to Porto.\n")
    write(ws, "bank/entities/Peter.md", "# Peter\n\nMy own words.\n")
    os.chmod(ws / "bank/entities/Peter.md", 0o640)
    commit_all(ws, "facts")
    res = zmem_proc("-C", str(ws), "reflect")
    assert res.returncode == 0, res.stderr
    page = ws / "bank/entities/Peter.md"
    assert "My own words." in page.read_text() and "Moved to Porto" in page.read_text()
    assert page.stat().st_mode & 0o777 == 0o640
    assert not list((ws / "bank/entities").glob(".zmem-*.tmp"))


def test_init_writes_nothing_through_symlinked_dirs(tmp_path, outside):
    root = tmp_path / "existing"
    root.mkdir()
    os.symlink(outside, root / "memory")
    other = tmp_path / "bank-elsewhere"
    other.mkdir()
    os.symlink(other, root / "bank")
    gi = tmp_path / "shared.gitignore"
    gi.write_text("*.log\n")
    os.symlink(gi, root / ".gitignore")
    res = zmem_proc("init", "--no-hooks", str(root))
    assert res.returncode == 0, res.stderr
    assert _tree(outside) == {"keep.md": b"# not memory\n"} and _tree(other) == {}
    assert gi.read_text() == "*.log\n"
    assert "warning: memory is a symlink (to " in res.stderr and "memory/.gitkeep not created" in res.stderr
    assert "warning: bank is a symlink (to " in res.stderr and "bank/world.md" in res.stderr
    assert "warning: .gitignore is a symlink" in res.stderr
    assert (root / "MEMORY.md").is_file() and (root / "zmem.toml").is_file()  # the rest is created


@pytest.mark.slow
def test_demo_does_not_overwrite_through_a_symlinked_memory_file(tmp_path, outside):
    root = tmp_path / "demo"
    assert zmem_proc("demo", str(root)).returncode == 0
    target = outside / "precious.md"
    target.write_text("precious\n")
    (root / "MEMORY.md").unlink()
    os.symlink(target, root / "MEMORY.md")
    res = zmem_proc("demo", str(root))  # a demo made before is reused: nothing is written, through a link or not
    assert res.returncode == 0, res.stderr
    assert target.read_text() == "precious\n"


@pytest.mark.slow
def test_demo_never_writes_into_a_workspace_and_a_rerun_keeps_the_users_lines(tmp_path):
    ws = tmp_path / "mem"
    assert zmem_proc("init", "--no-hooks", str(ws)).returncode == 0
    (ws / "MEMORY.md").write_text("# Memory\n\n- my curated line\n")
    (ws / "draft.txt").write_text("not yet committed\n")
    before, commits = _tree(ws), git(ws, "rev-list", "--all")
    res = zmem_proc("demo", str(ws))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    err = res.stderr.splitlines()
    assert err[0] == f"zmem: {ws} exists and is not empty: it is a zmem workspace, not a demo (the demo would " \
                     "overwrite its MEMORY.md and commit its files)"
    assert err[1].startswith("hint: pass a new directory")
    assert _tree(ws) == before and git(ws, "rev-list", "--all") == commits
    demo = tmp_path / "demo"
    assert zmem_proc("demo", str(demo)).returncode == 0
    with open(demo / "MEMORY.md", "a") as f:
        f.write("- a line the user added\n")
    head = git(demo, "rev-parse", "HEAD")
    res = zmem_proc("demo", str(demo))
    assert res.returncode == 0 and "(existing daily logs" in res.stdout, res.stderr
    assert (demo / "MEMORY.md").read_text().endswith("- a line the user added\n")
    assert git(demo, "rev-parse", "HEAD") == head


@pytest.mark.slow
def test_a_symlinked_state_dir_is_refused_and_nothing_is_written_where_it_points(ws, tmp_path, outside):
    """.gitignore's `.zmem/` does not cover a symlink, so a repository can carry a committed `.zmem`
    link; every command refuses it rather than write an index, lock or socket where it points."""
    clone = tmp_path / "clone"
    clone.mkdir()
    git(clone, "init", "-q")
    write(clone, "memory/2025-11-24.md", "- a note\n")
    os.symlink(outside, clone / ".zmem")
    commit_all(clone, "a repository that carries a .zmem link")
    for args in (["init", "--no-hooks", str(clone)], ["-C", str(clone), "recall", "note"],
                 ["-C", str(clone), "status"], ["-C", str(clone), "index"]):
        res = zmem_proc(*args)
        assert res.returncode == 1, (args, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert lines[0] == f"zmem: {clone}/.zmem is a symlink (to {outside}); zmem keeps its index only in a real .zmem/ directory"
        assert lines[1].startswith("hint: remove the link") and "Traceback" not in res.stderr
    assert _tree(outside) == {"keep.md": b"# not memory\n"}
    os.unlink(clone / ".zmem")
    res = zmem_proc("-C", str(clone), "recall", "note")
    assert res.returncode == 0 and "memory/2025-11-24.md#L1" in res.stdout, res.stderr
