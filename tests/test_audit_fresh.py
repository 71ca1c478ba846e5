"""Audit fixes, through the real CLI (a process) on real git repositories: ignore-rule changes
reach the index, rewritten and unterminated session transcripts, status after an uncommitted
delete, and zmem.toml keys no setting has."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, wait_for, write, zmem_proc


def recall(root, query, *extra) -> tuple[dict, str]:
    proc = zmem_proc("-C", str(root), "recall", query, "--json", *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout), proc.stderr


def cited(root, query, *extra) -> list[str]:
    got, _ = recall(root, query, *extra)
    assert got["stale"] is False
    return [r["citation"] for r in got["results"]]


def indexed_paths(root) -> set[str]:
    from zmem import db
    conn = db.connect(Path(root) / ".zmem" / "index.sqlite")
    try:
        return {p for (p,) in conn.execute("SELECT path FROM files")}
    finally:
        conn.close()


# ----------------------------------------------------------------------------- ignore rules

NOTE = "# d\n\n- secretword\n"
HIT = ["memory/2025-01-01.md#L3-L3"]  # the matching line, not the whole note


@pytest.mark.slow
def test_a_gitignore_change_removes_and_restores_an_indexed_file(ws):
    write(ws, "memory/2025-01-01.md", NOTE)
    assert cited(ws, "secretword") == HIT
    with open(ws / ".gitignore", "a") as f:
        f.write("memory/2025-01-01.md\n")
    assert cited(ws, "secretword") == []
    assert "memory/2025-01-01.md" not in indexed_paths(ws)
    # un-ignored: found again at once (nothing else changed in its directory)
    (ws / ".gitignore").write_text((ws / ".gitignore").read_text().replace("memory/2025-01-01.md\n", ""))
    assert cited(ws, "secretword") == HIT
    # a full rebuild agrees with the incremental answer, both ways
    assert zmem_proc("-C", str(ws), "index", "--full").returncode == 0
    assert cited(ws, "secretword") == HIT


@pytest.mark.slow
def test_ignore_rules_from_memory_dirs_info_exclude_and_the_excludes_file(ws):
    write(ws, "memory/2025-01-01.md", NOTE)
    assert cited(ws, "secretword") == HIT
    write(ws, "memory/.gitignore", "2025-01-01.md\n")  # a new .gitignore in a memory directory
    assert cited(ws, "secretword") == []
    (ws / "memory/.gitignore").unlink()
    assert cited(ws, "secretword") == HIT
    exclude = ws / ".git" / "info" / "exclude"
    original = exclude.read_text() if exclude.exists() else ""
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text(original + "memory/*.md\n")
    assert cited(ws, "secretword") == []
    exclude.write_text(original)
    assert cited(ws, "secretword") == HIT
    # core.excludesFile: setting it, then filling the file it names
    git(ws, "config", "--global", "core.excludesFile", "~/my-ignores")
    assert cited(ws, "secretword") == HIT
    (Path(os.environ["HOME"]) / "my-ignores").write_text("2025-01-01.md\n")
    assert cited(ws, "secretword") == []
    git(ws, "config", "--global", "--unset", "core.excludesFile")
    assert cited(ws, "secretword") == HIT
    # git's default global ignore file ($XDG_CONFIG_HOME/git/ignore)
    write(Path(os.environ["XDG_CONFIG_HOME"]), "git/ignore", "*.md\n")
    assert cited(ws, "secretword") == []


@pytest.mark.slow
def test_ignore_rules_above_a_workspace_in_a_subdirectory(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, "README.md", "top\n")
    commit_all(repo, "top")
    ws = repo / "notes"
    assert zmem_proc("init", "--no-hooks", str(ws)).returncode == 0
    write(ws, "memory/2025-01-01.md", NOTE)
    assert cited(ws, "secretword") == HIT
    write(repo, ".gitignore", "notes/memory/2025-01-01.md\n")  # the repository's top, above the workspace
    assert cited(ws, "secretword") == []
    (repo / ".gitignore").unlink()
    assert cited(ws, "secretword") == HIT


@pytest.mark.slow
def test_a_committed_file_ignored_later_leaves_the_index_the_same_way_a_rebuild_does(ws):
    write(ws, "memory/2025-01-01.md", NOTE)
    commit_all(ws, "note")
    assert cited(ws, "secretword") == HIT
    write(ws, ".gitignore", (ws / ".gitignore").read_text() + "memory/2025-01-01.md\n")
    commit_all(ws, "ignore it")
    assert cited(ws, "secretword") == []
    assert zmem_proc("-C", str(ws), "index", "--full").returncode == 0
    assert cited(ws, "secretword") == []


@pytest.mark.slow
def test_the_no_op_check_stays_cheap_with_ignore_rules_recorded(ws):
    from zmem.indexer import catch_up
    from zmem.workspace import find_workspace
    w = find_workspace(ws)
    catch_up(w)
    time.sleep(2.1)  # past the racy window: stat alone is trusted from here on
    catch_up(w)
    result = catch_up(w)
    assert result.updated == [] and not result.full_scan and result.previous == result.head
    # the same content written again (a new mtime): read and compared, nothing reindexed
    gi = ws / ".gitignore"
    gi.write_text(gi.read_text())
    result = catch_up(w)
    assert result.updated == [] and result.removed == []


# ----------------------------------------------------------------------------- session transcripts

def _sessions(ws, extra="") -> Path:
    cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[sessions]\nenabled = true\ndir = "sessions"\n{extra}')
    (ws / "sessions").mkdir(exist_ok=True)
    return ws / "sessions"


def _line(text: str) -> str:
    return json.dumps({"role": "user", "content": text}) + "\n"


def _session_hits(ws, query) -> list[tuple[int, str]]:
    got, _ = recall(ws, query, "--source", "sessions", "--k", "50")
    return sorted((r["start_line"], r["snippet"]) for r in got["results"])


def _index_sessions(ws) -> dict:
    proc = zmem_proc("-C", str(ws), "index", "--sessions", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["sessions"]


def test_a_transcript_replaced_by_a_larger_one_starts_over(ws):
    sessions = _sessions(ws)
    a = sessions / "a.jsonl"
    a.write_text("".join(_line(f"old message {i} about pelican") for i in range(6)))
    assert _index_sessions(ws)["messages"] == 6
    tmp = sessions / "a.tmp"
    tmp.write_text("".join(_line(f"new conversation line {i} about flamingo") for i in range(12)))
    os.replace(tmp, a)  # atomically replaced, larger
    assert _index_sessions(ws)["messages"] == 12
    hits = _session_hits(ws, "pelican flamingo")
    assert hits == [(i + 1, f"new conversation line {i} about flamingo") for i in range(12)]


@pytest.mark.slow
def test_a_transcript_rewritten_in_place_at_the_same_size_starts_over(ws):
    sessions = _sessions(ws)
    a = sessions / "a.jsonl"
    a.write_text("".join(_line(f"old message {i} about pelican") for i in range(6)))
    ino = a.stat().st_ino
    assert _index_sessions(ws)["messages"] == 6
    with open(a, "r+") as f:  # same inode, same size, other words
        f.write("".join(_line(f"new message {i} about buzzard") for i in range(6)))
    assert a.stat().st_ino == ino
    # recall sees it is due (the old messages must go) without waiting for the thresholds
    _, err = recall(ws, "buzzard", "--source", "sessions")
    assert "being indexed in the background" in err
    rewritten = [(i + 1, f"new message {i} about buzzard") for i in range(6)]
    assert wait_for(lambda: _session_hits(ws, "buzzard") == rewritten, 30, interval=0.2), "the rewrite was not indexed"
    assert _session_hits(ws, "pelican") == []


@pytest.mark.slow
def test_an_append_by_atomic_replace_keeps_what_was_indexed(ws):
    sessions = _sessions(ws, "delta_messages = 1\n")
    a = sessions / "a.jsonl"
    first = "".join(_line(f"kestrel {i}") for i in range(3))
    a.write_text(first)
    assert _index_sessions(ws)["messages"] == 3
    tmp = sessions / "a.tmp"
    tmp.write_text(first + _line("kestrel 3"))
    os.replace(tmp, a)  # a new inode, the same prefix: only the new line is indexed
    assert _index_sessions(ws)["messages"] == 1
    assert [line for line, _ in _session_hits(ws, "kestrel")] == [1, 2, 3, 4]


@pytest.mark.slow
def test_a_final_line_without_newline_is_indexed_once_quiet_and_never_respawns(ws):
    sessions = _sessions(ws)
    b = sessions / "b.jsonl"
    b.write_text('{"role":"user","content":"final toucan message"}')
    # just written: it may be half a line, so it waits, and recall starts nothing for it
    got, err = recall(ws, "toucan", "--source", "sessions")
    assert got["results"] == [] and "being indexed" not in err
    old = time.time() - 10
    os.utime(b, (old, old))  # quiet for a while: a complete line
    _, err = recall(ws, "toucan", "--source", "sessions")
    assert "1 session files have new messages, being indexed in the background" in err
    assert wait_for(lambda: _session_hits(ws, "toucan") == [(1, "final toucan message")], 30, interval=0.2), \
        "the final line was not indexed"
    for _ in range(2):  # nothing left to index: no warning, no background indexer
        _, err = recall(ws, "toucan", "--source", "sessions")
        assert "being indexed" not in err
    # the writer finishes the line and goes on: numbering continues, nothing is indexed twice
    with open(b, "a") as f:
        f.write("\n" + _line("second toucan"))
    assert _index_sessions(ws)["messages"] == 1
    assert _session_hits(ws, "toucan") == [(1, "final toucan message"), (2, "second toucan")]


@pytest.mark.slow
def test_an_unparsable_tail_never_respawns_the_indexer(ws):
    sessions = _sessions(ws)
    c = sessions / "c.jsonl"
    c.write_text(_line("heron one") + '{"role": "user", "content": "half writ')
    old = time.time() - 10
    os.utime(c, (old, old))
    assert _index_sessions(ws)["messages"] == 1
    for _ in range(2):
        _, err = recall(ws, "heron", "--source", "sessions")
        assert "being indexed" not in err


# ----------------------------------------------------------------------------- status

@pytest.mark.slow
def test_status_and_doctor_after_an_uncommitted_delete(ws):
    write(ws, "memory/2025-01-01.md", NOTE)
    commit_all(ws, "note")
    (ws / "memory/2025-01-01.md").unlink()
    st = json.loads(zmem_proc("-C", str(ws), "status", "--json").stdout)
    assert st["stale"] is True  # not indexed yet: the index still has it
    assert zmem_proc("-C", str(ws), "index").returncode == 0
    st = json.loads(zmem_proc("-C", str(ws), "status", "--json").stdout)
    assert st["stale"] is False and "memory/2025-01-01.md" in st["dirty"]
    doctor = zmem_proc("-C", str(ws), "doctor")
    assert "[ok  ] index:" in doctor.stdout and "up to date" in doctor.stdout


# ----------------------------------------------------------------------------- config

@pytest.mark.slow
def test_unknown_config_keys_are_warnings_naming_the_file_and_key(ws):
    toml = ws / "zmem.toml"
    toml.write_text(toml.read_text().replace("[recall]\n", "[recall]\nbogus = 1\nmdoe = \"bm25\"\n", 1))
    got, err = recall(ws, "gateway")
    assert got["results"]  # a typo never stops recall
    want = [f"{toml}: unknown key `recall.bogus` is ignored;",
            f"{toml}: unknown key `recall.mdoe` is ignored; did you mean `recall.mode`?"]
    for w in want:
        assert any(x.startswith(w) for x in got["warnings"]) and w in err
    st = json.loads(zmem_proc("-C", str(ws), "status", "--json").stdout)
    assert any("`recall.bogus`" in w for w in st["file_warnings"])
    doctor = zmem_proc("-C", str(ws), "doctor")
    assert f"[WARN] config: {toml}: unknown key `recall.bogus` is ignored" in doctor.stdout
    assert doctor.returncode == 0  # a warning, not a failure


@pytest.mark.slow
def test_a_top_level_key_under_the_last_table_says_where_it_belongs(ws):
    toml = ws / "zmem.toml"
    with open(toml, "a") as f:  # after the generated file's last table, [llm]
        f.write('extra_paths = ["notes"]\n')
    write(ws, "notes/ideas.md", "# ideas\n\n- the quokka plan\n")
    got, err = recall(ws, "quokka")
    assert got["results"] == []  # not an extra path: it is llm.extra_paths
    msg = (f"{toml}: unknown key `llm.extra_paths` is ignored: extra_paths belongs at the top of the file, "
           "before any [table]")
    assert msg in got["warnings"] and msg in err
    assert "zmem trust" not in err  # trusting the file would change nothing
    # unknown tables too; a wrong value is still an error
    toml.write_text(toml.read_text() + "[recal]\nk = 3\n")
    _, err = recall(ws, "quokka")
    assert f"{toml}: unknown table [recal] is ignored; did you mean [recall]?" in err
    toml.write_text(toml.read_text().replace("[recal]\nk = 3\n", "").replace("[recall]\n", "[recall]\nk = 0\n", 1))
    proc = zmem_proc("-C", str(ws), "recall", "quokka")
    assert proc.returncode == 1 and "`recall.k` must be at least 1" in proc.stderr and "hint:" in proc.stderr
