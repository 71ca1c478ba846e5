"""The vectors weighed by their own evidence: how far a query's best cosine stands out of its cosines with
the index's windows at large (fusion.null_moments, outlier_score), and the vector weight that follows (vector_evidence).
Real indexes, embedded through the loopback server's deterministic concept vectors
(helpers.embed_server: `computer`, `box` and `hosts` share a concept, `relay` and `proxy` another)."""
from __future__ import annotations

import pytest

from helpers.embed_server import concept_vector
from helpers.workspace import index_notes, recall_json, run, use_server
from zmem.index.catchup import open_index
from zmem.query import fusion
from zmem.query.fusion import (null_moments, outlier_score, query_rarity, query_weights, text_share,
                               vector_evidence)
from zmem.workspace.core import find_workspace

LETTERS = "bcdfghjklmnpqrstvwxz"


def word(i: int) -> str:
    """A made-up word of its own per i (no digit: not an identifier)."""
    return "zo" + LETTERS[i % 20] + LETTERS[i // 20 % 20] + "a"


@pytest.fixture
def many_ws(ws, server):
    """40 notes of a log entry each (every one says `entry` and `log`, and two words of its own), and the
    note a reworded question is about: more windows than null_moments needs (30) to measure a spread."""
    notes = {f"bank/log-{i}.md": f"# Log {i}\n\n- Entry log: {word(2 * i)} {word(2 * i + 1)}.\n" for i in range(40)}
    notes["bank/setup.md"] = "# Setup\n\n- The relay daemon runs on the old box.\n"
    return index_notes(ws, server, notes)


def test_a_query_close_to_one_note_stands_out_and_one_close_to_all_does_not(many_ws):
    pytest.importorskip("numpy")  # loaded: null_moments uses it (it never imports it itself)
    conn = open_index(find_workspace(many_ws))
    try:
        best = lambda q: max(sum(a * b for a, b in zip(q, v)) for v in vectors(conn))  # noqa: E731
        clear = concept_vector("Which computer hosts the proxy?")
        flat = concept_vector("entry log")
        # the reworded question's answer stands far above the query's cosines with the rest of the notes
        # (in these 64-dimension hashed vectors words collide, so "far" is ~2.5 standard deviations)...
        standout = outlier_score(best(clear), null_moments(conn, clear))
        assert standout > 2.0
        # ...while a query about as close to every note as to its best has nothing that stands out
        assert outlier_score(best(flat), null_moments(conn, flat)) < min(1.0, fusion.VECTOR_FLAT, standout - 1.5)
    finally:
        conn.close()


def test_without_numpy_loaded_sqlite_vec_measures_the_same(many_ws, monkeypatch):
    import sys
    pytest.importorskip("numpy")
    from zmem.store.vectors import VectorStore
    conn = open_index(find_workspace(many_ws))
    try:
        store = VectorStore(conn)
        if not store.vec_loaded:
            pytest.skip("sqlite-vec is not loaded here")
        query = concept_vector("Which computer hosts the proxy?")
        with_numpy = outlier_score(0.6, null_moments(conn, query))
        monkeypatch.setitem(sys.modules, "numpy", None)
        assert outlier_score(0.6, null_moments(conn, query)) is None  # neither numpy nor a store: not measured
        assert outlier_score(0.6, null_moments(conn, query, store)) == pytest.approx(with_numpy, abs=1e-3)
    finally:
        conn.close()


def test_the_null_moments_are_those_of_the_query_cosines_with_every_window(many_ws):
    # under NULL_SAMPLE windows the sample is the whole index: its mean and spread are the query's cosines' own,
    # and the outlier score (the floor's and the vector weight's) is the best cosine measured in them
    pytest.importorskip("numpy")
    conn = open_index(find_workspace(many_ws))
    try:
        query = concept_vector("Which computer hosts the proxy?")
        sims = [sum(a * b for a, b in zip(query, v)) for v in vectors(conn)]
        mean = sum(sims) / len(sims)
        spread = (sum((x - mean) ** 2 for x in sims) / len(sims)) ** 0.5
        assert null_moments(conn, query) == pytest.approx((mean, spread), abs=1e-4)
        expected = (max(sims) - mean) / spread
        assert outlier_score(max(sims), null_moments(conn, query)) == pytest.approx(expected, abs=1e-3)
    finally:
        conn.close()


def vectors(conn) -> list[list[float]]:
    from zmem.store.vectors import unpack
    return [unpack(r[0]) for r in conn.execute("SELECT vector FROM chunk_vectors")]


def test_too_few_windows_measure_nothing(ws, server):
    use_server(server)
    assert run(["-C", str(ws), "index", "--json"]).exit_code == 0
    conn = open_index(find_workspace(ws))
    try:
        # two daily logs: no spread to measure
        assert outlier_score(0.9, null_moments(conn, concept_vector("gateway"))) is None
    finally:
        conn.close()


def test_flat_vectors_leave_the_weight_to_the_keywords(many_ws):
    conn = open_index(find_workspace(many_ws))
    try:
        rarity = query_rarity(conn, "entry log zorba")
        texts = {1: "- Entry log: something."}
        plain = query_weights(rarity, texts, 0.7, 0.3)
        evidence_text = text_share(plain.evidence, 0.7, 0.3)
        # unmeasured or clear vectors: the weights the keyword evidence gives, as before
        assert plain.text == pytest.approx(evidence_text)
        assert query_weights(rarity, texts, 0.7, 0.3, fusion.VECTOR_CLEAR + 1).text == pytest.approx(evidence_text)
        # flat vectors keep VECTOR_FLOOR of their share, the weights still sum to 1
        flat = query_weights(rarity, texts, 0.7, 0.3, fusion.VECTOR_FLAT - 1)
        kept = (1 - evidence_text) * fusion.VECTOR_FLOOR
        assert flat.vector == pytest.approx(kept / (evidence_text + kept))
        assert flat.text + flat.vector == pytest.approx(1.0) and flat.text > plain.text
        assert flat.explain()["vector_outlier"] == fusion.VECTOR_FLAT - 1
    finally:
        conn.close()
    # between the two, the vectors' share slides
    middle = (fusion.VECTOR_FLAT + fusion.VECTOR_CLEAR) / 2
    assert fusion.VECTOR_FLOOR < vector_evidence(middle) < 1.0
    assert vector_evidence(None) == 1.0


def test_flat_vectors_lend_the_keywords_no_more_than_the_configured_text_weight(many_ws):
    conn = open_index(find_workspace(many_ws))
    try:
        # a candidate holds every word of the query: the configured 0.7 / 0.3, however flat the vectors
        rarity = query_rarity(conn, "entry log")
        held = {1: "- Entry log: something."}
        assert query_weights(rarity, held, 0.7, 0.3).evidence == 1.0
        flat = query_weights(rarity, held, 0.7, 0.3, fusion.VECTOR_FLAT - 1)
        assert (flat.text, flat.vector) == (pytest.approx(0.7), pytest.approx(0.3))
        # one holding part of it: flat vectors still lend the keywords weight, up to the same 0.7
        rarity = query_rarity(conn, "entry log zorba")
        part = query_weights(rarity, held, 0.7, 0.3)
        lent = query_weights(rarity, held, 0.7, 0.3, fusion.VECTOR_FLAT - 1)
        assert part.text < lent.text <= 0.7 + 1e-9 and lent.text + lent.vector == pytest.approx(1.0)
        # a configuration that favours the vectors keeps its text weight as the ceiling too
        assert query_weights(rarity, held, 0.3, 0.7, fusion.VECTOR_FLAT - 1).text <= 0.3 + 1e-9
    finally:
        conn.close()


def test_hybrid_recall_explains_the_outlier_and_weighs_flat_vectors_less(many_ws):
    pytest.importorskip("numpy")
    from zmem.memory import Memory
    with Memory.open(many_ws) as mem:
        clear = mem.recall("Which computer hosts the proxy?", mode="hybrid", explain=True).results
        flat = mem.recall("entry log", mode="hybrid", explain=True).results
    assert clear[0].path == "bank/setup.md"
    assert flat and flat[0].explain["vector_outlier"] < fusion.VECTOR_FLAT
    assert clear[0].explain["vector_outlier"] > flat[0].explain["vector_outlier"] + 1.5
    evidence = flat[0].explain["keyword_evidence"]
    # the keywords get more than their evidence alone would give them
    assert flat[0].explain["text_weight"] > text_share(evidence, 0.7, 0.3) + 0.01 or evidence >= fusion.STRONG


def crowded_notes() -> dict[str, str]:
    """40 notes that all say `box server machine studio` (the loopback vectors' one concept `host`) and two
    words of their own: a query about the host is close to every note, as multilingual-e5-small sees any
    question close to any note (fusion.CROWDED)."""
    return {f"bank/host-{i}.md": f"# Host {i}\n\n- Box server machine studio, box server machine studio: "
                                 f"{word(2 * i)} {word(2 * i + 1)}.\n" for i in range(40)}


@pytest.fixture
def crowded_ws(ws, server):
    return index_notes(ws, server, crowded_notes())


def crowded_query(held: str) -> str:
    """About the host, holding one note's word and five words no note holds: a keyword share under
    EVIDENCE_FLOOR (the missing words count as rare)."""
    return f"computer host box server {held} " + " ".join(word(300 + i) for i in range(5))


def test_a_crowded_model_gives_an_incidental_keyword_match_no_weight(crowded_ws):
    pytest.importorskip("numpy")  # the null's mean is measured by numpy here (the recall process loads it)
    hit = recall_json(crowded_ws, crowded_query(word(0)), "--explain", "--mode", "hybrid")["results"][0]["explain"]
    assert hit["floor_signals"]["null_mean"] >= fusion.CROWDED
    assert 0 < hit["keyword_evidence"] < fusion.EVIDENCE_FLOOR
    # the keyword list matched one incidental word: the vectors decide alone
    assert hit["text_weight"] == 0.0 and hit["vector_weight"] == 1.0


# a reworded Chinese question ("how do I reach the colleague who dislikes phone calls?") whose only bigram a note
# holds is the incidental 同事 (colleague); its other bigrams are in no note
ZH_QUESTION = "怎么联系那位不喜欢手机来电的同事"


def test_a_crowded_model_counts_the_cjk_bigrams_no_note_holds(ws, server):
    pytest.importorskip("numpy")
    notes = crowded_notes()
    notes["bank/host-0.md"] += "- 同事 box server machine studio.\n"
    crowded = index_notes(ws, server, notes)
    hit = recall_json(crowded, f"computer host box server {ZH_QUESTION}", "--explain", "--mode", "hybrid")
    explain = hit["results"][0]["explain"]
    assert explain["floor_signals"]["null_mean"] >= fusion.CROWDED
    # 同事 no longer holds the whole question (before, the dropped bigrams left it a keyword evidence of ~0.5):
    # the vectors, which read the question, decide alone
    assert explain["keyword_evidence"] < fusion.EVIDENCE_FLOOR
    assert explain["text_weight"] == 0.0
    conn = open_index(find_workspace(crowded))
    try:
        seen = query_rarity(conn, ZH_QUESTION)
        kept = query_rarity(conn, ZH_QUESTION, unseen_grams=True)
        assert [t.key for t in seen] == ["同事"] and not seen[0].unseen
        assert len(kept) == len(ZH_QUESTION) - 1 and sum(t.unseen for t in kept) == len(kept) - 1
        # a line is still cited for the bigram notes hold: the unseen ones are in no line
        weights = query_weights(kept, {1: "- 同事 box"}, 0.7, 0.3, crowded=True)
        assert [t.key for t in weights.rarity] == ["同事"] and weights.keyword_line("- 同事 box")
        assert weights.cover[1] < fusion.EVIDENCE_FLOOR
    finally:
        conn.close()


def few_crowded_notes(ws, n: int) -> dict[str, str]:
    """The first n crowded notes, and the workspace's own files (daily logs, `zmem init`'s pages) said the same
    way: in so few windows those would be the only ones a host question is not close to."""
    notes = dict(list(crowded_notes().items())[:n])
    for page in ws.glob("**/*.md"):
        rel = page.relative_to(ws).as_posix()
        if not rel.startswith("."):
            notes[rel] = f"# {page.stem}\n\n- Box server machine studio, box server machine studio.\n"
    return notes


def test_a_few_notes_are_measured_without_the_query_s_closest_windows(ws, server):
    # a new workspace: 12 notes, fewer windows than SMALL_NULL but at least NULL_MIN. The null is measured without
    # the query's NULL_SKIP closest windows (its answer would widen the spread it is measured against), so the
    # model is seen to be crowded and the best window's outlier score is measured, not assumed
    pytest.importorskip("numpy")
    small = index_notes(ws, server, few_crowded_notes(ws, 12))
    query = concept_vector(crowded_query(word(0)))
    conn = open_index(find_workspace(small))
    try:
        sims = sorted(sum(a * b for a, b in zip(query, v)) for v in vectors(conn))
        assert fusion.NULL_MIN <= len(sims) < fusion.SMALL_NULL
        rest = sims[:-fusion.NULL_SKIP]
        mean = sum(rest) / len(rest)
        spread = (sum((x - mean) ** 2 for x in rest) / len(rest)) ** 0.5
        assert null_moments(conn, query) == pytest.approx((mean, spread), abs=1e-4)
    finally:
        conn.close()
    hit = recall_json(small, crowded_query(word(0)), "--explain", "--mode", "hybrid")["results"][0]["explain"]
    assert hit["floor_signals"]["null_mean"] >= fusion.CROWDED
    assert hit["vector_outlier"] == pytest.approx((sims[-1] - mean) / spread, abs=0.02)
    # the crowded rules hold as in a large index: one incidental keyword match gets no weight
    assert 0 < hit["keyword_evidence"] < fusion.EVIDENCE_FLOOR
    assert hit["text_weight"] == 0.0 and hit["vector_weight"] == 1.0


def test_under_null_min_windows_nothing_is_measured(ws, server):
    pytest.importorskip("numpy")
    tiny = index_notes(ws, server, few_crowded_notes(ws, 1))
    conn = open_index(find_workspace(tiny))
    try:
        assert conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0] < fusion.NULL_MIN
    finally:
        conn.close()
    hit = recall_json(tiny, crowded_query(word(0)), "--explain", "--mode", "hybrid")["results"][0]["explain"]
    assert hit["floor_signals"]["null_mean"] is None and "vector_outlier" not in hit
    # the incidental match keeps its evidence as its text weight, as before any null was measured
    assert 0 < hit["keyword_evidence"] < fusion.WEAK
    assert hit["text_weight"] == pytest.approx(hit["keyword_evidence"], abs=1e-3)


def test_an_uncrowded_model_keeps_the_weight_of_an_incidental_match(many_ws):
    pytest.importorskip("numpy")
    # all-MiniLM-L6-v2's keywords still help where its vectors do not read the question (Portuguese)
    hit = recall_json(many_ws, "Which computer hosts the relay " + " ".join(word(300 + i) for i in range(3)),
                      "--explain", "--mode", "hybrid")["results"][0]["explain"]
    assert hit["floor_signals"]["null_mean"] < fusion.CROWDED
    assert 0 < hit["keyword_evidence"] < fusion.EVIDENCE_FLOOR
    assert hit["text_weight"] > hit["keyword_evidence"]  # what the flat vectors leave


def test_text_share_grows_from_the_incidental_evidence():
    assert text_share(0.15, 0.7, 0.3) == pytest.approx(0.15)  # the evidence itself, as before
    assert text_share(0.15, 0.7, 0.3, fusion.EVIDENCE_FLOOR) == 0.0
    assert 0.0 < text_share(0.35, 0.7, 0.3, fusion.EVIDENCE_FLOOR) < text_share(0.35, 0.7, 0.3)
    # from WEAK on the incidental floor changes nothing: WEAK's weight, sliding to the configured one
    for evidence in (fusion.WEAK, 0.7, fusion.STRONG):
        assert text_share(evidence, 0.7, 0.3, fusion.EVIDENCE_FLOOR) == pytest.approx(text_share(evidence, 0.7, 0.3))
