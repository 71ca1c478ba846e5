"""Defects an audit of the core (index, recall, append) found, reproduced with real processes on
real git repositories: concurrent rebuilds and first uses, git's advice taken for zmem's, skipped
files named by every recall, and `--path` / `--since` / `--until` read the way users write them."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from helpers.workspace import commit_all, recall_json, run, write, zmem_exe, zmem_proc


def _spawn(*args):
    return subprocess.Popen([zmem_exe(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_two_full_rebuilds_at_once_both_succeed(ws):
    for i in range(40):  # enough work that the two overlap
        write(ws, f"memory/2025-02-{i % 28 + 1:02d}-{i}.md", f"# n{i}\n\n- note {i} about the garden\n" * 20)
    commit_all(ws, "many")
    for _ in range(3):
        procs = [_spawn("-C", str(ws), "index", "--full") for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
    assert not list((ws / ".zmem").glob("index.sqlite.rebuild-*"))
    assert recall_json(ws, "garden")["results"]


@pytest.mark.slow
def test_first_use_by_several_processes_at_once_creates_the_schema_once(ws, tmp_path):
    for attempt in range(3):
        copy = tmp_path / f"copy{attempt}"
        shutil.copytree(ws, copy)
        shutil.rmtree(copy / ".zmem", ignore_errors=True)
        procs = [_spawn("-C", str(copy), "recall", "gateway", "--json") for _ in range(5)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0] * 5, [o[1] for o in outs]
        assert all(json.loads(o[0])["results"] for o in outs)


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


def test_every_recall_names_the_files_it_cannot_search(ws):
    toml = (ws / "zmem.toml").read_text(encoding="utf-8")
    (ws / "zmem.toml").write_text(toml.replace("# max_file_mb = 32", "max_file_mb = 0.05"), encoding="utf-8")
    write(ws, "memory/2025-01-01.md", "- banana77 " * 10000)
    commit_all(ws, "big")
    first = recall_json(ws, "banana77")
    second = recall_json(ws, "banana77")  # nothing changed: the catch-up has nothing to say this time
    for out in (first, second):
        assert out["results"] == []
        assert any("memory/2025-01-01.md" in w and "max_file_mb" in w for w in out["warnings"]), out["warnings"]


def test_path_filter_takes_plain_directories_and_files(ws):
    write(ws, "bank/people/ana.md", "# Ana\n\n- zebra1 keeper\n")
    write(ws, "memory/2025-03-01.md", "# d\n\n- zebra1 seen in the park\n")
    commit_all(ws, "paths")
    for path, expected in [("memory/", {"memory/2025-03-01.md"}), ("memory", {"memory/2025-03-01.md"}),
                           ("bank", {"bank/people/ana.md"}), ("bank/people/", {"bank/people/ana.md"}),
                           ("./bank/people/ana.md", {"bank/people/ana.md"}), ("bank/**", {"bank/people/ana.md"}),
                           ("memory/2025-*", {"memory/2025-03-01.md"})]:
        got = {r["path"] for r in recall_json(ws, "zebra1", "--path", path)["results"]}
        assert got == expected, path


def test_an_empty_date_range_is_an_error(ws):
    res = run(["-C", str(ws), "recall", "gateway", "--since", "2025-12-01", "--until", "2025-11-01"])
    assert res.exit_code == 1 and "since 2025-12-01 is after until 2025-11-01" in res.stderr and "hint:" in res.stderr


@pytest.mark.slow
def test_a_cloned_repository_cannot_run_its_own_zmem_package(ws, tmp_path, monkeypatch):
    """zmem starts zmem children (hooks, background index and embedding, a model's first run) with
    the workspace as working directory; Python must not import a `zmem/` committed there."""
    marker = tmp_path / "PWNED"
    write(ws, "zmem/__init__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    write(ws, "zmem/__main__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    commit_all(ws, "a package named zmem")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ws), str(clone)], check=True)
    assert zmem_proc("-C", str(clone), "hooks", "install").returncode == 0
    write(clone, "memory/2025-12-03.md", "# d\n\n- a note that fires the hooks\n")
    commit_all(clone, "note")  # post-commit: python -P -m zmem.hookrun, in the clone's top directory
    from helpers.workspace import wait_for
    assert wait_for(lambda: "memory/2025-12-03.md" in {r["path"] for r in recall_json(clone, "fires")["results"]})
    monkeypatch.chdir(clone)
    from zmem.spawn import zmem_command
    proc = subprocess.run(zmem_command("zmem", "--version"), capture_output=True, text=True)
    assert proc.returncode == 0 and "zmem" in proc.stdout
    from zmem.indexer import spawn_detached_index
    from zmem.workspace import find_workspace
    spawn_detached_index(find_workspace(clone))
    wait_for(lambda: "--quiet" not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout,
             timeout=10)
    assert not marker.exists()


def test_new_chunk_settings_re_chunk_files_whose_content_did_not_change(ws):
    write(ws, "memory/2025-04-02.md", "# d\n\n" + "".join(f"- line {i} about the orchard and its trees\n"
                                                          for i in range(120)))
    commit_all(ws, "long note")

    def chunks():
        import sqlite3
        conn = sqlite3.connect(ws / ".zmem" / "index.sqlite")
        try:
            return conn.execute("SELECT count(*) FROM chunks WHERE path = 'memory/2025-04-02.md'").fetchone()[0]
        finally:
            conn.close()
    assert run(["-C", str(ws), "index"]).exit_code == 0
    before = chunks()
    toml = (ws / "zmem.toml").read_text(encoding="utf-8")
    (ws / "zmem.toml").write_text(toml.replace("# chunk_tokens = 400", "chunk_tokens = 100"), encoding="utf-8")
    res = run(["-C", str(ws), "index", "--json"])
    assert res.exit_code == 0 and "memory/2025-04-02.md" in json.loads(res.stdout)["updated"]
    assert chunks() > 2 * before
    hit = recall_json(ws, "line 117 orchard")["results"][0]
    assert hit["end_line"] - hit["start_line"] < 30  # cited from a small chunk
