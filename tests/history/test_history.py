"""History as memory, in real repositories with controlled commit dates: as-of recall checked
against a brute-force oracle (git show of every file at every commit), blame with the evidence
chain, entity timelines, belief diffs, and the edge cases (renames, merges, out-of-order dates,
rewritten history, empty and shallow repositories, detached HEAD)."""
from __future__ import annotations

import json
import os
import random
import subprocess

import pytest

from helpers.workspace import RETAIN, commit_all, git, refused, run, write, zmem_proc

WORDS = ["lisbon", "porto", "gateway", "tea", "coffee", "studio", "marrakech", "birthday", "deploy", "garden"]


def _json(args, env=None):
    if env:  # a time zone must reach a fresh process: time.tzset() would leak into other tests
        proc = zmem_proc(*args, env=env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)
    res = run(args)
    assert res.exit_code == 0, res.output + res.stderr
    return json.loads(res.stdout)


def _oracle(root, sha: str, word: str) -> set[str]:
    """Memory files containing word at commit sha, by reading every file with git itself."""
    names = git(root, "ls-tree", "-r", "--name-only", sha).splitlines()
    out = set()
    for name in names:
        if not (name.startswith(("memory/", "bank/")) or name == "MEMORY.md") or not name.endswith(".md"):
            continue
        if word in git(root, "show", f"{sha}:{name}").lower():
            out.add(name)
    return out


@pytest.mark.slow
def test_as_of_recall_matches_a_brute_force_oracle(ws):
    rng = random.Random(3)
    shas = []
    for i in range(12):
        for _ in range(3):
            day = f"2025-10-{rng.randrange(1, 28):02d}"
            path = ws / f"memory/{day}.md"
            if path.exists() and rng.random() < 0.3:
                path.unlink()
                continue
            write(ws, f"memory/{day}.md", f"# {day}\n\n- " + " ".join(rng.sample(WORDS, 3)) + f" note {i}\n")
        # out-of-order dates on purpose: commit i is dated by a shuffled day
        shas.append(commit_all(ws, f"c{i}", date=f"2025-11-{(i * 7) % 12 + 1:02d}T12:00:00+00:00"))
    assert _json(["-C", str(ws), "index", "--history", "--json"])["history"]["commits"] == 13
    for sha in shas:
        for word in WORDS:
            got = _json(["-C", str(ws), "recall", word, "--as-of", sha, "-k", "100", "--json"])
            assert {r["path"] for r in got["results"]} == _oracle(ws, sha, word), (sha, word)
            for r in got["results"]:
                assert r["citation"].startswith(f"{r['path']}@{sha[:10]}#L")
                back = _json(["-C", str(ws), "get", r["citation"], "--json"])
                assert back["text"] == r["snippet"]  # the as-of citation reads back exactly


def test_as_of_by_date_picks_the_last_commit_at_or_before_it(ws):
    write(ws, "memory/2025-11-01.md", "- Peter lives in Lisbon\n")
    a = commit_all(ws, "lisbon", date="2025-11-01T10:00:00+00:00")
    write(ws, "memory/2025-11-01.md", "- Peter lives in Porto\n")
    b = commit_all(ws, "porto", date="2025-11-10T10:00:00+00:00")
    got = _json(["-C", str(ws), "recall", "Peter lives", "--as-of", "2025-11-05", "--json"])
    assert got["as_of"]["commit"] == a and "Lisbon" in got["results"][0]["snippet"]
    got = _json(["-C", str(ws), "recall", "Peter lives", "--as-of", "2025-11-10", "--json"])
    assert got["as_of"]["commit"] == b and "Porto" in got["results"][0]["snippet"]
    # the current view no longer has Lisbon; history does
    assert _json(["-C", str(ws), "recall", "Lisbon", "--json"])["results"] == []
    bad = run(["-C", str(ws), "recall", "x", "--as-of", "1999-01-01"])
    assert bad.exit_code == 1 and "no commit on this branch" in bad.stderr and "hint:" in bad.stderr
    bad = run(["-C", str(ws), "recall", "x", "--as-of", "not-a-rev"])
    assert bad.exit_code == 1 and "neither a date nor a revision" in bad.stderr


def test_renames_merges_rewrites_and_detached_head(ws):
    write(ws, "memory/2025-11-02.md", "- The gateway runs on the Mac Studio\n")
    first = commit_all(ws, "gateway", date="2025-11-02T10:00:00+00:00")
    assert run(["-C", str(ws), "index", "--history"]).exit_code == 0
    git(ws, "mv", "memory/2025-11-02.md", "memory/2025-11-03.md")
    renamed = commit_all(ws, "rename", date="2025-11-03T10:00:00+00:00")
    log = _json(["-C", str(ws), "log", "memory/2025-11-03.md", "--json"])
    assert [e["commit"] for e in log["events"]] == [renamed, first]  # history follows the rename
    assert log["events"][1]["path"] == "memory/2025-11-02.md"

    # a merge: the side branch's note is in memory as of the merge commit
    git(ws, "checkout", "-q", "-b", "side")
    write(ws, "memory/2025-11-04.md", "- Garden party planned\n")
    commit_all(ws, "side", date="2025-11-04T10:00:00+00:00")
    git(ws, "checkout", "-q", "main")
    write(ws, "memory/2025-11-05.md", "- Coffee with Ana\n")
    commit_all(ws, "main work", date="2025-11-05T10:00:00+00:00")
    git(ws, "merge", "-q", "--no-ff", "side", "-m", "merge side",
        env={"GIT_AUTHOR_DATE": "2025-11-06T10:00:00+00:00", "GIT_COMMITTER_DATE": "2025-11-06T10:00:00+00:00"})
    merge = git(ws, "rev-parse", "HEAD")
    got = _json(["-C", str(ws), "recall", "garden", "--as-of", merge, "--json"])
    assert [r["path"] for r in got["results"]] == ["memory/2025-11-04.md"]
    got = _json(["-C", str(ws), "recall", "garden", "--as-of", "2025-11-05", "--json"])
    assert got["results"] == []  # before the merge, on this branch
    # a commit off the first-parent chain (the side branch itself) still works, read from its tree
    side = git(ws, "rev-parse", "side")
    assert _json(["-C", str(ws), "recall", "garden", "--as-of", side, "--json"])["results"]

    # rewritten history: reset away the merge and commit something else; the chain is repaired
    git(ws, "reset", "-q", "--hard", renamed)
    write(ws, "memory/2025-11-07.md", "- Deploy moved to Friday\n")
    commit_all(ws, "rewrite", date="2025-11-07T10:00:00+00:00")
    res = run(["-C", str(ws), "recall", "deploy", "--json"])
    assert res.exit_code == 0 and "history was rewritten" in res.stderr
    from zmem.index.catchup import open_index
    from zmem.workspace.core import find_workspace
    conn = open_index(find_workspace(str(ws)))
    chain = [s for s, in conn.execute("SELECT sha FROM hist_commits ORDER BY seq")]
    conn.close()
    assert chain == git(ws, "rev-list", "--first-parent", "--reverse", "HEAD").splitlines()
    assert _json(["-C", str(ws), "recall", "garden", "--as-of", "HEAD", "--json"])["results"] == []

    # detached HEAD: as-of and the current view follow HEAD
    git(ws, "checkout", "-q", "--detach", first)
    got = _json(["-C", str(ws), "recall", "gateway", "--as-of", "HEAD", "--json"])
    assert {r["path"] for r in got["results"]} == {"memory/2025-11-02.md", "memory/2025-11-24.md"}  # not -03


def test_blame_and_the_evidence_chain(ws):
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n## Retain\n- O(c=0.6) @Peter: Prefers tea.\n")
    day = commit_all(ws, "day", date="2025-11-24T10:00:00+00:00")
    reflected = _json(["-C", str(ws), "reflect", "--json"])["commit"]
    b = _json(["-C", str(ws), "blame", "memory/2025-11-24.md#L4", "--json"])
    (r,) = b["ranges"]
    assert r["lines"][0]["commit"] == day and r["lines"][0]["author"] == "Test Author"
    assert r["lines"][0]["date"].startswith("2025-11-24") and r["evidence"] == []
    # a line reflect wrote leads to the daily-log line it came from
    page = (ws / "bank/entities/Peter.md").read_text().splitlines()
    n = next(i for i, line in enumerate(page, 1) if "Prefers tea." in line)
    b = _json(["-C", str(ws), "blame", f"bank/entities/Peter.md:{n}", "--json"])
    (r,) = b["ranges"]
    assert r["lines"][0]["commit"] == reflected
    (ev,) = r["evidence"]
    assert ev["path"] == "memory/2025-11-24.md" and ev["lines"][0]["commit"] == day
    # by fact id, and by query
    fid = _json(["-C", str(ws), "facts", "--json"])["facts"][0]["id"]
    assert _json(["-C", str(ws), "blame", fid, "--json"])["ranges"][0]["start_line"] == 4
    assert _json(["-C", str(ws), "blame", "prefers tea", "--json"])["ranges"]
    # uncommitted lines say so
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n## Retain\n- O(c=0.6) @Peter: Prefers tea.\n- new line\n")
    (r,) = _json(["-C", str(ws), "blame", "memory/2025-11-24.md#L5", "--json"])["ranges"]
    assert r["lines"][0]["commit"] is None and r["lines"][0]["summary"] == "not committed yet"
    bad = run(["-C", str(ws), "blame", "../etc/passwd:1"])
    assert bad.exit_code == 1 and "hint:" in bad.stderr


def test_entity_log_and_belief_diff(ws):
    write(ws, "memory/2025-11-24.md", "## Retain\n- W @Peter: Lives in Lisbon.\n- O(c=0.6) @Peter: Prefers tea.\n")
    a = commit_all(ws, "one", date="2025-11-24T10:00:00+00:00")
    write(ws, "memory/2025-11-24.md", "## Retain\n- W @Peter: Lives in Porto.\n- O(c=0.6) @Peter: Prefers tea.\n"
          "- B @Peter: Ran a marathon.\n")
    b = commit_all(ws, "two", date="2025-11-25T10:00:00+00:00")
    write(ws, "memory/2025-11-24.md", "## Retain\n- O(c=0.6) @Peter: Prefers tea.\n- B @Peter: Ran a marathon.\n")
    c = commit_all(ws, "three", date="2025-11-26T10:00:00+00:00")
    log = _json(["-C", str(ws), "log", "@Peter", "--json", "--reverse"])["events"]
    assert [(e["event"], e["text"], e["commit"]) for e in log] == [
        ("added", "Lives in Lisbon.", a), ("added", "Prefers tea.", a),
        ("changed", "Lives in Porto.", b), ("added", "Ran a marathon.", b),
        ("retracted", "Lives in Porto.", c)]
    assert log[2]["old_text"] == "Lives in Lisbon."
    d = _json(["-C", str(ws), "diff", a, c, "--entity", "Peter", "--json"])
    assert [f["text"] for f in d["facts"]["added"]] == ["Ran a marathon."]
    assert [f["text"] for f in d["facts"]["retracted"]] == ["Lives in Lisbon."]
    assert d["facts"]["retracted"][0]["source"] == f"memory/2025-11-24.md@{a[:10]}#L2"
    d = _json(["-C", str(ws), "diff", a, b, "--json"])
    assert [(x["from"]["text"], x["to"]["text"]) for x in d["facts"]["changed"]] == [("Lives in Lisbon.", "Lives in Porto.")]


def test_diff_across_a_rename_then_an_edit_says_changed(ws):
    """`git mv`, then an edit of the fact, in two commits: log said moved, then changed; diff of the two
    ends said added + retracted (git sees no rename between them: too little of a short note is alike)."""
    write(ws, "memory/2025-11-02.md", "# 2025-11-02\n\n## Retain\n- W @Peter: Lives in Lisbon.\n")
    a = commit_all(ws, "one", date="2025-11-02T10:00:00+00:00")
    git(ws, "mv", "memory/2025-11-02.md", "memory/2025-11-02-trip.md")
    commit_all(ws, "renamed", date="2025-11-03T10:00:00+00:00")
    write(ws, "memory/2025-11-02-trip.md", "# 2025-11-02\n\n## Retain\n- W @Peter: Lives in Madrid.\n")
    c = commit_all(ws, "edited", date="2025-11-04T10:00:00+00:00")
    d = _json(["-C", str(ws), "diff", a, c, "--json"])["facts"]
    assert d["added"] == [] and d["retracted"] == []
    assert [(x["from"]["text"], x["to"]["text"]) for x in d["changed"]] == [("Lives in Lisbon.", "Lives in Madrid.")]


def test_opinion_confidence_in_log_and_diff(ws):
    write(ws, "memory/2025-11-24.md", "## Retain\n- O(c=0.6) @Peter: Prefers tea.\n")
    commit_all(ws, "one", date="2025-11-24T10:00:00+00:00")
    first = _json(["-C", str(ws), "reflect", "--json"])["commit"]
    write(ws, "memory/2025-11-25.md", "## Retain\n- O(c=0.9) @Peter: Prefers tea!\n")
    commit_all(ws, "two", date="2025-11-25T10:00:00+00:00")
    second = _json(["-C", str(ws), "reflect", "--json"])["commit"]
    d = _json(["-C", str(ws), "diff", first, second, "--json"])
    (o,) = d["opinions"]
    assert (o["change"], o["from"], o["to"]) == ("confidence", 0.6, 0.67)
    assert o["evidence"][0]["source"] == "memory/2025-11-25.md#L2"
    log = _json(["-C", str(ws), "log", "Peter", "--json"])["events"]
    changed = [e for e in log if e["event"] == "confidence changed"]
    assert changed and (changed[0]["old_confidence"], changed[0]["confidence"]) == (0.6, 0.67)


def test_empty_and_shallow_repositories(tmp_path, ws):
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))  # a repository that was there: init commits nothing in it
    assert run(["init", "--no-hooks", str(empty)]).exit_code == 0
    res = run(["-C", str(empty), "recall", "x", "--as-of", "HEAD"])
    assert res.exit_code == 1 and "no commits yet" in res.stderr and "hint:" in res.stderr
    assert run(["-C", str(empty), "index", "--history"]).exit_code == 0

    for i in range(3):
        write(ws, f"memory/2025-11-0{i + 1}.md", f"- note {i} garden\n")
        commit_all(ws, f"n{i}", date=f"2025-11-0{i + 1}T10:00:00+00:00")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{ws}", str(shallow)], check=True)
    res = run(["-C", str(shallow), "index", "--history"])
    assert res.exit_code == 0 and "shallow clone" in res.stderr
    got = _json(["-C", str(shallow), "recall", "garden", "--as-of", "HEAD~1", "--json"])
    assert {r["path"] for r in got["results"]} == {"memory/2025-11-01.md", "memory/2025-11-02.md"}


def test_a_fully_retracted_entity_is_still_known_to_history(ws):
    write(ws, "memory/2025-11-20.md", "## Retain\n- W @Zed: Lives in Lima.\n")
    a = commit_all(ws, "zed", date="2025-11-20T10:00:00+00:00")
    write(ws, "memory/2025-11-20.md", "## Retain\n- W @Ana: Lives in Quito.\n")
    commit_all(ws, "zed gone", date="2025-11-21T10:00:00+00:00")
    assert run(["-C", str(ws), "log", "@Nobody"]).exit_code == 1  # unknown everywhere: still an error
    log = _json(["-C", str(ws), "log", "@Zed", "--json", "--reverse"])["events"]
    assert [(e["event"], e["text"]) for e in log] == [("added", "Lives in Lima."), ("retracted", "Lives in Lima.")]
    got = _json(["-C", str(ws), "recall", "Lima", "--as-of", "HEAD~1", "--entity", "Zed", "--json"])
    assert [r["text"] for r in got["results"]] == ["Lives in Lima."]
    d = _json(["-C", str(ws), "diff", a, "HEAD", "--entity", "Zed", "--json"])
    assert [f["text"] for f in d["facts"]["retracted"]] == ["Lives in Lima."] and d["facts"]["added"] == []


def _blamed_commit(ws, target):
    (r,) = _json(["-C", str(ws), "blame", target, "--json"])["ranges"]
    return r["lines"][0]["commit"]


def test_blame_cache_follows_amends_and_reverts(ws):
    for with_history in (False, True):
        day = f"memory/2025-12-0{1 + with_history}.md"
        if with_history:
            assert run(["-C", str(ws), "index", "--history"]).exit_code == 0
        write(ws, day, "- The gateway runs on the Mac Studio\n")
        first = commit_all(ws, "gateway", date="2025-12-01T10:00:00+00:00")
        assert _blamed_commit(ws, f"{day}#L1") == first
        # amend: same content, new commit; the old one is gone from the branch
        git(ws, "commit", "-q", "--amend", "-m", "gateway (amended)",
            env={"GIT_AUTHOR_DATE": "2025-12-01T11:00:00+00:00", "GIT_COMMITTER_DATE": "2025-12-01T11:00:00+00:00"})
        amended = git(ws, "rev-parse", "HEAD")
        assert amended != first and _blamed_commit(ws, f"{day}#L1") == amended
        # a revert restores the earlier blob; git blame credits the revert commit
        write(ws, day, "- The gateway runs on the Mac mini\n")
        changed = commit_all(ws, "mini", date="2025-12-02T10:00:00+00:00")
        assert _blamed_commit(ws, f"{day}#L1") == changed
        git(ws, "revert", "--no-edit", "HEAD",
            env={"GIT_AUTHOR_DATE": "2025-12-03T10:00:00+00:00", "GIT_COMMITTER_DATE": "2025-12-03T10:00:00+00:00"})
        reverted = git(ws, "rev-parse", "HEAD")
        expected = git(ws, "blame", "--porcelain", "-L1,1", "--", day).split()[0]
        assert expected == reverted and _blamed_commit(ws, f"{day}#L1") == reverted
        # the earlier revision still blames as it was
        assert _blamed_commit(ws, f"{day}@{amended}#L1") == amended


def test_log_and_diff_follow_a_renamed_file(ws):
    write(ws, "memory/2025-11-02.md", "## Retain\n- O(c=0.6) @Peter: Prefers tea.\n- W @Peter: Lives in Lisbon.\n")
    a = commit_all(ws, "one", date="2025-11-02T10:00:00+00:00")
    git(ws, "mv", "memory/2025-11-02.md", "memory/2025-11-03.md")
    b = commit_all(ws, "rename", date="2025-11-03T10:00:00+00:00")
    log = _json(["-C", str(ws), "log", "@Peter", "--json", "--reverse"])["events"]
    assert [(e["event"], e["text"], e["commit"]) for e in log] == [
        ("added", "Prefers tea.", a), ("added", "Lives in Lisbon.", a),
        ("moved", "Prefers tea.", b), ("moved", "Lives in Lisbon.", b)]
    assert log[2]["old_path"] == "memory/2025-11-02.md" and log[2]["path"] == "memory/2025-11-03.md"
    assert log[2]["source"] == f"memory/2025-11-03.md@{b[:10]}#L2"
    text = run(["-C", str(ws), "log", "@Peter"]).stdout
    assert "retracted" not in text and "(from memory/2025-11-02.md)" in text
    d = _json(["-C", str(ws), "diff", a, b, "--json"])
    f = d["facts"]
    assert f["added"] == f["retracted"] == f["changed"] == f["confidence"] == [] and d["opinions"] == []
    assert sorted(m["to"]["text"] for m in f["moved"]) == ["Lives in Lisbon.", "Prefers tea."]
    out = run(["-C", str(ws), "diff", a, b]).stdout
    assert "=>" not in out and "moved" in out


def test_a_confidence_change_in_a_daily_log_shows_in_log_and_diff(ws):
    write(ws, "memory/2025-11-24.md", "## Retain\n- O(c=0.8) @Peter: Prefers tea.\n")
    a = commit_all(ws, "sure", date="2025-11-24T10:00:00+00:00")
    write(ws, "memory/2025-11-24.md", "## Retain\n- O(c=0.3) @Peter: Prefers tea.\n")
    b = commit_all(ws, "unsure", date="2025-11-25T10:00:00+00:00")
    log = _json(["-C", str(ws), "log", "@Peter", "--json", "--reverse"])["events"]
    assert [(e["event"], e["commit"]) for e in log] == [("added", a), ("confidence changed", b)]
    assert (log[1]["old_confidence"], log[1]["confidence"]) == (0.8, 0.3)
    assert "0.80 -> 0.30" in run(["-C", str(ws), "log", "@Peter"]).stdout
    d = _json(["-C", str(ws), "diff", a, b, "--json"])
    (c,) = d["facts"]["confidence"]
    assert (c["from"]["confidence"], c["to"]["confidence"], c["to"]["text"]) == (0.8, 0.3, "Prefers tea.")
    assert d["facts"]["added"] == d["facts"]["retracted"] == d["facts"]["changed"] == []
    assert "c 0.80 -> 0.30: Prefers tea." in run(["-C", str(ws), "diff", a, b]).stdout


def test_blame_follows_a_line_moved_within_its_file(ws):
    lines = ["- W @Peter: Lives in Lisbon near the old castle since 2019.",
             "- B @Peter: Ran the Porto marathon in under four hours.",
             "- W @Ana: Works at the gateway team on the Mac Studio host."]
    write(ws, "memory/2025-11-10.md", "## Retain\n" + "\n".join(lines) + "\n")
    first = commit_all(ws, "three facts", date="2025-11-10T10:00:00+00:00")
    write(ws, "memory/2025-11-10.md", "## Retain\n" + "\n".join(lines[1:] + lines[:1]) + "\n")
    commit_all(ws, "reorder", date="2025-11-11T10:00:00+00:00")
    (r,) = _json(["-C", str(ws), "blame", "memory/2025-11-10.md#L2-L4", "--json"])["ranges"]
    assert [ln["commit"] for ln in r["lines"]] == [first] * 3


def test_a_shallow_clone_says_what_is_missing(tmp_path, ws):
    for i in range(3):
        write(ws, f"memory/2025-11-0{i + 1}.md", f"## Retain\n- W @Peter: note {i} garden\n")
        commit_all(ws, f"n{i}", date=f"2025-11-0{i + 1}T10:00:00+00:00")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{ws}", str(shallow)], check=True)
    note = "shallow clone: history before 2025-11-02 is missing (git fetch --unshallow)"
    assert run(["-C", str(shallow), "index", "--history"]).exit_code == 0
    bad = run(["-C", str(shallow), "recall", "x", "--as-of", "2025-11-01"])
    assert bad.exit_code == 1 and note in bad.stderr
    res = run(["-C", str(shallow), "recall", "garden", "--as-of", "HEAD", "--json"])
    assert res.exit_code == 0 and note in json.loads(res.stdout)["warnings"]
    (r,) = _json(["-C", str(shallow), "blame", "memory/2025-11-01.md#L2", "--json"])["ranges"]
    assert r["note"] == note  # the line is older than the clone: credited to its oldest commit
    assert note in run(["-C", str(shallow), "blame", "memory/2025-11-01.md#L2"]).stdout
    for args in (["log", "@Peter"], ["log", "memory/2025-11-01.md"], ["diff", "HEAD~1"]):
        res = run(["-C", str(shallow), *args])
        assert res.exit_code == 0 and note in res.stderr, args
    # a full clone says nothing of the sort
    (r,) = _json(["-C", str(ws), "blame", "memory/2025-11-01.md#L2", "--json"])["ranges"]
    assert r["note"] is None


def test_file_log_lists_the_facts_each_commit_changed(ws):
    write(ws, "memory/2025-11-20.md", "## Retain\n- W @Peter: Lives in Lisbon.\n- O(c=0.8) @Peter: Prefers tea.\n")
    a = commit_all(ws, "one", date="2025-11-24T10:00:00+00:00")
    write(ws, "memory/2025-11-20.md", "## Retain\n- W @Peter: Lives in Porto.\n- O(c=0.3) @Peter: Prefers tea.\n"
          "- B @Peter: Ran a marathon.\n")
    b = commit_all(ws, "two", date="2025-11-25T10:00:00+00:00")
    git(ws, "mv", "memory/2025-11-20.md", "memory/2025-11-26.md")
    write(ws, "memory/2025-11-26.md", "## Retain\n- W @Peter: Lives in Porto.\n- O(c=0.3) @Peter: Prefers tea.\n")
    c = commit_all(ws, "three", date="2025-11-26T10:00:00+00:00")
    events = _json(["-C", str(ws), "log", "memory/2025-11-26.md", "--json"])["events"]
    assert [e["commit"] for e in events] == [c, b, a]
    assert all("added" in e and "removed" in e for e in events)  # the line counts stay

    def facts(e):
        return {k: [(f["text"], f.get("old_text"), f.get("old_confidence"), f["confidence"]) for f in v]
                for k, v in e["facts"].items() if v}
    assert facts(events[2]) == {"added": [("Lives in Lisbon.", None, None, None), ("Prefers tea.", None, None, 0.8)]}
    assert facts(events[1]) == {"added": [("Ran a marathon.", None, None, None)],
                                "changed": [("Lives in Porto.", "Lives in Lisbon.", None, None)],
                                "confidence": [("Prefers tea.", None, 0.8, 0.3)]}
    assert facts(events[0]) == {"retracted": [("Ran a marathon.", None, None, None)]}  # not the renamed rest
    out = run(["-C", str(ws), "log", "memory/2025-11-26.md"]).stdout
    assert "+ experience: Ran a marathon." in out and "- experience: Ran a marathon.  (retracted)" in out
    assert "Lives in Lisbon.  =>  Lives in Porto." in out and "c 0.80 -> 0.30: Prefers tea." in out


def test_blame_text_shows_the_summary_and_uncommitted_lines(ws):
    write(ws, "memory/2025-11-21.md", "- The gateway runs on the Mac Studio\n")
    day = commit_all(ws, "Move the gateway to the studio", date="2025-11-21T10:00:00+00:00")
    write(ws, "memory/2025-11-21.md", "- The gateway runs on the Mac Studio\n- not yet committed\n")
    out = run(["-C", str(ws), "blame", "memory/2025-11-21.md#L1-L2"]).stdout.splitlines()
    assert day[:10] in out[1] and "(Move the gateway to the studio)" in out[1]
    assert "(not committed)" in out[2] and "uncommitte " not in out[2] and "not yet committed" in out[2]


def test_as_of_fact_results_cite_the_version_they_come_from(ws):
    write(ws, "memory/2025-11-22.md", "## Retain\n- W @Ana: Works in Quito.\n- W @Peter: Moved to Berlin.\n")
    a = commit_all(ws, "berlin", date="2025-11-22T10:00:00+00:00")
    write(ws, "memory/2025-11-22.md", "## Retain\n- W @Ana: Works in Quito.\n")
    commit_all(ws, "gone", date="2025-11-23T10:00:00+00:00")
    got = _json(["-C", str(ws), "recall", "Berlin", "--as-of", a, "--entity", "Peter", "--json"])
    (r,) = got["results"]
    assert r["source"] == f"memory/2025-11-22.md@{a[:10]}#L3" and r["citation"] == f"memory/2025-11-22.md@{a[:10]}#L3-L3"
    assert _json(["-C", str(ws), "get", r["source"], "--json"])["text"] == "- W @Peter: Moved to Berlin."


def test_as_of_fact_recall_lists_no_fact_that_shares_no_word_with_the_query(ws):
    # it listed the newest facts of the commit, scored 0, whatever was asked: an empty list means nothing matched
    write(ws, "memory/2025-11-22.md", "## Retain\n- W @Ana: Works in Quito.\n- W @Peter: Moved to Berlin.\n")
    a = commit_all(ws, "berlin", date="2025-11-22T10:00:00+00:00")
    got = _json(["-C", str(ws), "recall", "submarine periscope", "--as-of", a, "--kind", "world", "--json"])
    assert got["results"] == [] and not any("did not match" in w for w in got["warnings"])
    now = _json(["-C", str(ws), "recall", "submarine periscope", "--kind", "world", "--json"])
    assert now["results"] == []  # as current facts recall says
    got = _json(["-C", str(ws), "recall", "Berlin", "--as-of", a, "--kind", "world", "--json"])
    assert [r["text"] for r in got["results"]] == ["Moved to Berlin."]
    # about an entity its facts still answer, after the matches and said so, as in current recall
    got = _json(["-C", str(ws), "recall", "submarine", "--as-of", a, "--entity", "Peter", "--json"])
    assert [r["text"] for r in got["results"]] == ["Moved to Berlin."]
    said = "1 of the facts shown did not match the query; listed newest first"
    assert said in got["warnings"]
    assert said in _json(["-C", str(ws), "recall", "submarine", "--entity", "Peter", "--json"])["warnings"]


def test_moving_head_is_not_called_a_rewrite(ws):
    from zmem.index.history import update_history
    from zmem.index.catchup import open_index
    from zmem.git.repo import open_repo
    from zmem.workspace.core import find_workspace
    for i in range(4):
        write(ws, f"memory/2025-11-1{i}.md", f"- note {i}\n")
        commit_all(ws, f"n{i}", date=f"2025-11-1{i}T10:00:00+00:00")
    assert run(["-C", str(ws), "index", "--history"]).exit_code == 0
    w = find_workspace(str(ws))
    conn = open_index(w)
    try:
        git(ws, "checkout", "-q", "--detach", "HEAD~3")  # main still holds the 3 commits
        up = update_history(w, open_repo(w.root), conn)
        assert (up.rewound, up.rewritten) == (3, False)
        assert "rewritten" not in up.rewound_note() and "HEAD moved off 3 commits" in up.rewound_note()
        git(ws, "checkout", "-q", "main")
        assert update_history(w, open_repo(w.root), conn).rewound == 0  # back on the chain: replayed
        git(ws, "reset", "-q", "--hard", "HEAD~2")  # now those 2 commits are on no ref
        up = update_history(w, open_repo(w.root), conn)
        assert (up.rewound, up.rewritten) == (2, True) and "history was rewritten: 2 commits" in up.rewound_note()
    finally:
        conn.close()


def test_a_commit_dated_past_year_9999_does_not_crash_history(ws):
    """git accepts any date; Python's datetime stops at 9999."""
    write(ws, "memory/2025-12-05.md", "# 2025-12-05\n\n- A note from the far future.\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "future", env={"GIT_COMMITTER_DATE": "@9999999999999 +0000",
                                                 "GIT_AUTHOR_DATE": "@9999999999999 +0000"})
    for args in (["recall", "far future", "--as-of", "HEAD", "--json"], ["diff", "HEAD~1", "HEAD"],
                 ["blame", "memory/2025-12-05.md#L3"]):
        res = run(["-C", str(ws), *args])
        assert res.exit_code == 0 and "internal error" not in res.stderr, (args, res.stderr)


def test_a_fact_is_its_kind_text_and_entities_in_diff_and_log(ws):
    """The same words about another entity are another fact: moving `prefers coffee` from Peter
    to Zhang retracts one and adds the other, and a second person's fact worded like the first
    one's is added (and later retracted) on its own."""
    write(ws, "memory/2025-04-05.md", "## Retain\n- W @Peter: prefers coffee\n- W @Ana: works remotely\n")
    a = commit_all(ws, "one", date="2025-04-05T10:00:00+00:00")
    write(ws, "memory/2025-04-05.md", "## Retain\n- W @Zhang: prefers coffee\n- W @Ana: works remotely\n"
          "- W @Zhang: works remotely\n")
    b = commit_all(ws, "two", date="2025-04-06T10:00:00+00:00")
    write(ws, "memory/2025-04-05.md", "## Retain\n- W @Zhang: prefers coffee\n- W @Zhang: works remotely\n")
    c = commit_all(ws, "three", date="2025-04-07T10:00:00+00:00")

    def brief(facts):
        return sorted((f["text"], tuple(f["entities"])) for f in facts)
    d = _json(["-C", str(ws), "diff", a, b, "--json"])["facts"]
    assert brief(d["added"]) == [("prefers coffee", ("Zhang",)), ("works remotely", ("Zhang",))]
    assert brief(d["retracted"]) == [("prefers coffee", ("Peter",))] and d["changed"] == []
    d = _json(["-C", str(ws), "diff", b, c, "--json"])["facts"]
    assert brief(d["retracted"]) == [("works remotely", ("Ana",))] and d["added"] == []
    events = _json(["-C", str(ws), "log", "memory/2025-04-05.md", "--json"])["events"]
    assert [brief(e["facts"]["retracted"]) for e in events] == [[("works remotely", ("Ana",))],
                                                                [("prefers coffee", ("Peter",))], []]


def test_file_log_follows_a_rename_from_a_non_ascii_name(ws):
    """git quotes non-ASCII paths in its output unless told not to: the log of a file renamed
    from `João.md` names the old path as written and finds its facts there."""
    write(ws, "bank/entities/João.md", "# João\n\n## Retain\n- W @João: lives in Lisbon\n")
    a = commit_all(ws, "one", date="2025-04-05T10:00:00+00:00")
    git(ws, "mv", "bank/entities/João.md", "bank/entities/Joao.md")
    b = commit_all(ws, "rename", date="2025-04-06T10:00:00+00:00")
    events = _json(["-C", str(ws), "log", "bank/entities/Joao.md", "--json"])["events"]
    assert [(e["commit"], e["path"]) for e in events] == [(b, "bank/entities/Joao.md"), (a, "bank/entities/João.md")]
    assert [f["text"] for f in events[1]["facts"]["added"]] == ["lives in Lisbon"]
    assert all(not v for v in events[0]["facts"].values())


def test_as_of_recall_cites_each_of_two_files_with_the_same_content(ws):
    """History keeps a blob's chunks once; two paths holding it at the commit are two hits."""
    write(ws, "memory/2025-03-05.md", "# 2025-03-05\n\nzorblax meeting with Ana\n")
    write(ws, "memory/copies/2025-03-05.md", "# 2025-03-05\n\nzorblax meeting with Ana\n")
    sha = commit_all(ws, "copy", date="2025-03-05T10:00:00+00:00")
    res = _json(["-C", str(ws), "recall", "zorblax", "--as-of", "HEAD", "--json"])
    assert sorted(h["citation"] for h in res["results"]) == [
        f"memory/2025-03-05.md@{sha[:10]}#L3-L3", f"memory/copies/2025-03-05.md@{sha[:10]}#L3-L3"]
    now = _json(["-C", str(ws), "recall", "zorblax", "--json"])
    assert sorted(h["path"] for h in now["results"]) == sorted(h["path"] for h in res["results"])


@pytest.mark.slow
def test_committed_symlinks_are_not_notes_in_history(ws):
    write(ws, "memory/2025-06-01.md", "# 2025-06-01\n\n- the narwhal tusk is a tooth\n")
    write(ws, "memory/2025-06-04.md", "# 2025-06-04\n\n- a real note about the narwhal first\n")
    real = commit_all(ws, "real")
    (ws / "memory/2025-06-04.md").unlink()
    os.symlink("2025-06-01.md", ws / "memory/2025-06-04.md")
    commit_all(ws, "now a symlink")
    assert zmem_proc("-C", str(ws), "index", "--history").returncode == 0

    refused(zmem_proc("-C", str(ws), "get", "memory/2025-06-04.md", "--rev", "HEAD"), "symlink")
    refused(zmem_proc("-C", str(ws), "get", "memory/2025-06-04.md"), "symlink")
    assert "real note" in zmem_proc("-C", str(ws), "get", "memory/2025-06-04.md", "--rev", real).stdout

    def as_of(query, rev):
        proc = zmem_proc("-C", str(ws), "recall", query, "--as-of", rev, "--json")
        assert proc.returncode == 0, proc.stderr
        return {r["path"] for r in json.loads(proc.stdout)["results"]}
    assert as_of("narwhal", "HEAD") == {"memory/2025-06-01.md"}
    assert "memory/2025-06-04.md" not in as_of("2025-06-01.md", "HEAD")  # the link's target text
    assert as_of("narwhal", real) == {"memory/2025-06-01.md", "memory/2025-06-04.md"}

    (ws / "memory/2025-06-04.md").unlink()  # a real file again: back in history
    write(ws, "memory/2025-06-04.md", "# 2025-06-04\n\n- the narwhal is back as a file\n")
    commit_all(ws, "a file again")
    assert as_of("narwhal", "HEAD") == {"memory/2025-06-01.md", "memory/2025-06-04.md"}


@pytest.mark.slow
def test_as_of_and_diff_days_are_local_days_like_git(ws):
    write(ws, "memory/2025-07-09.md", "# d\n\n- morning note\n")
    first = commit_all(ws, "morning", date="2025-07-09T10:00:00-07:00")
    write(ws, "memory/2025-07-10.md", RETAIN.format(day="2025-07-10", facts="- W @Peter: Evening note."))
    evening = commit_all(ws, "evening", date="2025-07-10T20:00:00-07:00")  # 03:00 UTC on the 11th
    la = {"TZ": "America/Los_Angeles"}
    got = _json(["-C", str(ws), "recall", "Evening", "--as-of", "2025-07-10", "--json"], env=la)
    assert got["as_of"]["commit"] == evening and got["results"][0]["path"] == "memory/2025-07-10.md"
    d = _json(["-C", str(ws), "diff", "2025-07-09", "2025-07-10", "--json"], env=la)
    assert (d["from"]["commit"], d["to"]["commit"]) == (first, evening)
    assert [f["text"] for f in d["facts"]["added"]] == ["Evening note."]
    assert d["to"]["date"].startswith("2025-07-10T20:00:00-07:00")  # shown in local time, as git log --date=local
    # in UTC the same evening is the next day
    utc = _json(["-C", str(ws), "recall", "Evening", "--as-of", "2025-07-10", "--json"], env={"TZ": "UTC"})
    assert utc["as_of"]["commit"] == first and utc["results"] == []


def test_diff_does_not_pair_a_retraction_with_an_unrelated_fact_in_another_file(ws):
    write(ws, "memory/2025-05-01.md", RETAIN.format(day="2025-05-01",
                                                    facts="- W @Peter: Lives in Lisbon and works on the warelay project."))
    base = commit_all(ws, "lisbon")
    write(ws, "memory/2025-05-01.md", RETAIN.format(day="2025-05-01", facts="- W @Peter: Works remotely."))
    commit_all(ws, "retract")
    write(ws, "memory/2025-05-09.md", RETAIN.format(day="2025-05-09", facts="- W @Peter: Likes Lisbon"))
    commit_all(ws, "likes")
    f = _json(["-C", str(ws), "diff", base, "--json"])["facts"]
    assert [x["text"] for x in f["retracted"]] == ["Lives in Lisbon and works on the warelay project."]
    assert sorted(x["text"] for x in f["added"]) == ["Likes Lisbon", "Works remotely."]
    assert f["changed"] == []
    # an edit in place is still a change
    write(ws, "memory/2025-05-09.md", RETAIN.format(day="2025-05-09", facts="- W @Peter: Likes Lisbon a lot"))
    last = commit_all(ws, "edit")
    f = _json(["-C", str(ws), "diff", f"{last}~1", last, "--json"])["facts"]
    assert [(x["from"]["text"], x["to"]["text"]) for x in f["changed"]] == [("Likes Lisbon", "Likes Lisbon a lot")]


def test_log_of_a_moved_file_says_where_its_facts_went(ws):
    facts = "- W @Lucía: Vai a Paris em março.\n- W @Lucía: Gosta de chá."
    write(ws, "memory/2026-11-01.md", RETAIN.format(day="2026-11-01", facts=facts))
    commit_all(ws, "add")
    (ws / "memory/trips").mkdir()
    git(ws, "mv", "memory/2026-11-01.md", "memory/trips/2026-11-01-trips.md")
    move = commit_all(ws, "move")
    events = _json(["-C", str(ws), "log", "memory/2026-11-01.md", "--json"])["events"]
    assert events[0]["commit"] == move
    fx = events[0]["facts"]
    assert fx["retracted"] == []
    assert [(m["text"], m["to_path"], m["to_line"]) for m in fx["moved"]] == [
        ("Vai a Paris em março.", "memory/trips/2026-11-01-trips.md", 5),
        ("Gosta de chá.", "memory/trips/2026-11-01-trips.md", 6)]
    text = run(["-C", str(ws), "log", "memory/2026-11-01.md"]).stdout
    assert "moved to memory/trips/2026-11-01-trips.md#L5" in text and "(retracted)" not in text


def test_colon_ranges_are_ranges_and_bad_ones_are_errors(ws):
    lines = _json(["-C", str(ws), "get", "memory/2025-11-24.md:3-5", "--json"])
    assert (lines["from"], lines["end_line"]) == (3, 5)
    blamed = _json(["-C", str(ws), "blame", "memory/2025-11-24.md:3-5", "--json"])["ranges"]
    assert [(r["path"], r["start_line"], r["end_line"]) for r in blamed] == [("memory/2025-11-24.md", 3, 5)]
    for bad in ("memory/2025-11-24.md:3-x", "memory/2025-11-24.md:5-3"):
        res = run(["-C", str(ws), "blame", bad])
        assert res.exit_code == 1 and "bad line range" in res.stderr and "hint:" in res.stderr
    res = run(["-C", str(ws), "blame", "memory/2025-11-24.md#L99"])
    assert res.exit_code == 1 and "hint: cite a line from 1 to 6" in res.stderr and "--from" not in res.stderr


def test_diff_and_log_json_carry_the_shallow_clone_note(ws, tmp_path):
    for i in range(3):
        write(ws, f"memory/2025-01-0{i + 1}.md", RETAIN.format(day=f"2025-01-0{i + 1}", facts=f"- W @Peter: Note {i}."))
        commit_all(ws, f"c{i}")
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{ws}", str(clone))
    d = _json(["-C", str(clone), "diff", "HEAD~1", "--json"])
    assert any("shallow clone" in w for w in d["warnings"])
    log = _json(["-C", str(clone), "log", "@Peter", "--json"])
    assert any("shallow clone" in w for w in log["warnings"])


def test_blame_follows_retracted_evidence_to_where_the_fact_last_was(ws):
    write(ws, "memory/2025-11-25.md", RETAIN.format(day="2025-11-25", facts="- O(c=0.9) @Peter: Prefers tea."))
    commit_all(ws, "opinion")
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    write(ws, "memory/2025-11-25.md", RETAIN.format(day="2025-11-25", facts="- W @Peter: Drinks water."))
    commit_all(ws, "retract")
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    lines = (ws / "bank/opinions.md").read_text(encoding="utf-8").splitlines()
    n = next(i for i, line in enumerate(lines, 1) if "retracted" in line)
    blamed = _json(["-C", str(ws), "blame", f"bank/opinions.md#L{n}", "--json"])["ranges"][0]
    [evidence] = blamed["evidence"]
    assert evidence["path"] == "memory/2025-11-25.md" and evidence["rev"]
    assert "Prefers tea." in evidence["lines"][0]["text"]  # the line as it was, not today's line 5


def test_blame_json_carries_the_shallow_clone_note(ws, tmp_path):
    for i in range(3):
        write(ws, f"memory/2025-02-0{i + 1}.md", f"# d\n\n- note {i}\n")
        commit_all(ws, f"c{i}")
    clone = tmp_path / "shallow-blame"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{ws}", str(clone))
    out = _json(["-C", str(clone), "blame", "memory/2025-02-01.md#L3", "--json"])
    assert any("shallow clone" in w for w in out["warnings"])


def test_diff_from_a_date_before_the_history_is_everything_added(ws):
    write(ws, "memory/2025-11-25.md", RETAIN.format(day="2025-11-25", facts="- W @Peter: Lives in Lisbon."))
    commit_all(ws, "fact", date="2025-11-25T10:00:00+00:00")
    d = _json(["-C", str(ws), "diff", "2020-01-01", "HEAD", "--json"])
    assert d["from"] == {"commit": None, "date": None}
    assert [f["text"] for f in d["facts"]["added"]] == ["Lives in Lisbon."] and d["facts"]["retracted"] == []
    text = run(["-C", str(ws), "diff", "2020-01-01"]).stdout
    assert text.startswith("from before the first commit (memory was empty)") and "+ world: Lives in Lisbon." in text
