"""Recall's keyword search through the impact-ordered lists (store.impact) gives exactly what FTS5
alone gives, on a real workspace kept up to date by real catch-ups while files are added, edited and
deleted: every query's top k (ids and scores), and `zmem recall`'s output byte for byte."""
from __future__ import annotations

import random

import pytest
from helpers.workspace import commit_all, git, run, write

from zmem.index.catchup import catch_up, open_index
from zmem.query.search import search_bm25
from zmem.store import impact
from zmem.workspace.core import find_workspace

WORDS = ("gateway backup Mac Studio Peter Lisbon aniversário Marrakech deploy script database Ana next week retry "
         "backoff relay socket Porto Madrid reunião sexta-feira café replica cron webhook").split()


def _note(r: random.Random) -> str:
    lines = [f"# {r.choice(WORDS)} {r.choice(WORDS)}", ""]
    for _ in range(r.randint(1, 12)):
        if r.random() < 0.15:
            lines += ["", f"## {' '.join(r.choices(WORDS, k=r.randint(1, 3)))}", ""]
        lines.append("- " + " ".join(r.choices(WORDS, weights=[1 / (i + 1) for i in range(len(WORDS))],
                                              k=r.randint(1, 14))) + ".")
    return "\n".join(lines) + "\n"


def _queries(r: random.Random) -> list[str]:
    qs = [" ".join(r.sample(WORDS, r.randint(1, 4))) for _ in range(25)]
    return qs + ["Peter", "the Peter", "Mac backup", "aniversario", "Aniversário MARRAKECH", '"Mac Studio" Peter',
                 "北京 Peter", "don't Peter"]


def _same_top_k(root, r: random.Random, seen: list[int]) -> None:
    conn = open_index(find_workspace(root))
    try:
        for q in _queries(r):
            for k in (6, 24, 200):
                impact.ENABLED = True
                calls = seen[0]
                with_lists = search_bm25(conn, q, k=k)
                impact.ENABLED = False
                plain = search_bm25(conn, q, k=k)
                impact.ENABLED = True
                assert with_lists == plain, (q, k)
                seen[1] += calls != seen[0]
    finally:
        conn.close()


@pytest.fixture
def counted(monkeypatch):
    """Lists for words in >= 3 chunks (the test workspaces are small), from a state's first search (as
    in a long-lived process); counts the answers they gave."""
    monkeypatch.setattr(impact, "LIST_DF", 3)
    monkeypatch.setattr(impact, "FTS5_FIRST", 0)
    seen = [0, 0]
    top_k = impact._top_k

    def counting(*a):
        out = top_k(*a)
        seen[0] += out is not None
        return out
    monkeypatch.setattr(impact, "_top_k", counting)
    yield seen
    impact.ENABLED = True


@pytest.mark.slow
def test_top_k_equals_fts5s_while_real_catch_ups_add_edit_and_delete_files(ws, counted):
    r = random.Random(14)
    files = [f"memory/2025-10-{d:02d}.md" for d in range(1, 29)]
    for rel in files[:20]:
        write(ws, rel, _note(r))
    commit_all(ws, "notes")
    catch_up(find_workspace(ws))
    _same_top_k(ws, r, counted)
    for round_ in range(4):
        for rel in r.sample(files, 8):
            path = ws / rel
            if path.exists() and r.random() < 0.3:
                path.unlink()  # deleted
            elif path.exists() and r.random() < 0.5:
                path.write_text(path.read_text() + _note(r))  # edited: grows, avgdl moves
            else:
                write(ws, rel, _note(r))  # added or rewritten
        if round_ % 2:
            commit_all(ws, f"round {round_}")  # a commit (the hook's catch-up), else the working tree's changes
        catch_up(find_workspace(ws))
        _same_top_k(ws, r, counted)
    assert counted[0] > 200  # the lists answered most one-word-token searches


@pytest.mark.slow
def test_recall_output_is_byte_identical_with_and_without_the_lists(ws, counted):
    r = random.Random(7)
    for i in range(30):
        write(ws, f"memory/2025-09-{i + 1:02d}.md", _note(r))
    commit_all(ws, "notes")
    git(ws, "status")
    for q in ["Peter Lisbon", "gateway backup Mac Studio", "aniversário", "retry backoff", "Ana next week",
              "the café", "Peter", "reunião Porto"]:
        for extra in ([], ["--json"], ["-k", "20", "--format", "table"], ["--json", "--explain"]):
            impact.ENABLED = True
            before = counted[0]
            a = run(["-C", str(ws), "recall", q, *extra])
            used = counted[0] > before
            impact.ENABLED = False
            b = run(["-C", str(ws), "recall", q, *extra])
            assert a.exit_code == b.exit_code == 0, a.output + a.stderr
            assert (a.stdout, a.stderr) == (b.stdout, b.stderr), (q, extra)
            counted[1] += used
    assert counted[1] > 16  # most of those recalls went through the lists
