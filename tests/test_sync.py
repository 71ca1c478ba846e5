"""Sharing one memory through a git remote: union-merged daily logs, `zmem sync` against a real bare
hub and real clones, conflict markers never indexed as memory."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import commit_all, git, run, write, zmem_proc

LOG = "memory/2025-11-24.md"


# ----------------------------------------------------------------------------- .gitattributes


def test_init_writes_union_gitattributes(tmp_path):
    root = tmp_path / "ws"
    res = run(["init", "--no-hooks", str(root)])
    assert res.exit_code == 0, res.output
    assert "memory/**/*.md merge=union" in (root / ".gitattributes").read_text()
    assert git(root, "check-attr", "merge", "--", "memory/2025-11-24.md").endswith("merge: union")
    assert git(root, "check-attr", "merge", "--", "MEMORY.md").endswith("merge: unspecified")
    before = (root / ".gitattributes").read_text()
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    assert (root / ".gitattributes").read_text() == before  # idempotent


def test_init_keeps_users_gitattributes_and_works_in_a_subdirectory(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, ".gitattributes", "*.png binary")  # no final newline
    write(repo, "notes/.gitattributes", "*.txt text\n")
    res = run(["init", "--no-hooks", str(repo / "notes")])
    assert res.exit_code == 0, res.output
    assert (repo / ".gitattributes").read_text() == "*.png binary"
    assert (repo / "notes/.gitattributes").read_text().startswith("*.txt text\n")
    assert git(repo, "check-attr", "merge", "--", "notes/memory/2025-11-24.md").endswith("merge: union")
    assert git(repo, "check-attr", "merge", "--", "memory/2025-11-24.md").endswith("merge: unspecified")


def test_init_respects_a_users_own_merge_driver(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    write(root, ".gitattributes", "memory/*.md merge=binary\n")
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    assert (root / ".gitattributes").read_text() == "memory/*.md merge=binary\n"
    out = run(["-C", str(root), "doctor"]).output
    assert "[WARN] merge:" in out and "merge=binary" in out


def test_init_adds_it_to_an_existing_workspace_and_doctor_warns_without_it(ws):
    (ws / ".gitattributes").unlink()
    commit_all(ws, "drop attributes")
    out = run(["-C", str(ws), "doctor"]).output
    assert "[WARN] merge: daily logs are not merged by union" in out and "zmem init" in out
    res = run(["init", "--no-hooks", str(ws)])
    assert "added `memory/**/*.md merge=union` to .gitattributes" in res.output
    assert "[ok  ] merge: daily logs merge by union" in run(["-C", str(ws), "doctor"]).output


def _two_sides(ws: Path, base: str, ours: str, theirs: str) -> subprocess.CompletedProcess:
    """Commit base, then ours on main and theirs on a branch from base; merge the branch."""
    write(ws, LOG, base)
    commit_all(ws, "base")
    git(ws, "checkout", "-q", "-b", "other")
    write(ws, LOG, theirs)
    commit_all(ws, "theirs")
    git(ws, "checkout", "-q", "main")
    write(ws, LOG, ours)
    commit_all(ws, "ours")
    return subprocess.run(["git", "merge", "--no-edit", "other"], cwd=ws, capture_output=True, text=True)


def test_union_keeps_both_appends_each_once(ws):
    base = "# 2025-11-24\n\n## Notes\n\n- first\n"
    proc = _two_sides(ws, base, base + "- from laptop\n", base + "- from server\n")
    assert proc.returncode == 0, proc.stderr
    text = (ws / LOG).read_text()
    assert text.count("- first\n") == 1 and text.count("- from laptop\n") == 1 and text.count("- from server\n") == 1
    assert "<<<<<<<" not in text


def test_union_keeps_both_versions_of_an_edited_line(ws):
    # documented in the README: an edit of the same line on two clones leaves both versions
    base = "# 2025-11-24\n\n## Notes\n\n- meeting at 10\n- lunch\n"
    proc = _two_sides(ws, base, base.replace("at 10", "at 11"), base.replace("at 10", "at 12"))
    assert proc.returncode == 0, proc.stderr
    text = (ws / LOG).read_text()
    assert "- meeting at 11\n" in text and "- meeting at 12\n" in text and "at 10" not in text
    assert text.count("- lunch\n") == 1 and "<<<<<<<" not in text


# ----------------------------------------------------------------------------- conflict markers


def test_conflict_markers_in_a_note_are_a_warning_naming_file_and_line(ws):
    write(ws, "MEMORY.md", "# Memory\n\n<<<<<<< HEAD\n- ours\n=======\n- theirs\n>>>>>>> other\n")
    res = run(["-C", str(ws), "recall", "ours"])
    assert "MEMORY.md:3: git conflict markers (<<<<<<<)" in res.stderr
    st = json.loads(run(["-C", str(ws), "status", "--json"]).stdout)
    assert any(w.startswith("MEMORY.md:3: git conflict markers") for w in st["file_warnings"])
    write(ws, "MEMORY.md", "# Memory\n\nTitle\n=======\n\n- quoting <<<<<<< inline is fine\n")
    res = run(["-C", str(ws), "recall", "quoting"])
    assert "conflict markers" not in res.stderr
