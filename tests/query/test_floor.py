"""The calibrated "nothing matches" floor of hybrid recall (zmem/query/floor.py) on a real small index: a
question no note is about gets an empty list (also over MCP: an empty results list means nothing matched),
a reworded one whose answer shares no word with it keeps its answer. Vectors from the loopback server's
deterministic concept embeddings (helpers.embed_server: `computer`, `box` and `hosts` share a concept,
`relay` and `proxy` another), through the same provider path as any OpenAI-compatible server."""
from __future__ import annotations

import asyncio

import pytest

from helpers.fusion import DISTRACTORS
from helpers.workspace import commit_all, recall_json, run, write
from zmem.query import floor

# (the concept vectors hash every word, function words too: a question sharing `the` and `on` with a note is near
# it, so these share none that matter with any note)
NOTHING = ["sourdough starter feeding schedule", "Which volcano erupted during our skiing holiday?",
           "How many bees were in the second beehive after winter?"]
REWORDED = "Which computer hosts the proxy?"  # the note: "The relay daemon runs on the old box."


def _probability(ws, query: str, monkeypatch) -> float:
    """The answer probability the floor computed for a query (read from --explain with the floor off)."""
    from zmem.memory import Memory
    with monkeypatch.context() as m, Memory.open(ws) as mem:
        m.setattr(floor, "MIN_ANSWER", 0.0)
        hits = mem.recall(query, mode="hybrid", explain=True).results
    assert hits, "with the floor off the vectors' nearest notes are listed"
    return hits[0].explain["answer_probability"]


@pytest.mark.parametrize("query", NOTHING)
def test_a_question_no_note_is_about_gets_an_empty_list_in_hybrid(fusion_ws, monkeypatch, query):
    assert recall_json(fusion_ws, query, "--mode", "hybrid")["results"] == []
    # it is the floor that says nothing: its probability is under MIN_ANSWER
    assert _probability(fusion_ws, query, monkeypatch) < floor.MIN_ANSWER


def test_a_reworded_question_keeps_its_answer(fusion_ws, monkeypatch):
    out = recall_json(fusion_ws, REWORDED, "--mode", "hybrid", "--explain")
    assert out["results"][0]["path"] == "bank/setup.md"
    why = out["results"][0]["explain"]
    assert why["answer_probability"] >= floor.MIN_ANSWER
    assert set(floor.COEFFICIENTS) <= set(why["floor_signals"])
    assert why["answer_probability"] > max(_probability(fusion_ws, q, monkeypatch) for q in NOTHING)
    text = run(["-C", str(fusion_ws), "recall", REWORDED, "--mode", "hybrid", "--explain"]).stdout
    assert f"answer probability {why['answer_probability']}" in text


def test_a_keyword_answer_is_never_emptied_whatever_the_cosines(fusion_ws, monkeypatch):
    # a model whose cosines run low must not take away what keyword recall lists: half the query's rarity held
    monkeypatch.setattr(floor, "MIN_ANSWER", 1.0)
    out = recall_json(fusion_ws, "relay daemon", "--mode", "hybrid", "--explain")
    assert out["results"][0]["path"] == "bank/setup.md"


def test_mcp_memory_search_says_nothing_with_an_empty_list(fusion_ws):
    pytest.importorskip("mcp")
    import json
    from zmem.mcp.server import build_server
    server = build_server(str(fusion_ws))
    try:
        def search(query):
            res = asyncio.run(server.call_tool("memory_search", {"query": query, "mode": "hybrid"}))
            assert not res.is_error, res.content[0].text
            return json.loads(res.content[0].text)
        assert search(NOTHING[0])["results"] == []
        assert search(REWORDED)["results"][0]["path"] == "bank/setup.md"
    finally:
        server.memory.close()


def test_the_query_own_units_are_the_same_whatever_the_model_scale():
    # a model whose cosines crowd high (multilingual-e5: ~0.8 for anything, four times closer together) is
    # about an affine map of another's: its raw best cosine and lead differ, while the outlier score and the
    # lead in the null's standard deviations (what bench/fit_floor.py can fit across models) do not
    minilm = [0.52, 0.40, 0.38, 0.37, 0.35, 0.30]
    e5 = [0.75 + c / 4 for c in minilm]
    low = floor.signals(0.1, list(enumerate(minilm)), outlier=4.0, spread=0.04).features()
    high = floor.signals(0.1, list(enumerate(e5)), outlier=4.0, spread=0.01).features()
    assert high["best_cosine"] > low["best_cosine"] + 0.3 and high["lead"] == pytest.approx(low["lead"] / 4)
    assert high["lead_sd"] == pytest.approx(low["lead_sd"]) == pytest.approx(0.145 / 0.04)
    assert high["outlier"] == low["outlier"]


def test_a_lead_in_an_unmeasured_null_counts_as_a_typical_answer():
    s = floor.signals(0.0, [(1, 0.8), (2, 0.7)], outlier=None, spread=None)
    assert s.features()["lead_sd"] == floor.LEAD_SD_UNMEASURED
    assert s.features()["outlier"] == floor.OUTLIER_UNMEASURED


def test_when_nothing_matches_recall_does_not_look_deeper(ws, server, monkeypatch):
    # a named entity's page is listed even when the floor says nothing else matches: fewer than k hits, from
    # full candidate lists. Looking deeper cannot change the floor's answer; it used to rerun recall three
    # times, each scanning four times the vectors (~0.8 s at 10k chunks), the last past sqlite-vec's limit
    from helpers.workspace import index_notes
    from zmem.memory import Memory
    from zmem.query import search
    notes = {f"memory/2025-10-{i + 1:02d}.md": f"# 2025-10-{i + 1:02d}\n\n- Walked the dog and fed the cat, day {i}.\n"
             for i in range(30)}
    notes["bank/entities/Timbuktu.md"] = "# Timbuktu\n\nA city in Mali.\n"
    index_notes(ws, server, notes)
    monkeypatch.setattr(floor, "MIN_ANSWER", 0.9)  # the concept vectors put this query at 0.56: let the floor fire
    passes = []
    deeper = search.recall
    monkeypatch.setattr(search, "recall", lambda *a, **kw: passes.append(kw["multiplier"]) or deeper(*a, **kw))
    with Memory.open(ws) as mem:
        out = mem.recall("Timbuktu submarine periscope", mode="hybrid", explain=True)
    assert [h.path for h in out.results] == ["bank/entities/Timbuktu.md"], out.results
    assert out.results[0].explain["answer_probability"] < floor.MIN_ANSWER  # the floor said nothing matches
    assert len(passes) == 1, passes  # Memory's own pass only: no deeper one (it used to make [4, 16] here)



@pytest.fixture
def facts_ws(fusion_ws):
    """fusion_ws with its statements as Retain facts too, one daily log each (helpers.fusion's distractors)."""
    lines = [*DISTRACTORS, "The relay daemon runs on the old box.", "Error E4021 from the provider means the issuer timed out."]
    for day, line in enumerate(lines, 1):
        write(fusion_ws, f"memory/2025-12-{day:02d}.md", f"# 2025-12-{day:02d}\n\n## Retain\n\n- W @Ana: {line}\n")
    commit_all(fusion_ws)
    assert run(["-C", str(fusion_ws), "index"]).exit_code == 0  # their vectors too (the hook leaves them to the background)
    return fusion_ws


@pytest.mark.parametrize("query", NOTHING)
def test_facts_recall_says_nothing_by_the_same_floor(facts_ws, query):
    out = recall_json(facts_ws, query, "--kind", "world", "--mode", "hybrid")
    assert out["mode"] == "hybrid" and out["results"] == []


def test_facts_recall_keeps_a_reworded_question_answer_by_the_same_floor(facts_ws):
    # facts recall measured no floor signals (no query vector given to the fusion: the older rule, keyword evidence
    # under 0.2 and no cosine over 0.3, decided alone); it says nothing by the calibrated floor now, as notes recall
    out = recall_json(facts_ws, REWORDED, "--kind", "world", "--mode", "hybrid", "--explain")
    assert out["results"], "the reworded question's fact was emptied"
    first = out["results"][0]
    assert first["type"] == "fact" and "relay daemon" in first["snippet"]
    assert first["explain"]["answer_probability"] >= floor.MIN_ANSWER
    assert set(floor.COEFFICIENTS) <= set(first["explain"]["floor_signals"])
