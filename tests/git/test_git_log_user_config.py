"""Every git zmem runs (gitcmd.run_git) prints `git log`'s and `git show`'s format alone and in UTF-8,
whatever the user's config says: log.showSignature, which many who sign their commits set, printed
each signature's check before the format, and i18n.logOutputEncoding re-encoded names and messages."""
from __future__ import annotations

from helpers.signing import sign_commits
from helpers.workspace import commit_all, git, run, write

from zmem.git.gitcmd import run_git


def test_a_commit_id_and_message_read_from_git_log_are_only_that(ws, tmp_path):
    sign_commits(ws, tmp_path)
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- signed edit\n")
    head = commit_all(ws, "a signed edit\n\nZmem-Reflect: 1 fact")
    assert "signature" in git(ws, "log", "-1")  # the config is in effect
    out = run_git(["log", "-1", "--format=%H%n%B"], cwd=ws, capture_output=True, text=True).stdout
    assert out == f"{head}\na signed edit\n\nZmem-Reflect: 1 fact\n\n"  # sync rewrites a commit with this message
    git(ws, "config", "i18n.logOutputEncoding", "ISO-8859-1")
    git(ws, "commit", "-q", "--allow-empty", "-m", "délete", env={"GIT_AUTHOR_NAME": "João"})
    out = run_git(["log", "-1", "--format=%an %s"], cwd=ws, capture_output=True).stdout
    assert out.decode("utf-8") == "João délete\n"


def test_reflect_reads_the_facts_after_its_last_signed_commit(ws, tmp_path):
    """reflect starts from its last commit (found by its trailer with git log): that commit's id had the
    signature check before it, the range after it was no revision, and every later fact was missed
    ("nothing to change")."""
    sign_commits(ws, tmp_path)
    write(ws, "memory/2025-01-01.md", "# 2025-01-01\n\n## Retain\n\n- O(c=0.6) @Peter: Prefers tea.\n")
    commit_all(ws, "a first opinion")
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    write(ws, "memory/2025-01-02.md", "# 2025-01-02\n\n## Retain\n\n- O(c=0.7) @Peter: Likes long walks.\n")
    commit_all(ws, "a second opinion")
    res = run(["-C", str(ws), "reflect"])
    assert res.exit_code == 0, res.output + res.stderr
    assert "Likes long walks." in (ws / "bank/opinions.md").read_text()


def test_a_files_log_with_another_log_output_encoding(ws):
    """`zmem log FILE` read git log's output as UTF-8: a Latin-1 name or summary was an internal error."""
    git(ws, "config", "i18n.logOutputEncoding", "ISO-8859-1")
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- édit\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "édit", env={"GIT_AUTHOR_NAME": "João"})
    res = run(["-C", str(ws), "log", "memory/2025-11-24.md"])
    assert res.exit_code == 0, res.output + res.stderr
    assert "João: édit" in res.stdout
