"""Finding and making a workspace: `zmem init` where it cannot create one, a bare repository, a path
with spaces and non-ASCII letters."""
from __future__ import annotations

from helpers.workspace import commit_all, git, recall_json, refused, run, write, zmem_proc


def test_init_under_a_regular_file_is_an_error_with_a_hint(tmp_path):
    (tmp_path / "FILE").write_text("x")
    refused(zmem_proc("init", "FILE/sub", cwd=tmp_path), "cannot create the workspace")


def test_bare_repository_is_refused_with_a_hint(tmp_path):
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    (bare / "zmem.toml").write_text("")
    res = run(["-C", str(bare), "recall", "x"])
    assert res.exit_code == 1 and "bare repository" in res.stderr and "hint:" in res.stderr


def test_workspace_path_with_spaces_and_non_ascii(tmp_path):
    root = tmp_path / "my notes ünïcødé 笔记"
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    write(root, "memory/2025-12-07.md", "# x\n\n- a note about flamingos\n")
    commit_all(root)
    hit = recall_json(root, "flamingos")["results"][0]
    assert run(["-C", str(root), "get", hit["citation"]]).stdout == hit["snippet"] + "\n"
    assert "flamingos" in hit["snippet"]


def test_a_folder_git_does_not_hold_is_refused_and_nothing_is_written_in_it(tmp_path):
    """An OpenClaw-style folder (MEMORY.md, no git): the first command said "not a git repository"
    but had already made .zmem/ (index, WAL, fsmonitor) in the user's folder."""
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("- a note\n")
    for args in (["recall", "note"], ["status"], ["index"]):
        res = zmem_proc("-C", str(folder), *args)
        assert res.returncode == 1 and res.stderr.startswith(f"zmem: not a git repository: {folder}\n"), res.stderr
        assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md"], args
