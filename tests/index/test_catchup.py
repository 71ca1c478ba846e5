"""The index equals the working tree after any git operation, with or without hooks."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, recall_json, run, still_works, write, zmem_exe, zmem_proc
from zmem.store import db


def index_json(root) -> dict:
    res = run(["-C", str(root), "index", "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def indexed(root) -> dict[str, int]:
    conn = db.connect(Path(root) / ".zmem" / "index.sqlite")
    try:
        return dict(conn.execute("SELECT path, chunks FROM files"))
    finally:
        conn.close()


def memory_on_disk(root) -> set[str]:
    root = Path(root)
    out = {p for p in ("MEMORY.md", "memory.md") if (root / p).is_file()}
    for top in ("memory", "bank"):
        out |= {str(p.relative_to(root)) for p in (root / top).rglob("*.md") if not p.is_symlink()}
    return out


def assert_matches_disk(root):
    recall_json(root, "anything")  # a reading command catches up
    assert set(indexed(root)) == memory_on_disk(root)


def test_incremental_reindexes_only_what_changed(ws):
    index_json(ws)
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- A changed note about zeppelins.\n")
    commit_all(ws)
    out = index_json(ws)
    assert out["updated"] == ["memory/2025-11-24.md"] and out["removed"] == []
    assert index_json(ws)["updated"] == []
    assert recall_json(ws, "zeppelins")["results"][0]["path"] == "memory/2025-11-24.md"
    assert recall_json(ws, "Mac Studio")["results"] == []


def test_recall_catches_up_by_itself_after_commit_and_delete(ws):
    write(ws, "memory/2025-12-01.md", "# d\n\n- walrus sighting at the harbour\n")
    commit_all(ws)
    assert recall_json(ws, "walrus")["results"]
    git(ws, "rm", "-q", "memory/2025-12-01.md")
    commit_all(ws)
    assert recall_json(ws, "walrus")["results"] == []


def test_dirty_and_untracked_files_are_searchable_and_reverts_are_seen(ws):
    with open(ws / "memory/2025-11-24.md", "a") as f:
        f.write("- uncommitted kumquat idea\n")
    write(ws, "memory/new/2025-12-02.md", "# x\n\n- untracked quokka note\n")
    assert recall_json(ws, "kumquat")["results"] and recall_json(ws, "quokka")["results"]
    git(ws, "checkout", "--", "memory/2025-11-24.md")
    (ws / "memory/new/2025-12-02.md").unlink()
    assert recall_json(ws, "kumquat")["results"] == [] and recall_json(ws, "quokka")["results"] == []


@pytest.mark.slow
def test_same_size_rewrite_with_its_mtime_put_back_is_seen(ws):
    """mtime can be set back (touch -r, rsync --inplace -t); ctime cannot."""
    import time
    path = ws / "memory/2025-11-24.md"
    time.sleep(2.1)  # past the window in which a new mtime is not trusted anyway
    assert recall_json(ws, "gateway")["results"]
    st = path.stat()
    text = path.read_text()
    with open(path, "r+") as f:  # same inode, same size
        f.write(text.replace("gateway", "balloon"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    out = recall_json(ws, "balloon")
    assert out["results"] and out["results"][0]["path"] == "memory/2025-11-24.md" and not out["stale"]


def test_touch_without_change_is_cheap_and_correct(ws):
    index_json(ws)
    os.utime(ws / "memory/2025-11-24.md", None)
    assert index_json(ws)["updated"] == []
    assert recall_json(ws, "Mac Studio")["results"]


@pytest.mark.slow
def test_history_rewrites(ws):
    write(ws, "memory/2025-12-03.md", "# a\n\n- first version about narwhals\n")
    commit_all(ws, "narwhal")
    git(ws, "reset", "-q", "--hard", "HEAD~1")
    assert_matches_disk(ws)
    assert recall_json(ws, "narwhals")["results"] == []
    write(ws, "memory/2025-12-03.md", "# a\n\n- amended version about dolphins\n")
    commit_all(ws, "dolphin")
    write(ws, "memory/2025-12-03.md", "# a\n\n- amended again about orcas\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "--amend", "-m", "orca")
    assert recall_json(ws, "orcas")["results"] and recall_json(ws, "dolphins")["results"] == []
    git(ws, "checkout", "-q", "-b", "side", "HEAD~1")
    write(ws, "memory/2025-12-04.md", "# s\n\n- side branch about manatees\n")
    commit_all(ws, "side")
    assert_matches_disk(ws)
    assert recall_json(ws, "manatees")["results"] and recall_json(ws, "orcas")["results"] == []
    git(ws, "rebase", "-q", "main")
    assert recall_json(ws, "manatees")["results"] and recall_json(ws, "orcas")["results"]
    git(ws, "checkout", "-q", "--orphan", "empty")
    git(ws, "rm", "-rq", "--cached", ".")
    git(ws, "clean", "-fdq")
    assert_matches_disk(ws)
    git(ws, "checkout", "-qf", "main")
    assert_matches_disk(ws)


def test_rename_moves_citations(ws):
    git(ws, "mv", "memory/2025-11-24.md", "memory/2025-11-25.md")
    commit_all(ws)
    hits = recall_json(ws, "Mac Studio")["results"]
    assert [h["path"] for h in hits] == ["memory/2025-11-25.md"]
    assert hits[0]["day"] == "2025-11-25"


@pytest.mark.parametrize("newline,bom", [("\r\n", ""), ("\n", "\ufeff")])
def test_citations_are_exact_with_crlf_and_bom(ws, newline, bom):
    lines = ["# Title", "", "## Notes", ""] + [f"- line {i} about pelicans {i}" for i in range(60)]
    (ws / "memory/2025-12-05.md").write_bytes((bom + newline.join(lines) + newline).encode())
    for hit in recall_json(ws, "pelicans 42")["results"]:
        res = run(["-C", str(ws), "get", hit["citation"]])
        assert res.stdout.rstrip("\n") == hit["snippet"]
        n = hit["end_line"] - hit["start_line"] + 1
        res = run(["-C", str(ws), "get", hit["path"], "--from", str(hit["start_line"]), "--lines", str(n)])
        assert res.stdout.rstrip("\n") == hit["snippet"]


def test_only_memory_sources_are_indexed_and_extra_paths_work(ws):
    write(ws, "README.md", "# readme about capybaras\n")
    write(ws, "notes/x.md", "# notes about capybaras\n")
    write(ws, "memory/data.txt", "capybaras\n")
    assert recall_json(ws, "capybaras")["results"] == []
    (ws / "zmem.toml").write_text('extra_paths = ["notes"]\n')
    assert [h["path"] for h in recall_json(ws, "capybaras")["results"]] == ["notes/x.md"]


def test_symlinks_are_skipped(ws, tmp_path):
    outside = tmp_path / "outside"
    write(outside, "secret.md", "# s\n\n- symlinked platypus\n")
    os.symlink(outside / "secret.md", ws / "memory" / "2025-12-06.md")
    os.symlink(outside, ws / "bank" / "linked")
    assert recall_json(ws, "platypus")["results"] == []
    res = run(["-C", str(ws), "get", "memory/2025-12-06.md"])
    assert res.exit_code == 1 and "symlink" in res.stderr and "hint:" in res.stderr


def test_interrupted_full_rebuild_leaves_the_old_index(ws, monkeypatch):
    from zmem.index import catchup as indexer
    from zmem.workspace.core import find_workspace
    index_json(ws)
    calls = {"n": 0}
    real = indexer.insert_files

    def failing(*a, **kw):
        calls["n"] += 1
        if calls["n"] == 1:  # the rebuild's first batch of files
            raise KeyboardInterrupt
        return real(*a, **kw)
    monkeypatch.setattr(indexer, "insert_files", failing)
    with pytest.raises(KeyboardInterrupt):
        indexer.rebuild(find_workspace(ws))
    monkeypatch.undo()
    assert not list((ws / ".zmem").glob("index.sqlite.rebuild-*"))
    assert recall_json(ws, "Mac Studio")["results"]


def test_newer_schema_and_corrupt_index_are_clear_errors_that_full_repairs(ws):
    index_json(ws)
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    res = run(["-C", str(ws), "recall", "Mac"])
    assert res.exit_code == 1 and "newer zmem" in res.stderr and "hint:" in res.stderr
    assert "Traceback" not in res.output
    assert run(["-C", str(ws), "index", "--full"]).exit_code == 0
    assert recall_json(ws, "Mac Studio")["results"]
    for suffix in ("-wal", "-shm"):
        p = ws / ".zmem" / f"index.sqlite{suffix}"
        if p.exists():
            p.unlink()
    (ws / ".zmem" / "index.sqlite").write_bytes(b"this is not a database" * 100)
    res = run(["-C", str(ws), "recall", "Mac"])
    assert res.exit_code == 1 and "hint:" in res.stderr and "index --full" in res.stderr
    assert run(["-C", str(ws), "index", "--full"]).exit_code == 0
    assert recall_json(ws, "Mac Studio")["results"]


def test_deleting_the_state_dir_loses_nothing(ws):
    import shutil
    index_json(ws)
    shutil.rmtree(ws / ".zmem")
    assert recall_json(ws, "Mac Studio")["results"]


@pytest.mark.slow
def test_concurrent_writers_and_a_reader_during_rebuild(ws):
    for i in range(200):
        write(ws, f"memory/2024-{i // 28 % 12 + 1:02d}-{i % 28 + 1:02d}-{i}.md", f"# {i}\n\n- bulk note {i} on topic {i % 7}\n")
    commit_all(ws)
    exe = zmem_exe()
    procs = [subprocess.Popen([exe, "-C", str(ws), "index", "-q"], stderr=subprocess.PIPE) for _ in range(2)]
    assert all(p.wait(120) == 0 for p in procs)
    full = subprocess.Popen([exe, "-C", str(ws), "index", "--full", "-q"])
    reader = zmem_proc("-C", str(ws), "recall", "bulk note", "--json")
    assert full.wait(120) == 0
    assert reader.returncode == 0, reader.stderr
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == len(memory_on_disk(ws))
    conn.close()


def test_workspace_in_a_subdirectory_of_a_repository(tmp_path):
    repo = tmp_path / "big"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, "src/code.py", "print(1)\n")
    assert run(["init", "--no-hooks", str(repo / "agent")]).exit_code == 0
    write(repo, "agent/memory/2025-12-07.md", "# x\n\n- subdirectory workspace about lemurs\n")
    commit_all(repo)
    hits = recall_json(repo / "agent", "lemurs")["results"]
    assert [h["path"] for h in hits] == ["memory/2025-12-07.md"]


def test_repo_without_commits_then_first_commit(tmp_path):
    root = tmp_path / "fresh"
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    write(root, "memory/2025-12-08.md", "# x\n\n- before any commit: ibis\n")
    assert recall_json(root, "ibis")["results"]
    commit_all(root)
    assert recall_json(root, "ibis")["results"]
    st = json.loads(run(["-C", str(root), "status", "--json"]).stdout)
    assert st["stale"] is False and st["indexed_commit"] == st["head"]


def test_detached_head_and_shallow_clone(ws, tmp_path):
    write(ws, "memory/2025-12-09.md", "# x\n\n- later note about tapirs\n")
    commit_all(ws)
    git(ws, "checkout", "-q", "--detach", "HEAD~1")
    assert recall_json(ws, "tapirs")["results"] == []
    git(ws, "checkout", "-q", "main")
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{ws}", str(clone))
    assert recall_json(clone, "tapirs")["results"]
    assert json.loads(run(["-C", str(clone), "status", "--json"]).stdout)["shallow"] is True


def test_workspace_discovery(ws, monkeypatch, tmp_path):
    assert run(["recall", "Mac", "--json"], cwd=ws / "memory").exit_code == 0
    monkeypatch.setenv("ZMEM_WORKSPACE", str(ws))
    assert run(["recall", "Mac", "--json"], cwd=tmp_path).exit_code == 0
    monkeypatch.delenv("ZMEM_WORKSPACE")
    res = run(["recall", "Mac"], cwd=tmp_path)
    assert res.exit_code == 1 and "hint:" in res.stderr and "Traceback" not in res.output


def test_status_reports_staleness(ws):
    index_json(ws)
    assert json.loads(run(["-C", str(ws), "status", "--json"]).stdout)["stale"] is False
    write(ws, "memory/2025-12-10.md", "# x\n\n- new\n")
    commit_all(ws)
    st = json.loads(run(["-C", str(ws), "status", "--json"]).stdout)
    assert st["stale"] is True and st["head"] != st["indexed_commit"]
    index_json(ws)
    assert json.loads(run(["-C", str(ws), "status", "--json"]).stdout)["stale"] is False


def test_fast_path_sees_new_files_in_new_directories(ws):
    index_json(ws)
    write(ws, "memory/2026/01/2026-01-02.md", "# x\n\n- nested new directory about axolotls\n")
    assert recall_json(ws, "axolotls")["results"]
    write(ws, "MEMORY.md", "# Memory\n\n- curated fact about okapis\n")
    assert recall_json(ws, "okapis")["results"]


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


def test_a_directory_named_like_a_note_may_become_a_file_and_back(ws):
    """The stat snapshot records directories: one that vanished or turned into a file, or a note
    that turned into a directory, counts as changed, and the catch-up indexes what is there now."""
    import shutil
    (ws / "memory/odd.md").mkdir()
    assert run(["-C", str(ws), "index", "--full"]).exit_code == 0  # records memory/odd.md as a directory
    (ws / "memory/odd.md").rmdir()
    write(ws, "memory/odd.md", "- a note about wombats\n")
    assert recall_json(ws, "wombats")["results"][0]["path"] == "memory/odd.md"
    (ws / "memory/odd.md").unlink()
    write(ws, "memory/odd.md/inner.md", "- a note about quokkas\n")
    assert recall_json(ws, "quokkas")["results"][0]["path"] == "memory/odd.md/inner.md"
    assert not recall_json(ws, "wombats")["results"]
    shutil.rmtree(ws / "memory/odd.md")
    assert not recall_json(ws, "quokkas")["results"]
    still_works(ws)
