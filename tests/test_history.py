"""History as memory, in real repositories with controlled commit dates: as-of recall checked
against a brute-force oracle (git show of every file at every commit), blame with the evidence
chain, entity timelines, belief diffs, and the edge cases (renames, merges, out-of-order dates,
rewritten history, empty and shallow repositories, detached HEAD)."""
from __future__ import annotations

import json
import random
import subprocess

from conftest import commit_all, git, run, write

WORDS = ["lisbon", "porto", "gateway", "tea", "coffee", "studio", "marrakech", "birthday", "deploy", "garden"]


def _json(args):
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
    from zmem.indexer import open_index
    from zmem.workspace import find_workspace
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
    log = _json(["-C", str(ws), "log", "@Peter", "--json"])["events"]
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
