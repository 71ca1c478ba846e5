"""Sharing one memory through a git remote: union-merged daily logs, `zmem sync` against a real bare
hub and real clones, conflict markers never indexed as memory."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, run, write, zmem_proc
from helpers.hub import assert_converged as _assert_converged
from helpers.hub import make_hub as _hub
from helpers.hub import sync as _sync
from helpers.hub import today_log as _today_log
from helpers.hub import zmem as _zmem

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


# ----------------------------------------------------------------------------- zmem sync with a real hub


@pytest.mark.slow
def test_three_clones_append_and_sync_to_one_memory(tmp_path):
    clones = _hub(tmp_path, 3)
    notes = []
    for rnd in range(2):
        for i, root in enumerate(clones):
            note = f"round{rnd} note from agent{i} about kiwi{i}x{rnd}"
            _zmem("-C", str(root), "append", note)
            notes.append(note)
            out = _sync(root)
            assert out["pushed"] and out["outgoing"]["commits"] >= 1
    for root in clones:  # the last syncs bring everyone's notes everywhere
        _sync(root)
    _assert_converged(clones, notes)
    out = json.loads(_zmem("-C", str(clones[2]), "recall", "kiwi0x0", "--json").stdout)
    assert "round0 note from agent0 about kiwi0x0" in out["results"][0]["snippet"]
    first_parents = git(clones[0], "log", "--first-parent", "--format=%s").splitlines()
    assert all(s.startswith(("zmem append", "zmem sync")) for s in first_parents)


@pytest.mark.slow
def test_sync_reports_facts_and_entities_that_came_in(tmp_path):
    a, b = _hub(tmp_path, 2)
    _zmem("-C", str(a), "append", "--retain", "W", "@Peter lives in Lisbon")
    _sync(a)
    out = _sync(b)
    assert out["merge"] == "fast-forward" and out["incoming"]["commits"] == 1
    assert [f["text"] for f in out["incoming"]["facts_added"]] == ["@Peter lives in Lisbon"]
    assert out["incoming"]["entities"] == ["Peter"] and not out["pushed"]
    text = _zmem("-C", str(b), "sync").stdout
    assert text.strip() == "up to date with origin/main"


@pytest.mark.slow
def test_concurrent_syncs_from_three_clones_converge(tmp_path):
    """Three agents, each appending through the CLI and through its own MCP server's memory_append,
    and syncing, all at once."""
    import asyncio
    import threading
    from helpers import mcp_client  # skips this test where the MCP SDK is missing
    clones = _hub(tmp_path, 3)
    failures: list[str] = []

    def agent(i: int, root: Path) -> None:
        async def work() -> None:
            async with mcp_client.session(root) as s:
                for rnd in range(3):
                    _zmem("-C", str(root), "append", f"parallel note {i}.{rnd} plum{i}{rnd}")
                    await mcp_client.call(s, "memory_append", text=f"mcp note {i}.{rnd} fig{i}{rnd}")
                    proc = await asyncio.to_thread(zmem_proc, "-C", str(root), "sync")
                    if proc.returncode:
                        failures.append(proc.stderr)
        try:
            asyncio.run(work())
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failures.append(repr(e))
    threads = [threading.Thread(target=agent, args=(i, root)) for i, root in enumerate(clones)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    for root in clones:
        _sync(root)
    _assert_converged(clones, [f"{kind} note {i}.{r} {word}{i}{r}" for kind, word in (("parallel", "plum"), ("mcp", "fig"))
                               for i in range(3) for r in range(3)])
    for j, root in enumerate(clones):  # each clone finds what the next one wrote, by CLI and by MCP
        other = (j + 1) % 3
        for word, note in ((f"plum{other}1", f"parallel note {other}.1"), (f"fig{other}2", f"mcp note {other}.2")):
            out = json.loads(_zmem("-C", str(root), "recall", word, "--json").stdout)
            assert note in out["results"][0]["snippet"], (root, word, out["results"][:1])


@pytest.mark.slow
def test_a_push_rejected_because_another_clone_pushed_first_is_retried(tmp_path):
    a, b = _hub(tmp_path, 2)
    _zmem("-C", str(b), "append", "from b before")
    _sync(b)  # so that a's next fetch moves its origin/main, which fires the hook below
    _zmem("-C", str(b), "append", "from b while a syncs")
    # between a's fetch and its push, b pushes: a's first push is rejected (fetch first)
    hook = a / ".git/hooks/reference-transaction"
    hook.write_text(f"""#!/bin/sh
[ "$1" = committed ] || exit 0
grep -q " refs/remotes/origin/main$" || exit 0
[ -e "{tmp_path}/pushed" ] && exit 0
touch "{tmp_path}/pushed"
unset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE
git -C "{b}" push -q origin HEAD:refs/heads/main
""")
    hook.chmod(0o755)
    _zmem("-C", str(a), "append", "from a")
    out = _sync(a)
    assert (tmp_path / "pushed").exists()
    assert out["pushed"] and out["push_attempts"] == 2 and out["merge"] == "merge"
    assert "memory/" in out["incoming"]["files"][0]
    hub_log = git(tmp_path / "hub.git", "log", "-p", "main")
    assert all(f"+- {n}\n" in hub_log + "\n" for n in ("from a", "from b before", "from b while a syncs"))
    assert "from b while a syncs" in _today_log(a)


@pytest.mark.slow
def test_an_unreachable_remote_loses_nothing(tmp_path):
    (a,) = _hub(tmp_path, 1)
    git(a, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    _zmem("-C", str(a), "append", "written offline")
    proc = _sync(a, ok=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("zmem: cannot reach the remote origin:")
    assert lines[0].endswith("your 1 commit stays committed here and goes out with the next sync")
    assert lines[1].startswith("hint:") and "git remote -v" in lines[1]
    assert "written offline" in git(a, "log", "-p", "-1") and not git(a, "status", "--porcelain")
    st = _zmem("-C", str(a), "sync", "--status", "--no-fetch").stdout
    assert "1 commits ahead, 0 behind" in st


@pytest.mark.slow
def test_no_remote_and_no_upstream_say_how_to_set_one(tmp_path, ws):
    proc = zmem_proc("-C", str(ws), "sync")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "no git remote" in proc.stderr and "hint: add one" in proc.stderr and "git remote add origin URL" in proc.stderr
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    git(ws, "remote", "add", "origin", str(hub))
    proc = zmem_proc("-C", str(ws), "sync")
    assert proc.returncode == 1 and "has no upstream branch" in proc.stderr
    assert "git push --set-upstream origin main" in proc.stderr and "zmem sync origin" in proc.stderr
    out = _sync(ws, "origin")
    assert out["pushed"] and git(hub, "rev-parse", "main") == git(ws, "rev-parse", "HEAD")
    assert git(ws, "rev-parse", "--abbrev-ref", "@{u}") == "origin/main"  # tracked from then on
    assert _sync(ws)["merge"] == "none"


@pytest.mark.slow
def test_sync_status_says_ahead_and_behind_without_changing_anything(tmp_path):
    a, b = _hub(tmp_path, 2)
    _zmem("-C", str(a), "append", "one")
    _sync(a)
    _zmem("-C", str(b), "append", "two")
    head = git(b, "rev-parse", "HEAD")
    st = json.loads(_zmem("-C", str(b), "sync", "--status", "--no-fetch", "--json").stdout)
    assert (st["ahead"], st["behind"], st["fetched"]) == (1, 0, False)
    st = json.loads(_zmem("-C", str(b), "sync", "--status", "--json").stdout)
    assert (st["ahead"], st["behind"], st["upstream"]) == (1, 1, "origin/main")
    assert git(b, "rev-parse", "HEAD") == head and git(tmp_path / "hub.git", "rev-parse", "main") != head


@pytest.mark.slow
def test_a_persons_real_conflict_stops_with_the_files_named_and_a_clean_tree(tmp_path):
    a, b = _hub(tmp_path, 2)
    write(a, "MEMORY.md", "# Memory\n\n- The gateway runs on the Mac Studio.\n")
    _sync(a)
    write(b, "MEMORY.md", "# Memory\n\n- The gateway runs on the Raspberry Pi.\n")
    _zmem("-C", str(b), "append", "a log line that merges fine")
    proc = _sync(b, ok=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert "sync stopped: 1 file changed here and on origin/main" in lines[0] and "MEMORY.md" in lines[0]
    assert lines[1].startswith("hint:") and "git pull --no-rebase origin main" in lines[1]
    assert not git(b, "status", "--porcelain") and not (b / ".git/MERGE_HEAD").exists()
    assert "Raspberry Pi" in (b / "MEMORY.md").read_text() and "<<<<<<<" not in (b / "MEMORY.md").read_text()
    assert "<<<<<<<" not in git(b, "log", "-p", "--all")
    # the local commits stay: the append, and the sync's commit of the hand edit
    assert git(b, "log", "-2", "--format=%s").splitlines() == ["zmem sync: MEMORY.md", "zmem append: " +
                                                               next((b / "memory").glob("2*.md")).relative_to(b).as_posix()]


@pytest.mark.slow
def test_a_push_the_hub_refuses_is_not_retried_and_says_why(tmp_path):
    (a,) = _hub(tmp_path, 1)
    hook = tmp_path / "hub.git/hooks/pre-receive"
    hook.write_text("#!/bin/sh\necho 'main is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    _zmem("-C", str(a), "append", "kept locally")
    proc = _sync(a, ok=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == ("zmem: origin/main refused the push: [remote rejected] (pre-receive hook declined); "
                        "your notes stay committed here")
    assert lines[1].startswith("hint: the remote's rules decide")
    assert "kept locally" in git(a, "log", "-p", "-1")


@pytest.mark.slow
def test_two_clones_merge_when_git_has_no_identity(tmp_path, monkeypatch):
    """A fresh machine has no user.name: append commits as zmem, and so must the merge sync makes
    (it failed on every retry, "unable to auto-detect email address", and the notes never left)."""
    clones = _hub(tmp_path, 2)
    for root in clones:
        git(root, "config", "--unset", "user.name")
        git(root, "config", "--unset", "user.email")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    for who in ("AUTHOR", "COMMITTER"):
        for what in ("NAME", "EMAIL"):
            monkeypatch.delenv(f"GIT_{who}_{what}")
    _sync(clones[1])
    _zmem("-C", str(clones[0]), "append", "note one about the lighthouse")
    _sync(clones[0])
    _zmem("-C", str(clones[1]), "append", "note two about the harbour")
    out = _sync(clones[1])
    assert out["merge"] == "merge" and out["pushed"], out
    assert git(clones[1], "log", "-1", "--format=%an <%ae>") == "zmem <zmem@localhost>"
    _sync(clones[0])
    _assert_converged(clones, ["note one about the lighthouse", "note two about the harbour"])


@pytest.mark.slow
def test_a_note_appended_on_one_clone_stays_in_its_section_when_the_other_started_retain(tmp_path):
    """Both clones append at the end of the day's log: git's union put one side's new `## Retain`
    section before the other's new bullet of `## Notes`, which then read as a malformed fact."""
    a, b = _hub(tmp_path, 2)
    _zmem("-C", str(a), "append", "first note")
    _sync(a)
    _sync(b)
    _zmem("-C", str(a), "append", "Bought milk")
    _sync(a)
    _zmem("-C", str(b), "append", "Prefers tea", "--retain", "O", "--entity", "Peter", "--confidence", "0.8")
    _sync(b)
    text = _today_log(b)
    notes, retain = text.split("## Retain")
    assert "- first note\n- Bought milk\n" in notes and "- O(c=0.8) @Peter: Prefers tea\n" in retain
    assert "Bought milk" not in retain and "\n\n\n" not in text
    facts = _zmem("-C", str(b), "facts")
    assert "expected a kind letter" not in facts.stderr and "Prefers tea" in facts.stdout
    _sync(a)
    assert _today_log(a) == text


def test_in_their_sections_moves_only_what_both_sides_place_alike():
    from zmem.reflect.merge import in_their_sections
    ours = "# d\n\n## Notes\n\n- a\n\n## Retain\n\n- W @Ana: x\n"
    theirs = "# d\n\n## Notes\n\n- a\n- b\n"
    merged = "# d\n\n## Notes\n\n- a\n\n## Retain\n\n- W @Ana: x\n- b\n"
    assert in_their_sections(merged, ours, theirs) == "# d\n\n## Notes\n\n- a\n- b\n\n## Retain\n\n- W @Ana: x\n"
    moved_by_a_person = "# d\n\n## Notes\n\n## Retain\n\n- a\n"  # ours moved "- a" on purpose: it stays
    merged = "# d\n\n## Notes\n\n- b\n\n## Retain\n\n- a\n"
    assert in_their_sections(merged, moved_by_a_person, theirs) == merged
    assert in_their_sections("- x\n\n\n- y\n", "- x\n", "- y\n") == "- x\n\n- y\n"
    assert in_their_sections("- x\n\n\n- y\n", "- x\n\n\n- z\n", "- y\n") == "- x\n\n\n- y\n"
