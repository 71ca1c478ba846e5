"""A question's `Peter's` searches the name: the tokenizer makes a note's `Peter's` `peter` `s`, so the quoted
word was the phrase `peter s` and missed every note that writes the name alone (and `I'm`, `don't`
searched `i m`, `don t`). query_terms cuts English clitics off; stopwords they leave are dropped."""
from __future__ import annotations

import json

import pytest

from helpers.workspace import commit_all, run, write
from zmem.store.fts import build_match, query_terms

NOTES = {
    "memory/2025-03-02.md": "# 2025-03-02\n\n- The car park by the station closes at midnight.\n",
    "memory/2025-03-03.md": "# 2025-03-03\n\n- Rented a car for the trip to the coast.\n",
    "memory/2025-03-04.md": "# 2025-03-04\n\n- The car needs new tyres before winter.\n",
    "memory/2025-03-05.md": "# 2025-03-05\n\n- Peter leaves the Tesla in the underground garage overnight.\n",
    "memory/2025-03-06.md": "# 2025-03-06\n\n- Ana's birthday dinner is at the Thai place on Friday.\n",
}


@pytest.fixture
def ws(tmp_path):
    assert run(["init", "--no-hooks", str(tmp_path)]).exit_code == 0
    for rel, text in NOTES.items():
        write(tmp_path, rel, text)
    commit_all(tmp_path)
    assert run(["-C", str(tmp_path), "index", "-q"]).exit_code == 0
    return tmp_path


def paths(ws, question: str) -> list[str]:
    res = run(["-C", str(ws), "recall", question, "--mode", "bm25", "--json", "-k", "3"])
    assert res.exit_code == 0, res.output + res.stderr
    return [hit["path"] for hit in json.loads(res.stdout)["results"]]


def test_a_possessive_finds_the_note_that_writes_the_name_alone(ws):
    # the old code searched `"peter's" OR "car"`: the phrase matched no note, so the three car notes came first
    assert paths(ws, "Where does Peter's car stay at night?")[0] == "memory/2025-03-05.md"


def test_the_name_and_its_possessive_find_a_note_that_writes_the_possessive(ws):
    assert paths(ws, "When is Ana's birthday?")[0] == "memory/2025-03-06.md"
    assert paths(ws, "Ana birthday")[0] == "memory/2025-03-06.md"


@pytest.mark.parametrize("query, terms", [
    ("Where is Sofia's wedding?", ["sofia", "wedding"]),
    ("Where is Sofia’s wedding?", ["sofia", "wedding"]),  # a typographic apostrophe
    ("How do I get in if I'm locked out?", ["get", "locked", "out"]),
    ("Why didn't the backup run, and can't it be fixed?", ["backup", "run", "fixed"]),
    ("We'll see what you've got", ["see", "got"]),
    ("O'Brien's pub", ["o'brien", "pub"]),  # an apostrophe inside a name stays
    ("caixa d'água", ["caixa", "d'água"]),  # and in Portuguese
    ("don't", ["don't"]),  # nothing but stopwords: the words as written (not `do`, Portuguese `do` too)
])
def test_query_terms_cut_english_clitics(query, terms):
    assert query_terms(query) == terms


def test_a_possessive_is_searched_as_written_too():
    # the phrase `sofia s` lifts a note that writes the possessive above one writing the name alone
    assert build_match("Where is Sofia's wedding?") == '"sofia\'s" OR "sofia" OR "wedding"'
    assert build_match('"Sofia\'s wedding" dress') == '"Sofia\'s wedding" OR "sofia\'s" OR "sofia" OR "wedding" OR "dress"'


def test_a_note_writing_the_possessive_ranks_above_one_writing_the_name(tmp_path):
    assert run(["init", "--no-hooks", str(tmp_path)]).exit_code == 0
    write(tmp_path, "memory/2025-03-02.md", "# 2025-03-02\n\n- Ana plans the offsite in spring.\n")
    write(tmp_path, "memory/2025-03-03.md", "# 2025-03-03\n\n- Ana's plans changed: she flies on Monday.\n")
    commit_all(tmp_path)
    assert run(["-C", str(tmp_path), "index", "-q"]).exit_code == 0
    assert paths(tmp_path, "Ana's plans") == ["memory/2025-03-03.md", "memory/2025-03-02.md"]
