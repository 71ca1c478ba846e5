"""The shortcuts `zmem log` and `zmem diff` take give the answers of the long way: a timeline since a
day is the whole timeline from that day on; a diff between two commits of the chain reads only the
versions valid at one of them, as comparing every file's version at both would find; revisions and
blobs read with the git command equal pygit2's. Checked on a generated history with co-mentions,
spellings, edits, moves, retractions, a revert, a deleted and re-created file, a back-dated commit
and an opinions file that changes."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest

from helpers.workspace import commit_all, git, run, write

PEOPLE = ["Peter", "peter", "Ana", "Lucía", "Lucia", "[The Castle]", "warelay"]
OPINION = "## {text}\n- entities: @Peter\n- confidence: {c}\n- updated: 2025-10-01\n- evidence:\n"


def _fact(rng: random.Random) -> str:
    a, b = rng.sample(PEOPLE, 2)
    kind = rng.choice("WBOSR")
    if kind == "R":
        return f"- R @{a} knows @{b}: note {rng.randint(1, 9)}"
    conf = f"(c={rng.choice(['0.3', '0.9'])})" if kind == "O" else ""
    return f"- {kind}{conf} @{a}: met @{b} about item {rng.randint(1, 20)}."


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A workspace of 26 commits of Retain facts (dates out of order in places), and its history index;
    made once for the module: its tests only read it."""
    ws = tmp_path_factory.mktemp("history") / "ws"
    assert run(["init", "--no-hooks", str(ws)]).exit_code == 0
    rng = random.Random(7)
    files: dict[str, list[str]] = {}
    for i in range(24):
        day = f"2025-10-{i + 1:02d}"
        files[f"memory/{day}.md"] = [f"# {day}", "", "## Retain", ""] + [_fact(rng) for _ in range(rng.randint(2, 5))]
        older = sorted(files)[rng.randrange(len(files))]
        lines = files[older]
        if len(lines) > 5 and i % 3 == 0:
            j = rng.randrange(4, len(lines))
            if i % 2:
                lines[j] = lines[j].rstrip(".") + " indeed."  # changed
            else:
                files[f"memory/{day}.md"].append(lines.pop(j))  # moved to today's log
        if i == 10:
            del files[sorted(files)[2]]  # retracted with its file
        if i == 15:
            files[sorted(files)[2]] = files[sorted(files)[3]][:]  # another file re-created elsewhere
        for rel in list((ws / "memory").glob("2025-10-*.md")):
            if f"memory/{rel.name}" not in files:
                rel.unlink()
        for rel, lines in files.items():
            write(ws, rel, "\n".join(lines) + "\n")
        if i % 5 == 4:
            write(ws, "bank/opinions.md", "# Opinions\n\n" + OPINION.format(text="Likes tea.", c=f"0.{i % 9 + 1}"))
        date = f"2025-10-{(i * 7) % 24 + 1:02d}T12:00:00+00:00" if i in (17, 18) else f"2025-10-{i + 1:02d}T12:00:00+00:00"
        commit_all(ws, f"c{i}", date=date)
    log = ws / "memory/2025-10-05.md"
    kept = log.read_text()
    write(ws, "memory/2025-10-05.md", kept + "- W @Peter: only for a moment.\n")
    commit_all(ws, "tmp", date="2025-10-25T12:00:00+00:00")
    write(ws, "memory/2025-10-05.md", kept)  # reverted: the same blob as two commits before
    commit_all(ws, "revert", date="2025-10-26T12:00:00+00:00")
    assert run(["-C", str(ws), "index", "--history", "-q"]).exit_code == 0
    return ws


def test_a_timeline_since_a_day_is_the_whole_timeline_from_that_day_on(history):
    from zmem import Memory
    with Memory.open(history) as mem:
        for name in ("@Peter", "@ana", "@the-castle", "@Lucia"):
            whole = mem.log(name).events
            assert whole
            for since in ("2025-10-03", "2025-10-12", "2025-10-19", "2025-10-26", "2025-11-01"):
                assert mem.log(name, since=since).events == [e for e in whole if e["date"][:10] >= since]
            assert mem.log(name, since="2025-10-12", reverse=True).events == \
                [e for e in mem.log(name, reverse=True).events if e["date"][:10] >= "2025-10-12"]


def test_a_diff_on_the_chain_reads_the_versions_that_differ_as_the_trees_show_them(history):
    from zmem import Memory
    from zmem.history.asof import resolve_as_of
    from zmem.history.timeline import _versions_that_differ
    with Memory.open(history) as mem:
        ws, conn = mem.workspace, mem.conn
        revs = ["HEAD", "HEAD~1", "HEAD~2", "HEAD~5", "HEAD~12", "HEAD~20", "HEAD~25"]
        for r1 in revs:
            for r2 in revs:
                a, b = resolve_as_of(ws, conn, r1), resolve_as_of(ws, conn, r2)
                assert a.seq is not None and b.seq is not None
                # seq None: the way of a commit off the chain (every file of both trees, from git)
                assert _versions_that_differ(ws, conn, a, b) == \
                    _versions_that_differ(ws, conn, replace(a, seq=None), replace(b, seq=None)), (r1, r2)
        a, b = resolve_as_of(ws, conn, "HEAD~2"), resolve_as_of(ws, conn, "HEAD")
        assert _versions_that_differ(ws, conn, a, b) == ({}, {})  # the revert
        assert mem.diff("HEAD~2", "HEAD").to_json()["facts"]["added"] == []
        assert [o["change"] for o in mem.diff("HEAD~20", "HEAD").opinions] == ["confidence"]


def test_revisions_and_blobs_from_the_git_command_are_pygit2s(history):
    from zmem.git.gitstatus import open_command_repo, read_blobs
    from zmem.git.repo import open_repo
    repo, command = open_repo(history), open_command_repo(history)
    # (`^{/text}` among commits dated out of order is the one difference: git takes the youngest by date)
    for rev in ("HEAD", "HEAD~3", "main", "@", "HEAD^{/c2[0-9]}", git(history, "rev-parse", "--short", "HEAD~4"),
                "HEAD:memory", "nonsense", "2025-10-01", "-1", "--all", "", "HEAD~99"):
        assert command.resolve(rev) == repo.resolve(rev), rev
    blobs = [b for _, b in sorted(repo.tree_files(repo.head()).items())][:7]
    assert list(read_blobs(history, blobs, batch=3)) == [(b, repo.read_blob(b)) for b in blobs]
    with pytest.raises(KeyError):
        list(read_blobs(history, [blobs[0], "0" * 40]))
