"""`zmem sync` against a real bare hub when the two sides conflict: in files reflect writes (settled
and written again), or in what a person wrote (stopped, nothing lost)."""
from __future__ import annotations

import json

import pytest

from helpers.workspace import git, write
from helpers.hub import make_hub, no_conflict_markers, sync, zmem

PAGE = "bank/entities/Peter.md"


def _fact(root, kind, text, *extra):
    zmem("-C", str(root), "append", "--retain", kind, text, *extra)


def _reflect(root):
    out = json.loads(zmem("-C", str(root), "reflect", "--json").stdout)
    assert out["commit"], out
    return out


@pytest.mark.slow
def test_conflicting_reflect_blocks_and_opinions_are_regenerated_and_hand_text_is_kept(tmp_path):
    a, b = make_hub(tmp_path, 2)
    _fact(a, "W", "@Peter lives in Lisbon")
    _reflect(a)
    sync(a)
    sync(b)
    page = (b / PAGE).read_text()
    write(b, PAGE, page + "\nMet him at the 2024 conference; written by hand.\n")  # outside the block
    sync(b)
    sync(a)
    # each side adds facts and an opinion about Peter and reflects: both rewrite the same block lines
    # and append a different opinion at the end of bank/opinions.md
    _fact(a, "W", "@Peter works at Acme")
    _fact(a, "O", "@Peter prefers short replies", "--confidence", "0.8")
    _reflect(a)
    _fact(b, "W", "@Peter plays chess on Sundays")
    _fact(b, "O", "@Peter dislikes phone calls", "--confidence", "0.7")
    _reflect(b)
    sync(a)
    out = sync(b)
    assert out["regenerated"] == [PAGE, "bank/opinions.md"], out
    assert out["pushed"] and out["merge"] == "merge" and out["reflect_commit"]
    page = (b / PAGE).read_text()
    for said in ("Lisbon", "Acme", "plays chess", "prefers short replies", "dislikes phone calls",
                 "written by hand"):
        assert page.count(said) >= 1, (said, page)
    assert page.count("Met him at the 2024 conference") == 1
    opinions = (b / "bank/opinions.md").read_text()
    assert "prefers short replies" in opinions and "dislikes phone calls" in opinions
    assert "<<<<<<<" not in page + opinions and no_conflict_markers(b)
    # what reflect wrote is what a fresh reflect writes: nothing left to do
    assert json.loads(zmem("-C", str(b), "reflect", "--since", "all", "--json").stdout)["files"] == []
    assert sync(a)["merge"] == "fast-forward"
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD") and no_conflict_markers(a)
    assert not git(b, "status", "--porcelain")


@pytest.mark.slow
def test_a_conflict_in_the_hand_written_part_of_a_page_still_stops(tmp_path):
    a, b = make_hub(tmp_path, 2)
    _fact(a, "W", "@Peter lives in Lisbon")
    _reflect(a)
    sync(a)
    sync(b)
    page = (a / PAGE).read_text()
    write(a, PAGE, page.replace("# Peter\n", "# Peter\n\nAn old friend from Porto.\n"))
    _fact(a, "W", "@Peter works at Acme")
    sync(a)  # commits the hand edit, then reflect below rewrites the block
    _reflect(a)
    sync(a)
    write(b, PAGE, page.replace("# Peter\n", "# Peter\n\nA colleague from Madrid.\n"))
    _fact(b, "W", "@Peter plays chess")
    proc = sync(b, ok=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    first = proc.stderr.splitlines()[0]
    assert "sync stopped: 1 file changed here and on origin/main" in first and PAGE in first
    assert not (b / ".git/MERGE_HEAD").exists() and not git(b, "status", "--porcelain")
    assert "A colleague from Madrid." in (b / PAGE).read_text() and no_conflict_markers(b)


@pytest.mark.slow
def test_a_line_that_reached_both_sides_is_kept_once_not_repeated_by_the_union_merge(tmp_path):
    # union keeps both sides of a hunk: X A | B X gives X twice; many clones merging each other's
    # merges (criss-cross) bring the same line to both sides that way
    a, b = make_hub(tmp_path, 2)
    for note in ("the backup ran at 02:00", "alpha only on a"):
        zmem("-C", str(a), "append", note)
    sync(a)
    for note in ("beta only on b", "the backup ran at 02:00"):
        zmem("-C", str(b), "append", note)
    out = sync(b)
    assert out["merge"] == "merge" and out["pushed"]
    text = next((b / "memory").glob("2*.md")).read_text()
    assert text.count("- the backup ran at 02:00\n") == 1, text
    assert text.count("alpha only on a") == 1 and text.count("beta only on b") == 1
    assert no_conflict_markers(b) and not git(b, "status", "--porcelain")
    write(b, "MEMORY.md", "# Memory\n\n- twice on purpose\n- twice on purpose\n")  # a person's own repeat stays
    sync(b)
    zmem("-C", str(a), "append", "a later note")
    sync(a)
    assert (a / "MEMORY.md").read_text().count("- twice on purpose\n") == 2
