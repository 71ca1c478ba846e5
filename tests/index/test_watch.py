"""`zmem watch`: the real command as a subprocess on a real workspace, with real file writes."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, recall_json, refused, write, zmem_exe
from helpers.watch import TIMEOUT, WatchProc

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and inotify")


def _index_has(root: Path, word: str) -> bool:
    """Read the index directly, without the catch-up every zmem command does first."""
    from zmem.store import db
    from zmem.query.search import recall
    conn = db.connect(root / ".zmem" / "index.sqlite", readonly=True)
    try:
        return any(word in h.snippet for h in recall(conn, word, k=3).results)
    finally:
        conn.close()


@pytest.mark.parametrize("mode", ["inotify", "poll"])
@pytest.mark.slow
def test_new_text_is_indexed_after_the_debounce_without_a_commit(ws, watch, mode):
    if mode == "inotify" and not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux-only")
    head = git(ws, "rev-parse", "HEAD")
    w = watch(ws, "--debounce", "0.3", *(["--poll"] if mode == "poll" else []))
    assert w.ready()["backend"] == ("polling" if mode == "poll" else "inotify")
    write(ws, "memory/2025-12-01.md", "# 2025-12-01\n\n## Notes\n\n- The quokka colony moved to Zanzibarquay.\n")
    write(ws, "bank/projects/deep/nested.md", "# Nested\n\n- Flamingoberry lives in a new directory.\n")
    w.wait_indexed("memory/2025-12-01.md", "bank/projects/deep/nested.md")
    # the watcher indexed them: the index has the text before any reading command caught up
    assert _index_has(ws, "Zanzibarquay") and _index_has(ws, "Flamingoberry")
    hits = recall_json(ws, "Zanzibarquay")
    assert hits["results"][0]["path"] == "memory/2025-12-01.md" and not hits["stale"]
    assert git(ws, "rev-parse", "HEAD") == head  # nothing was committed
    assert "?? memory/2025-12-01.md" in git(ws, "status", "--porcelain")
    # an edit and a deletion are followed too
    (ws / "memory/2025-12-01.md").write_text("# 2025-12-01\n\n- Now about Kilimanjarolite.\n")
    w.wait_for(lambda e: e["event"] == "indexed" and "memory/2025-12-01.md" in e["files"])
    assert _index_has(ws, "Kilimanjarolite") and not _index_has(ws, "Zanzibarquay")
    (ws / "bank/projects/deep/nested.md").unlink()
    w.wait_for(lambda e: e["event"] == "indexed" and "bank/projects/deep/nested.md" in e["files"])
    assert not _index_has(ws, "Flamingoberry")
    assert w.proc.poll() is None


def test_commit_commits_only_the_changed_memory_files(ws, watch):
    head = git(ws, "rev-parse", "HEAD")
    w = watch(ws, "--debounce", "0.2", "--commit", "--commit-after", "0.5")
    w.ready()
    write(ws, "notes.txt", "not memory\n")
    write(ws, "memory/2025-12-02.md", "# 2025-12-02\n\n- Booked the ferry to Mykonosvale.\n")
    write(ws, "bank/world.md", "# World\n\n- The ferry leaves at nine.\n")
    write(ws, "memory/draft.txt", "a non-Markdown file in memory/\n")
    event = w.wait_for(lambda e: e["event"] == "committed")
    assert sorted(event["files"]) == ["bank/world.md", "memory/2025-12-02.md"]
    assert git(ws, "rev-parse", "HEAD") == event["commit"] != head
    assert git(ws, "rev-parse", "HEAD^") == head
    changed = git(ws, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == ["bank/world.md", "memory/2025-12-02.md"]
    message = git(ws, "log", "-1", "--format=%B")
    assert message.startswith("zmem watch: 2 memory files") and "memory/2025-12-02.md" in message
    status = git(ws, "status", "--porcelain")
    assert "?? notes.txt" in status and "?? memory/draft.txt" in status
    assert "memory/2025-12-02.md" not in status and "bank/world.md" not in status


@pytest.mark.slow
def test_commit_waits_while_a_merge_is_in_progress(ws, watch):
    git_dir = Path(git(ws, "rev-parse", "--absolute-git-dir"))
    head = git(ws, "rev-parse", "HEAD")
    w = watch(ws, "--debounce", "0.2", "--commit", "--commit-after", "0.3")
    w.ready()
    (git_dir / "MERGE_HEAD").write_text(head + "\n")
    write(ws, "memory/2025-12-03.md", "# 2025-12-03\n\n- Written during a merge.\n")
    err = w.wait_for(lambda e: e["event"] == "error")
    assert "merge" in err["message"] and err["files"] == ["memory/2025-12-03.md"]
    assert git(ws, "rev-parse", "HEAD") == head
    (git_dir / "MERGE_HEAD").unlink()
    event = w.wait_for(lambda e: e["event"] == "committed")
    assert event["files"] == ["memory/2025-12-03.md"] and git(ws, "rev-parse", "HEAD") == event["commit"]


@pytest.mark.parametrize("how", ["moved", "deleted", "deleted-poll"])
@pytest.mark.slow
def test_moving_or_deleting_the_workspace_exits_1_with_a_hint(ws, watch, tmp_path, how):
    w = watch(ws, *(["--poll"] if how.endswith("poll") else []))
    w.ready()
    if how == "moved":
        os.rename(ws, tmp_path / "elsewhere")
    else:
        shutil.rmtree(ws)
    code, err = w.finish()
    assert code == 1, err
    lines = err.strip().splitlines()
    assert lines[0] == f"zmem: the workspace {ws} was moved or deleted", err
    assert lines[1].startswith("hint: ") and "Traceback" not in err
    last = (w.seen + _drain(w))[-1]
    assert last["event"] == "error" and "moved or deleted" in last["message"]


def _drain(w: WatchProc) -> list[dict]:
    out = []
    while not w.events.empty():
        out.append(w.events.get())
    return out


@linux_only
@pytest.mark.slow
def test_open_descriptors_do_not_grow_with_the_number_of_files(ws, watch):
    w = watch(ws, "--debounce", "0.5")
    w.ready()
    fd_dir = Path(f"/proc/{w.proc.pid}/fd")
    before = len(os.listdir(fd_dir))
    for d in range(20):
        for i in range(100):
            write(ws, f"bank/topic-{d:02}/note-{i:03}.md", f"# Note {d}-{i}\n\n- Fact number t{d}n{i}x.\n")
    indexed: set[str] = set()

    def all_indexed(e) -> bool:
        if e["event"] == "indexed":
            indexed.update(e["files"])
        return len([p for p in indexed if p.startswith("bank/topic-")]) == 2000
    w.wait_for(all_indexed, timeout=180)
    after = len(os.listdir(fd_dir))
    assert after <= before + 2, (before, after)
    assert after < 50
    # one inotify descriptor, one watch per directory, none per file
    watches = []
    for fd in os.listdir(fd_dir):
        try:
            if os.readlink(fd_dir / fd) == "anon_inode:inotify":
                watches.append(sum(1 for line in Path(f"/proc/{w.proc.pid}/fdinfo/{fd}").read_text().splitlines()
                                   if line.startswith("inotify wd:")))
        except OSError:
            continue
    print(f"open fds: {before} before, {after} after 2,000 files in 20 directories; inotify watches: {watches}")
    assert len(watches) == 1 and 20 <= watches[0] < 100, watches
    assert _index_has(ws, "t19n99x")


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_signals_stop_it_cleanly(ws, watch, sig, code):
    w = watch(ws)
    w.ready()
    w.proc.send_signal(sig)
    rc, err = w.finish()
    assert rc == code and "Traceback" not in err


@pytest.mark.slow
def test_exit_after_and_max_events_end_it_for_scripts(ws, watch):
    t0 = time.monotonic()
    w = watch(ws, "--exit-after", "0.5")
    assert w.finish()[0] == 0 and time.monotonic() - t0 < TIMEOUT
    w = watch(ws, "--debounce", "0.2", "--max-events", "1")
    w.ready()
    write(ws, "memory/2025-12-04.md", "- one event\n")
    code, err = w.finish()
    assert code == 0, err
    assert [e["event"] for e in w.seen + _drain(w)] == ["watching", "indexed"]


@pytest.mark.slow
def test_verbose_prints_one_line_per_reindex_on_stderr(ws):
    proc = subprocess.Popen([zmem_exe(), "-C", str(ws), "watch", "--verbose", "--debounce", "0.2",
                             "--max-events", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said = [proc.stderr.readline()]  # the first catch-up's line, then "watching …": from then on it watches
    while said[-1] and not said[-1].startswith("watching "):
        said.append(proc.stderr.readline())
    assert said[-1], "".join(said)  # it exited before watching
    write(ws, "memory/2025-12-05.md", "- verbose\n")
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0 and out == ""
    assert "indexed 1 file in " in err and "memory/2025-12-05.md" in err


def test_the_debounce_waits_for_quiet_with_an_injected_clock(ws):
    from zmem.index.catchup import catch_up
    from zmem.workspace.core import find_workspace
    from zmem.index.watch import Watcher
    catch_up(find_workspace(ws))
    now = [100.0]
    events = []
    w = Watcher(find_workspace(ws), debounce=1.5, emit=events.append, clock=lambda: now[0])
    write(ws, "memory/2025-12-06.md", "- clocked\n")
    w.changed({"memory/2025-12-06.md"}, now[0])
    assert w.due(now[0]) == 1.5
    now[0] += 1.0
    w.changed({"memory/2025-12-06.md"}, now[0])  # another write: the quiet period starts again
    w.tick(now[0] + 1.0)
    assert events == []
    now[0] += 1.6
    w.tick(now[0])
    assert [(e.event, e.files) for e in events] == [("indexed", ["memory/2025-12-06.md"])]
    assert w.due(now[0]) is None


def test_without_inotify_it_polls_and_says_so_once(ws, monkeypatch):
    from zmem.index import watch as watch_lib
    from zmem.workspace.core import find_workspace

    def unavailable(self, ws):
        raise watch_lib.InotifyUnavailable("inotify ran out of watches (fs.inotify.max_user_watches)")
    monkeypatch.setattr(watch_lib.InotifySource, "__init__", unavailable)
    notices, events = [], []
    w = watch_lib.Watcher(find_workspace(ws), exit_after=0.2, emit=events.append, notice=notices.append)
    assert w.run() == 0
    assert isinstance(w.source, watch_lib.PollSource)
    assert len(notices) == 1 and "ran out of watches" in notices[0] and "polling" in notices[0]
    assert [e.backend for e in events if e.event == "watching"] == ["polling"]


@pytest.mark.slow
def test_commit_includes_memory_files_already_uncommitted_at_start(ws, watch):
    head = git(ws, "rev-parse", "HEAD")
    with (ws / "memory/2025-11-24.md").open("a") as f:
        f.write("- Edited before the watcher started: the heron nests.\n")
    write(ws, "bank/early.md", "# Early\n\n- Written before the watcher started.\n")
    write(ws, "notes.txt", "not memory\n")
    w = watch(ws, "--debounce", "0.2", "--commit", "--commit-after", "0.3")
    w.ready()
    event = w.wait_for(lambda e: e["event"] == "committed")
    assert sorted(event["files"]) == ["bank/early.md", "memory/2025-11-24.md"]
    assert git(ws, "rev-parse", "HEAD^") == head
    status = git(ws, "status", "--porcelain")
    assert status == "?? notes.txt"
    # later changes are committed as before
    write(ws, "memory/2025-12-04.md", "# 2025-12-04\n\n- After start.\n")
    event = w.wait_for(lambda e: e["event"] == "committed")
    assert event["files"] == ["memory/2025-12-04.md"]


def _tree(root: Path, rev: str = "HEAD") -> set[str]:
    return set(git(root, "ls-tree", "-r", "--name-only", rev).splitlines())


@linux_only
@pytest.mark.slow
def test_watch_commits_git_rm_and_git_mv_and_keeps_committing(ws, watch):
    write(ws, "memory/2025-01-01.md", "# d\n\n- one\n")
    write(ws, "memory/2025-01-02.md", "# d\n\n- two\n")
    write(ws, "memory/2025-01-05.md", "# d\n\n- five\n")
    commit_all(ws, "three logs")
    w = watch(ws, "--commit", "--commit-after", "0.5", "--debounce", "0.2")
    w.ready()

    def committed(path):
        return lambda e: e["event"] == "committed" and path in e["files"]

    git(ws, "rm", "-q", "memory/2025-01-01.md")  # gone from the index and the work tree
    w.wait_for(committed("memory/2025-01-01.md"))
    assert "memory/2025-01-01.md" not in _tree(ws)

    git(ws, "mv", "memory/2025-01-02.md", "memory/2025-01-03.md")  # a staged rename
    w.wait_for(committed("memory/2025-01-03.md"))
    assert {"memory/2025-01-03.md"} <= _tree(ws) and "memory/2025-01-02.md" not in _tree(ws)

    os.rename(ws / "memory/2025-01-05.md", ws / "memory/2025-01-06.md")  # a plain mv
    w.wait_for(committed("memory/2025-01-06.md"))
    with open(ws / "memory/2025-01-06.md", "a") as f:  # and later changes are still committed
        f.write("- six\n")
    w.wait_for(lambda e: e["event"] == "committed" and e["files"] == ["memory/2025-01-06.md"])
    assert "- six" in git(ws, "show", "HEAD:memory/2025-01-06.md")
    assert git(ws, "status", "--porcelain", "--", "memory") == ""
    assert not [e for e in w.seen if e["event"] == "error"], w.seen


@linux_only
@pytest.mark.slow
def test_watch_commits_the_other_files_and_gives_up_on_one_git_keeps_refusing(ws, watch):
    # a pre-commit hook that refuses any commit touching bad.md: only that file is left behind
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ngit diff --cached --name-only | grep -q 'bad.md' && exit 1\nexit 0\n")
    hook.chmod(0o755)
    w = watch(ws, "--commit", "--commit-after", "0.3", "--debounce", "0.1")
    w.ready()
    write(ws, "bank/bad.md", "# bad\n\n- refused by the hook\n")
    write(ws, "bank/good.md", "# good\n\n- fine\n")
    w.wait_for(lambda e: e["event"] == "committed" and e["files"] == ["bank/good.md"])
    gave_up = w.wait_for(lambda e: e["event"] == "error" and "gave up" in e["message"])
    assert gave_up["files"] == ["bank/bad.md"]
    write(ws, "bank/good.md", "# good\n\n- fine\n- still committed after a failure\n")
    w.wait_for(lambda e: e["event"] == "committed" and e["files"] == ["bank/good.md"])  # the next one
    assert "still committed" in git(ws, "show", "HEAD:bank/good.md")
    assert "bank/bad.md" not in _tree(ws)


def test_watch_outside_a_git_repository_fails_before_watching(tmp_path):
    (tmp_path / "memory").mkdir()
    proc = subprocess.run([zmem_exe(), "watch", "--json", "--exit-after", "5"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    refused(proc, "not a git repository")
    assert "watching" not in proc.stdout
