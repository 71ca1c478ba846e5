"""Vector similarities centred on the index's centroid (fusion.centroid, fusion.centred): a window close to
every note (a hub) no longer outranks the note a question is about. Real indexes, embedded through the
loopback server's deterministic concept vectors (helpers.embed_server: `machine` and `host` share a
concept, `relay` and `gateway` another, `runs` and `hosts` a third)."""
from __future__ import annotations

import json
import math
import sys

import pytest

from helpers.embed_server import concept_vector
from helpers.workspace import index_notes, run
from zmem.index.catchup import open_index
from zmem.query import fusion
from zmem.store.vectors import VectorStore, unpack
from zmem.workspace.core import find_workspace

LETTERS = "bcdfghjklmnpqrstvwxz"
QUESTION = "which log entry says the machine runs the gateway"


def word(i: int) -> str:
    return "zo" + LETTERS[i % 20] + LETTERS[i // 20 % 20] + "a"


@pytest.fixture
def hub_ws(ws, server):
    """40 log notes that all say `entry` and `log` (the index's centroid points there), a hub note that says
    them too beside `the gateway`, and the note the question is about, which says `box hosts the relay` for
    `machine runs the gateway`."""
    notes = {f"bank/log-{i}.md": f"# Log {i}\n\n- Entry log: {word(2 * i)} {word(2 * i + 1)}.\n" for i in range(40)}
    notes["bank/hub.md"] = "# Hub\n\n- Entry log: the gateway.\n"
    notes["bank/setup.md"] = "# Setup\n\n- Which box hosts the relay: the machine.\n"
    return index_notes(ws, server, notes)


def windows(conn) -> list[tuple[int, list[float]]]:
    return [(cid, unpack(blob)) for cid, blob in conn.execute("SELECT chunk_id, vector FROM chunk_vectors")]


def dot(a, b) -> float:
    return sum(x * y for x, y in zip(a, b))


def test_the_centroid_is_the_mean_window_with_or_without_numpy(hub_ws, monkeypatch):
    pytest.importorskip("numpy")  # loaded: null_sample (and so centroid) uses it
    conn = open_index(find_workspace(hub_ws))
    try:
        vecs = [v for _, v in windows(conn)]  # under NULL_SAMPLE windows: the sample is the whole index
        mean = [sum(col) / len(vecs) for col in zip(*vecs)]
        length = math.sqrt(dot(mean, mean))
        direction, got_length = fusion.centroid(conn)
        assert got_length == pytest.approx(length, abs=1e-5)
        assert direction == pytest.approx([x / length for x in mean], abs=1e-5)
        fusion._centroids.clear()
        monkeypatch.setitem(sys.modules, "numpy", None)  # not loaded: the same mean, in Python
        direction2, length2 = fusion.centroid(conn)
        assert length2 == pytest.approx(length, abs=1e-5)
        assert direction2 == pytest.approx(direction, abs=1e-5)
    finally:
        fusion._centroids.clear()
        conn.close()


def test_each_chunk_scores_its_best_window_less_its_closeness_to_the_centroid(hub_ws):
    conn = open_index(find_workspace(hub_ws))
    try:
        store = VectorStore(conn)
        query = concept_vector(QUESTION)
        direction, length = fusion.centroid(conn)
        centre = [x * length for x in direction]
        best: dict[int, float] = {}
        for cid, v in windows(conn):
            score = dot(query, v) - fusion.CENTRE * (dot(centre, v) - length * length)
            best[cid] = max(best.get(cid, score), score)
        plain = [(cid, 0.0) for cid in best]
        got, read = fusion.centred(conn, store, query, plain)
        assert [cid for cid, _ in got] == sorted(best, key=lambda c: (-best[c], c))
        assert dict(got) == pytest.approx(best, abs=1e-4)
        assert read == store.windows_of(list(best), query)  # the plain cosines it read, for the snippets
    finally:
        conn.close()


def test_a_hub_no_longer_outranks_the_note_the_question_is_about(hub_ws):
    conn = open_index(find_workspace(hub_ws))
    try:
        query = concept_vector(QUESTION)
        paths = dict(conn.execute("SELECT id, path FROM chunks"))
        by_cosine = max(windows(conn), key=lambda w: dot(query, w[1]))
        # as plain cosines go, the hub note is the closest: it shares the question's `entry log` and `gateway`
        assert paths[by_cosine[0]] == "bank/hub.md"
    finally:
        conn.close()
    r = run(["-C", str(hub_ws), "recall", QUESTION, "--mode", "vector", "--json", "-k", "3"])
    assert r.exit_code == 0, r.output
    hits = json.loads(r.output)["results"]
    # centred, what the hub shares with every log note counts for less than what the setup note shares with the
    # question alone (host, run, gateway: 0.80 against 0.86 in these vectors; plain cosines 0.83 against 0.77)
    assert hits[0]["path"] == "bank/setup.md"
    assert "bank/hub.md" in [h["path"] for h in hits]


def test_without_a_centre_the_cosines_stand(hub_ws, monkeypatch):
    monkeypatch.setattr(fusion, "CENTRE", 0.0)
    r = run(["-C", str(hub_ws), "recall", QUESTION, "--mode", "vector", "--json", "-k", "3"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["results"][0]["path"] == "bank/hub.md"


def test_vectors_of_another_size_leave_the_candidates_as_they_are(hub_ws):
    conn = open_index(find_workspace(hub_ws))
    try:
        plain = [(1, 0.9), (2, 0.5)]
        assert fusion.centred(conn, VectorStore(conn), [1.0, 0.0, 0.0], plain) == (plain, {})
    finally:
        conn.close()


def test_a_handful_of_notes_is_not_centred(ws, server):
    # under CENTROID_MIN windows there is no crowd to stand out of: the mean of a few notes would pull every score
    notes = {"bank/hub.md": "# Hub\n\n- Entry log: the gateway.\n",
             "bank/setup.md": "# Setup\n\n- Which box hosts the relay: the machine.\n"}
    root = index_notes(ws, server, notes)
    conn = open_index(find_workspace(root))
    try:
        assert fusion.centroid(conn) is None
        plain = [(1, 0.9), (2, 0.5)]
        assert fusion.centred(conn, VectorStore(conn), concept_vector(QUESTION), plain) == (plain, {})
    finally:
        conn.close()


def test_the_long_running_servers_matrix_centres_as_the_index_does(hub_ws):
    # zmem mcp keeps the vectors in memory (VectorMatrix): the same centred order and scores as sqlite-vec's
    pytest.importorskip("numpy")
    from zmem.store.vectors import VectorMatrix
    conn = open_index(find_workspace(hub_ws))
    try:
        query = concept_vector(QUESTION)
        plain = [(cid, 0.0) for cid in {cid for cid, _ in windows(conn)}]
        fusion._hubs.clear()
        by_index, _ = fusion.centred(conn, VectorStore(conn), query, plain)
        fusion._hubs.clear()
        by_matrix, _ = fusion.centred(conn, VectorStore(conn, VectorMatrix()), query, plain)
        assert [cid for cid, _ in by_matrix] == [cid for cid, _ in by_index]
        assert dict(by_matrix) == pytest.approx(dict(by_index), abs=1e-5)
    finally:
        conn.close()
