"""A small index (up to vectors.SMALL_INDEX windows) is searched in memory when numpy is loaded already:
a vec0 knn costs ~1.4 ms a partition however few vectors it holds, and each scan thread's connection
~0.9 ms, where reading a few hundred windows into numpy and one matrix product take ~0.4 ms. The answer
is vec0's, and follows the stored vectors as they change; numpy is never imported for it."""
from __future__ import annotations

import sys

import pytest

from helpers.workspace import commit_all, run, write
from zmem.store import db, vectors
from zmem.store.vectors import VectorStore

np = pytest.importorskip("numpy")


def concept(text):
    from helpers.embed_server import concept_vector
    return concept_vector(text)


def test_a_small_index_is_searched_in_memory_with_vec0s_answer(semantic_ws, monkeypatch):
    conn = db.connect(semantic_ws / ".zmem" / "index.sqlite")
    store = VectorStore(conn)
    assert store.vec_loaded, store.detail
    assert 0 < store.count() <= vectors.SMALL_INDEX
    q = concept("which computer runs the relay")
    fast = store.search(q, 5)
    assert store._small is not None and store._small.matrix is not None  # read into memory
    monkeypatch.setattr(vectors, "SMALL_INDEX", 0)
    scan = VectorStore(conn)
    slow = scan.search(q, 5)
    assert scan._small is None  # vec0 answered
    assert fast and [h[0] for h in fast] == [h[0] for h in slow] and [h[2:] for h in fast] == [h[2:] for h in slow]
    assert all(abs(a[1] - b[1]) < 1e-5 for a, b in zip(fast, slow))
    ids = [h[0] for h in slow]
    monkeypatch.setattr(vectors, "SMALL_INDEX", 1500)
    got, want = store.windows_of(ids, q), scan.windows_of(ids, q)
    assert {c: [w[:2] for w in ws] for c, ws in got.items()} == {c: [w[:2] for w in ws] for c, ws in want.items()}
    assert all(abs(a[2] - b[2]) < 1e-5 for c in got for a, b in zip(got[c], want[c]))
    conn.close()


def test_the_vectors_in_memory_follow_the_index(semantic_ws):
    conn = db.connect(semantic_ws / ".zmem" / "index.sqlite")
    store = VectorStore(conn)  # one store across a change, as a caller holding it would
    q = concept("the proxy box in the attic")
    before = store.search(q, 3)
    write(semantic_ws, "memory/2025-12-02.md", "# 2025-12-02\n\n- The proxy box moved to the attic.\n")
    commit_all(semantic_ws)
    assert run(["-C", str(semantic_ws), "index", "--json"]).exit_code == 0
    new, = conn.execute("SELECT id FROM chunks WHERE path = 'memory/2025-12-02.md'").fetchone()
    after = store.search(q, 3)
    assert new not in [h[0] for h in before] and new in [h[0] for h in after]
    assert after == VectorStore(conn).search(q, 3)
    conn.close()


def test_numpy_is_not_imported_for_it_and_a_large_index_is_scanned_by_vec0(semantic_ws, monkeypatch):
    conn = db.connect(semantic_ws / ".zmem" / "index.sqlite")
    q = concept("which computer runs the relay")
    monkeypatch.delitem(sys.modules, "numpy")  # a process whose query vector came from a watcher: no numpy
    store = VectorStore(conn)
    assert store.search(q, 3) and store._small is None and "numpy" not in sys.modules
    monkeypatch.undo()
    monkeypatch.setattr(vectors, "SMALL_INDEX", store.count() - 1)
    store = VectorStore(conn)  # a store decides once whether its index is small
    assert store.search(q, 3) and store._small is None
    conn.close()
