"""`zmem append` when something fails: before the note is written it is an error (exit 1, a message
naming the path and the cause, a hint, nothing left behind); after it is written (committed or not)
the append has happened: exit 0, its JSON, and the problem as a warning — an agent told the append
failed would write the note again. Real git repositories, the CLI as a real process, the MCP SDK
client against a real `zmem mcp`."""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, write, zmem_exe, zmem_proc


TODAY = f"memory/{dt.date.today().isoformat()}.md"


def append_ok(root: Path, *args: str, **kw) -> tuple[dict, str]:
    """`zmem append … --json` as a process: it must succeed; (its JSON, its stderr)."""
    proc = zmem_proc("-C", str(root), "append", *args, "--json", **kw)
    assert proc.returncode == 0, proc.stderr
    assert "zmem:" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def committed_text(root: Path, rel: str) -> str:
    return git(root, "show", f"HEAD:{rel}")


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "memory").iterdir() if p.name.startswith(".zmem-"))


@pytest.mark.slow
def test_a_corrupt_index_is_a_warning_once_the_note_is_committed(ws):
    assert zmem_proc("-C", str(ws), "index").returncode == 0
    os.truncate(ws / ".zmem" / "index.sqlite", 8192)  # a torn copy, a bad disk
    out, err = append_ok(ws, "Booked the dentist for Ana")
    assert out["committed"] and out["commit"] == git(ws, "rev-parse", "HEAD")
    assert "- Booked the dentist for Ana" in committed_text(ws, out["path"])
    warning = next(w for w in out["warnings"] if "not searchable yet" in w)
    assert "saved and committed" in warning and out["citation"] in warning and "zmem index --full" in warning
    assert f"warning: {warning}" in err
    # what the warning says to do brings it back
    assert zmem_proc("-C", str(ws), "index", "--full").returncode == 0
    found = json.loads(zmem_proc("-C", str(ws), "recall", "dentist Ana", "--json").stdout)
    assert found["results"][0]["path"] == out["path"] and "dentist" in found["results"][0]["snippet"]


@pytest.mark.slow
def test_an_index_lock_that_is_a_directory_is_no_crash(ws):
    lock = ws / ".zmem" / "lock"
    if lock.exists():
        lock.unlink()
    lock.mkdir()
    proc = zmem_proc("-C", str(ws), "append", "Ana likes plums", "--json")
    assert proc.returncode in (0, 1), proc.stderr
    if proc.returncode == 0:  # the note is written: what the index does is a warning
        out = json.loads(proc.stdout)
        assert out["committed"] and "- Ana likes plums" in committed_text(ws, out["path"])
        assert any("not searchable yet" in w and ".zmem/lock" in w for w in out["warnings"])
    else:  # refused before anything was written (.zmem/ is checked first), with a hint
        first, hint = proc.stderr.splitlines()
        assert first.startswith("zmem: ") and ".zmem/lock" in first and hint.startswith("hint: ")
        assert not (ws / TODAY).exists() and git(ws, "status", "--porcelain") == ""


@pytest.mark.slow
def test_a_read_only_index_is_a_warning(unprivileged):
    root, as_user = unprivileged
    as_user(zmem_exe(), "-C", str(root), "index")
    os.chmod(root / ".zmem" / "index.sqlite", 0o444)
    proc = as_user(zmem_exe(), "-C", str(root), "append", "the quince tree flowered", "--json", check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    shown = as_user("git", "-C", str(root), "show", f"HEAD:{out['path']}").stdout
    assert out["committed"] and "quince" in shown
    assert any("not searchable yet" in w for w in out["warnings"]), out["warnings"]


def _file_size_limit(limit: int):
    def preexec():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


def _zmem_limited(root: Path, limit: int, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([zmem_exe(), "-C", str(root), "append", *args], capture_output=True, text=True,
                          preexec_fn=_file_size_limit(limit), timeout=120)


@pytest.mark.slow
def test_a_full_disk_after_the_note_is_written_leaves_it_written_and_says_so(ws):
    # enough tracked files that git's index outgrows the limit: the note (a new small log) fits,
    # git's commit and the index's writes do not
    for i in range(40):
        write(ws, f"bank/page-{i:02d}.md", f"# page {i}\n")
    commit_all(ws, "pages")
    assert zmem_proc("-C", str(ws), "index").returncode == 0
    proc = _zmem_limited(ws, 1024, "the plum jam recipe", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert not out["committed"] and out["commit"] is None
    assert "- the plum jam recipe" in (ws / TODAY).read_text()
    assert any("written but not committed" in w for w in out["warnings"]), out
    assert any("not searchable yet" in w and "saved" in w for w in out["warnings"]), out
    assert "Traceback" not in proc.stderr and "zmem:" not in proc.stderr


@pytest.mark.slow
def test_a_full_disk_before_the_note_is_written_is_an_error_that_leaves_nothing_behind(ws):
    log = write(ws, TODAY, f"# {TODAY[7:17]}\n\n## Notes\n\n" + "".join(f"- note {i} " + "x" * 60 + "\n"
                                                                        for i in range(60)))
    commit_all(ws, "today")
    before = log.read_bytes()
    for limit in (0, 1024):  # nothing fits; a part of the new file fits
        proc = _zmem_limited(ws, limit, "the plum jam recipe")
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.startswith(f"zmem: cannot write {TODAY}: File too large; the note was not written\n")
        assert "hint:" in proc.stderr and "ulimit -f" in proc.stderr and "Traceback" not in proc.stderr
        assert log.read_bytes() == before and leftovers(ws) == []
    assert git(ws, "status", "--porcelain") == ""


@pytest.mark.slow
def test_mcp_append_on_a_corrupt_index_is_no_tool_error(ws):
    pytest.importorskip("mcp")
    from helpers.mcp_client import call, session
    assert zmem_proc("-C", str(ws), "index").returncode == 0
    os.truncate(ws / ".zmem" / "index.sqlite", 8192)

    async def go():
        async with session(ws) as s:
            return await call(s, "memory_append", text="Ana moved to Porto")
    out = asyncio.run(go())
    assert out["committed"] and out["commit"] == git(ws, "rev-parse", "HEAD")
    assert "- Ana moved to Porto" in committed_text(ws, out["path"])
    assert any("not searchable yet" in w for w in out["warnings"])


# --- places this user cannot write: exit 1 with the path, the cause and a hint; nothing lost -------


@pytest.mark.slow
def test_a_read_only_workspace_is_a_clear_error(unprivileged):
    root, as_user = unprivileged
    as_user("chmod", "-R", "a-w", str(root))
    try:
        proc = as_user(zmem_exe(), "-C", str(root), "append", "x", check=False)
        assert proc.returncode == 1, proc.stderr
        first, hint = proc.stderr.splitlines()[:2]
        assert first.startswith("zmem: cannot ") and "Permission denied; the note was not written" in first
        assert hint.startswith("hint: ") and "permissions" in hint
        assert not (root / TODAY).exists()
    finally:
        as_user("chmod", "-R", "u+w", str(root))


@pytest.mark.slow
def test_an_unwritable_memory_directory_is_a_clear_error(unprivileged):
    root, as_user = unprivileged
    os.chmod(root / "memory", 0o555)
    proc = as_user(zmem_exe(), "-C", str(root), "append", "x", check=False)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        "zmem: cannot create a file in memory/: Permission denied; the note was not written",
        "hint: this user may not write there: check the permissions of memory (`ls -ld memory`), then append again"]
    assert not (root / TODAY).exists() and leftovers(root) == []
    os.chmod(root / "memory", 0o755)
    assert as_user(zmem_exe(), "-C", str(root), "append", "x", check=False).returncode == 0


@pytest.mark.slow
def test_an_unwritable_append_lock_does_not_stop_a_writable_memory_directory(unprivileged):
    root, as_user = unprivileged
    assert as_user(zmem_exe(), "-C", str(root), "append", "first").returncode == 0  # makes append.lock
    os.chmod(root / ".zmem" / "append.lock", 0o444)
    proc = as_user(zmem_exe(), "-C", str(root), "append", "second", "--json", check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["committed"]


def test_trust_with_a_config_home_that_is_a_file_is_a_clear_error(ws, tmp_path):
    not_a_dir = tmp_path / "config-file"
    not_a_dir.write_text("")
    proc = zmem_proc("-C", str(ws), "trust", env={"XDG_CONFIG_HOME": str(not_a_dir)})
    assert proc.returncode == 1, proc.stderr
    first, hint = proc.stderr.splitlines()
    assert first.startswith("zmem: cannot save the trust list") and str(not_a_dir) in first
    assert "Not a directory" in first and hint.startswith("hint: ") and "XDG_CONFIG_HOME" in hint
    assert zmem_proc("-C", str(ws), "trust", "--revoke", env={"XDG_CONFIG_HOME": str(not_a_dir)}).returncode == 0


# --- git missing from PATH: every command that runs git says so (exit 1 + hint), never exit 3 -------


@pytest.fixture
def no_git(tmp_path) -> dict:
    """An environment whose PATH holds only the python interpreter (no git)."""
    bin_dir = tmp_path / "bin-without-git"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    return {"PATH": str(bin_dir)}


GIT_COMMANDS = [["blame", "MEMORY.md#L1"], ["blame", "memory/2025-11-24.md#L5"], ["facts", "--origin"],
                ["reflect"], ["reflect", "--dry-run"], ["log", "memory/2025-11-24.md"], ["hooks", "install"]]


@pytest.mark.parametrize("args", GIT_COMMANDS, ids=" ".join)
@pytest.mark.slow
def test_commands_that_run_git_say_it_is_missing(ws, no_git, args):
    write(ws, "memory/2025-11-24.md", (ws / "memory/2025-11-24.md").read_text() + "\n## Retain\n\n- W @Peter: in Lisbon\n")
    commit_all(ws, "facts")
    assert zmem_proc("-C", str(ws), "index").returncode == 0
    proc = zmem_proc("-C", str(ws), *args, env=no_git)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == ["zmem: git is not on PATH (zmem runs git for commits, blame and history)",
                                        "hint: install git, or add the directory that holds it to PATH"]


@pytest.mark.slow
def test_watch_commit_without_git_fails_before_watching(ws, no_git):
    proc = zmem_proc("-C", str(ws), "watch", "--commit", "--commit-after", "0.2", "--exit-after", "5", env=no_git)
    assert proc.returncode == 1, proc.stderr
    first, hint = proc.stderr.splitlines()
    assert first == "zmem: git is not on PATH (zmem runs git for commits, blame and history)"
    assert hint.startswith("hint: ") and "without --commit" in hint
    # without --commit it needs no git
    assert zmem_proc("-C", str(ws), "watch", "--exit-after", "0.3", env=no_git).returncode == 0


def test_watch_commit_when_git_goes_away_says_so_and_keeps_watching(ws, tmp_path, monkeypatch):
    from zmem.index.catchup import catch_up
    from zmem.index.watch import Watcher
    from zmem.workspace.core import find_workspace
    catch_up(find_workspace(ws))
    now = [100.0]
    events = []
    w = Watcher(find_workspace(ws), debounce=0.1, commit=True, commit_after=0.2, emit=events.append,
                clock=lambda: now[0])
    write(ws, "memory/2025-12-06.md", "- written while git was away\n")
    w.changed({"memory/2025-12-06.md"}, now[0])
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    now[0] += 1.0
    w.tick(now[0])
    errors = [e for e in events if e.event == "error"]
    assert errors and "git is not on PATH" in errors[0].message and w.pending == {"memory/2025-12-06.md"}
    monkeypatch.setenv("PATH", path)
    now[0] += 1.0
    w.tick(now[0])
    assert [e.files for e in events if e.event == "committed"] == [["memory/2025-12-06.md"]]
    assert "written while git was away" in git(ws, "show", "HEAD:memory/2025-12-06.md")


# --- MCP arguments: the case of retain, a wrong list item, an empty filter ---------------------------


@pytest.mark.slow
def test_mcp_arguments_as_a_model_sends_them(ws):
    pytest.importorskip("mcp")
    from helpers.mcp_client import call, error, session

    async def go():
        async with session(ws) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            return tools, {
                "lower": await call(s, "memory_append", text="Prefers tea", retain="o", entities=["Peter"],
                                    confidence=0.8),
                "upper": await call(s, "memory_append", text="Lives in Lisbon", retain="W", entities=["Peter"]),
                "blank_retain": await call(s, "memory_append", text="Booked the dentist", retain=""),
                "bad_entity": await error(s, "memory_append", text="x", entities=[5]),
                "plain": await call(s, "memory_search", query="gateway"),
                "empty_filters": await call(s, "memory_search", query="gateway", entity="", kind="", since=""),
                "facts": await call(s, "memory_search", query="tea", entity="Peter"),
            }
    tools, out = asyncio.run(go())
    log = (ws / TODAY).read_text()
    assert out["lower"]["text"] == "- O(c=0.8) @Peter: Prefers tea" and out["lower"]["text"] in log
    assert out["upper"]["text"] == "- W @Peter: Lives in Lisbon"
    assert out["blank_retain"]["text"] == "- Booked the dentist"
    first, hint = out["bad_entity"].split("\n")
    assert first == "invalid arguments for memory_append: entities.0 should be a valid string (got 5)"
    assert hint == 'hint: entities: Names it is about.'
    # an empty filter is no filter: the same notes, not facts
    assert out["empty_filters"]["results"] == out["plain"]["results"] and out["plain"]["results"]
    assert all("fact" not in r for r in out["empty_filters"]["results"])
    assert out["facts"]["results"] and all("fact" in r for r in out["facts"]["results"])
    # what a model may send is said in the docs, not in every tools/list (tests/mcp/test_mcp_budget.py)
    docs = Path(__file__).resolve().parents[2] / "docs"
    assert "either case; empty: a plain note" in (docs / "agents.md").read_text(encoding="utf-8")
    assert "An empty string for an optional filter means" in (docs / "agent-hooks.md").read_text(encoding="utf-8")
    assert set(tools["memory_search"].input_schema["properties"]) >= {"entity", "kind", "since"}


@pytest.mark.slow
def test_cli_retain_takes_either_case(ws):
    out, _ = append_ok(ws, "Prefers tea", "--retain", "o", "--entity", "Peter", "--confidence", "0.8")
    assert out["text"] == "- O(c=0.8) @Peter: Prefers tea"


@pytest.mark.slow
def test_a_held_git_lock_is_named_not_the_note(ws):
    (ws / ".git" / "index.lock").touch()
    try:
        proc = zmem_proc("-C", str(ws), "append", "the note to keep", "--json")
    finally:
        (ws / ".git" / "index.lock").unlink()
    out = json.loads(proc.stdout)
    [warning] = [w for w in out["warnings"] if "not committed" in w]
    assert "index.lock" in warning and "another git process" in warning
    assert "remove the file manually" not in warning  # git's advice about the lock read like advice about the note
    assert "the note to keep" in (ws / out["path"]).read_text(encoding="utf-8")
