"""Recall across scripts and Unicode forms, with the real CLI in real git repositories: Latin words
and digits written against CJK text, decomposed (NFD) queries and notes, snippets that find the
matching line whatever its accents or word form, "…" wherever a snippet shows part of a line, and
indexes written before these rules (converted when opened)."""
from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path

from helpers.workspace import classic_fts, commit_all, recall_json, roll_back_schema, run, write

MIXED = "# 2025-12-01\n\n## Notes\n\n- 我买了iPhone手机\n- 会议定在2025年12月\n- 用MacBook写代码\n"


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def get(ws, citation: str) -> str:
    res = run(["-C", str(ws), "get", citation])
    assert res.exit_code == 0, res.output + res.stderr
    return res.stdout


def only_hit(ws, query, *extra) -> dict:
    hits = recall_json(ws, query, *extra)["results"]
    assert hits, f"{query!r}: no results"
    return hits[0]


def test_latin_words_and_digits_next_to_cjk_are_found(ws):
    write(ws, "memory/2025-12-01.md", MIXED)
    commit_all(ws)
    for query, line in [("iPhone", "- 我买了iPhone手机"), ("MacBook", "- 用MacBook写代码"),
                        ("2025", "- 会议定在2025年12月"), ("iphone", "- 我买了iPhone手机"),
                        ("macbook 写代码", "- 用MacBook写代码"), ("手机", "- 我买了iPhone手机")]:
        hit = only_hit(ws, query)
        assert hit["path"] == "memory/2025-12-01.md", query
        assert line in get(ws, hit["citation"]).splitlines(), (query, hit["citation"], hit["snippet"])
        assert line in hit["snippet"].splitlines()
    # the cited lines are the matching ones, not the whole chunk: 2025 is on line 6 only
    assert only_hit(ws, "2025")["citation"] == "memory/2025-12-01.md#L6-L6" or \
        "2025" in get(ws, only_hit(ws, "2025")["citation"])


def test_mixed_tokens_in_facts_history_and_sessions(ws):
    write(ws, "memory/2025-12-01.md", MIXED + "\n## Retain\n\n- W @Wei: 我买了iPhone手机\n")
    commit_all(ws)
    # facts (--kind): BM25 over facts_fts
    res = json.loads(run(["-C", str(ws), "recall", "iPhone", "--kind", "world", "--explain", "--json"]).stdout)
    (fact,) = res["results"]
    assert fact["type"] == "fact" and "iPhone" in fact["snippet"] and fact["explain"]["bm25_rank"] == 1
    # history: the note as it was before the next commit
    write(ws, "memory/2025-12-01.md", "# 2025-12-01\n\n- nothing left\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index", "--history"]).exit_code == 0
    assert recall_json(ws, "iPhone")["results"] == []  # gone from HEAD
    past = recall_json(ws, "MacBook", "--as-of", "HEAD~1")["results"]
    assert past and past[0]["path"] == "memory/2025-12-01.md" and "MacBook" in past[0]["snippet"]
    # session transcripts
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    sessions = Path(os.environ["HOME"]) / ".openclaw/agents/main/sessions"
    sessions.mkdir(parents=True)
    config.write_text('[sessions]\nenabled = true\ndir = "~/.openclaw/agents/*/sessions"\n')
    (sessions / "s.jsonl").write_text(json.dumps({"role": "user", "content": "会议定在2025年12月，用MacBook演示"}) + "\n")
    assert run(["-C", str(ws), "index", "--sessions"]).exit_code == 0
    for query in ("MacBook", "2025"):
        hit = only_hit(ws, query, "--source", "sessions")
        assert hit["source"] == "sessions" and query in hit["snippet"] and hit["start_line"] == 1


def test_decomposed_queries_and_notes(ws):
    write(ws, "memory/2025-12-02.md", "# 2025-12-02\n\n- O aniversário da Beatriz é no sábado.\n")
    write(ws, "memory/2025-12-03.md", "# 2025-12-03\n\n- " + nfd("Tomás comprou o bolo de aniversário.") + "\n")
    write(ws, "memory/2025-12-04.md", "# 2025-12-04\n\n- item s of the list\n")
    commit_all(ws)
    # an NFD query finds the NFC note, an NFC query the NFD note, and accents are optional
    for query in (nfd("aniversário"), "aniversário", "aniversario"):
        paths = {h["path"] for h in recall_json(ws, query)["results"]}
        assert paths == {"memory/2025-12-02.md", "memory/2025-12-03.md"}, query
    for query in ("Tomás", nfd("Tomás"), "Tomas"):
        hit = only_hit(ws, query)
        assert hit["path"] == "memory/2025-12-03.md" and nfd("Tomás") in get(ws, hit["citation"])
    # "Tomás" in NFD is one word, not "Toma" + a stray "s"
    got = recall_json(ws, nfd("Tomás sábado"))["results"]
    assert {h["path"] for h in got} == {"memory/2025-12-02.md", "memory/2025-12-03.md"}


def _filler(n: int) -> str:
    return "".join(f"- filler note {i}: the weekly plan, chores and errands for the household\n" for i in range(n))


def test_snippet_shows_the_line_matched_without_its_accents_or_word_form(ws):
    body = _filler(16) + "- O aniversário da Beatriz é no sábado, com bolo e velas.\n"
    write(ws, "bank/world.md", "# World\n\n" + body)
    write(ws, "bank/experience.md", "# Experience\n\n" + _filler(16) + "- The team recommended the Lisbon vendor.\n")
    commit_all(ws)
    for query in ("aniversario", "aniversário", nfd("aniversário"), "Aniversarios"):
        hit = only_hit(ws, query)
        assert hit["path"] == "bank/world.md"
        assert hit["end_line"] == 19 and "aniversário" in get(ws, hit["citation"]), (query, hit["citation"])
        assert "aniversário" in hit["snippet"]
    for query in ("recommendations", "recommending", "Recommend"):
        hit = only_hit(ws, query)
        assert hit["path"] == "bank/experience.md" and hit["end_line"] == 19, (query, hit["citation"])
        assert "recommended" in get(ws, hit["citation"])


def test_part_of_a_huge_line_is_marked_with_ellipses(ws):
    cjk = "这是很长的一行。" * 62 + "下周去上海开会。" + "这是很长的一行。" * 62  # 1,000 characters
    write(ws, "memory/2025-12-05.md", f"# 2025-12-05\n\n{cjk}\n")
    latin = " ".join(f"word{i}" for i in range(600)) + " 中文 " + " ".join(f"term{i}" for i in range(600))
    write(ws, "memory/2025-12-06.md", f"# 2025-12-06\n\n{latin}\n")
    words = " ".join(f"token{i}" for i in range(1000))  # ~9,900 characters
    write(ws, "memory/2025-12-07.md", f"# 2025-12-07\n\n{words}\n")
    commit_all(ws)
    cases = [("上海开会", "memory/2025-12-05.md", cjk), ("term300", "memory/2025-12-06.md", latin),
             ("token450", "memory/2025-12-07.md", words), ("token5", "memory/2025-12-07.md", words),
             ("token998", "memory/2025-12-07.md", words)]
    for query, path, line in cases:
        hit = only_hit(ws, query)
        assert hit["path"] == path and hit["citation"] == f"{path}#L3-L3", query
        snippet = hit["snippet"]
        assert query in snippet and len(snippet) <= 700
        assert get(ws, hit["citation"]) == line + "\n"
        # how a client maps a snippet back: strip one leading and one trailing "…"; the rest is in the line
        inner = snippet.removeprefix("…").removesuffix("…")
        at = line.find(inner)
        assert at >= 0, query
        assert snippet.startswith("…") == (at > 0), query  # cut before: marked
        assert snippet.endswith("…") == (at + len(inner) < len(line)), query  # cut after: marked
    assert only_hit(ws, "上海开会")["snippet"].startswith("…")  # the middle of the line: both sides


def _old_index(ws, last_step: str = "file_ctime") -> None:
    """Turn the index back into what a zmem before FTS_VERSION 2 wrote: CJK columns without the
    Latin runs, slices of long lines without "…", chunker=1 in the fingerprint, no fts_version."""
    from zmem.store import db
    from zmem.store.fts import _cjk_columns_v1, cjk_columns
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    with db.write_transaction(conn):
        classic_fts(conn)
        for table, fts in (("chunks", "chunks_fts"), ("hist_chunks", "hist_fts")):
            for cid, text, heading, start, end in conn.execute(
                    f"SELECT id, text, heading, start_line, end_line FROM {table}").fetchall():
                conn.execute(f"INSERT INTO {fts}({fts}, rowid, text, heading, cjk_bi, cjk_uni) "
                             "VALUES('delete', ?, ?, ?, ?, ?)", (cid, text, heading, *cjk_columns(text + "\n" + heading)))
                if start == end:
                    text = text.removeprefix("…").removesuffix("…")
                    conn.execute(f"UPDATE {table} SET text = ? WHERE id = ?", (text, cid))
                conn.execute(f"INSERT INTO {fts}(rowid, text, heading, cjk_bi, cjk_uni) VALUES(?, ?, ?, ?, ?)",
                             (cid, text, heading, *_cjk_columns_v1(text + "\n" + heading)))
        fp = db.get_meta(conn, "fingerprint")
        db.set_meta(conn, "fingerprint", re.sub(r"chunker=\d+", "chunker=1", fp))
        db.set_meta(conn, "fts_version", None)
        roll_back_schema(conn, last_step)  # file_ctime: the schema before fts_words_against_cjk converted the rows
    conn.close()


def test_an_index_written_before_these_rules_is_converted_when_opened(ws):
    write(ws, "memory/2025-12-01.md", MIXED)
    words = " ".join(f"token{i}" for i in range(1000))
    write(ws, "memory/2025-12-07.md", f"# 2025-12-07\n\n{words}\n")
    cjk = "这是很长的一行。" * 62 + "下周去上海开会。" + "这是很长的一行。" * 62  # slices shorter than a snippet
    write(ws, "memory/2025-12-05.md", f"# 2025-12-05\n\n{cjk}\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index", "--history"]).exit_code == 0
    assert recall_json(ws, "iPhone")["results"]
    _old_index(ws)
    hit = only_hit(ws, "iPhone")  # the rows were converted when recall opened the index
    assert "iPhone" in hit["snippet"]
    for query in ("token450", "上海开会"):  # the files with slices were read again: they carry "…"
        hit = only_hit(ws, query)
        assert hit["snippet"].startswith("…") and hit["snippet"].endswith("…"), query
    # history keeps its chunks: converted in place
    assert "iPhone" in only_hit(ws, "iPhone", "--as-of", "HEAD")["snippet"]
    for query in ("token450", "上海开会"):
        past = only_hit(ws, query, "--as-of", "HEAD")["snippet"]
        assert past.startswith("…") and past.endswith("…") and query in past and len(past) <= 700, query
    # the converted rows delete cleanly: no stale words, no error, when the notes change
    write(ws, "memory/2025-12-01.md", "# 2025-12-01\n\n- 什么都没有\n")
    commit_all(ws)
    assert recall_json(ws, "iPhone")["results"] == []
    assert recall_json(ws, "手机")["results"] == []
    assert only_hit(ws, "什么")["path"] == "memory/2025-12-01.md"
    assert run(["-C", str(ws), "index", "--full"]).exit_code == 0  # and a rebuild carries history over
    assert "iPhone" in only_hit(ws, "iPhone", "--as-of", "HEAD~1")["snippet"]


def test_rows_an_older_zmem_wrote_into_a_converted_index_are_replaced_cleanly(ws):
    """An older zmem process still running (an MCP server) after the index was converted writes rows
    in the old form and its own fingerprint; the next new catch-up re-derives every row without
    deleting the old ones by value (which made SQLite report the index malformed)."""
    write(ws, "memory/2025-12-01.md", MIXED)
    commit_all(ws)
    assert recall_json(ws, "iPhone")["results"]
    _old_index(ws, last_step="fts_words_against_cjk")  # converted already, then written by the old code
    assert "iPhone" in only_hit(ws, "iPhone")["snippet"]
    write(ws, "memory/2025-12-01.md", "# 2025-12-01\n\n- 什么都没有\n")
    commit_all(ws)
    assert recall_json(ws, "iPhone")["results"] == [] and only_hit(ws, "什么")["path"] == "memory/2025-12-01.md"


def test_languages(ws):
    write(ws, "memory/2025-12-08.md", "# x\n\n- 東京で会議がありました。\n- El aniversário de la abuela.\n"
          "- The gateway crashed twice yesterday.\n")
    assert recall_json(ws, "北京")["results"][0]["path"] == "memory/2025-11-27.md"
    assert recall_json(ws, "東京")["results"][0]["path"] == "memory/2025-12-08.md"
    assert recall_json(ws, "会議")["results"][0]["path"] == "memory/2025-12-08.md"
    assert recall_json(ws, "aniversario")["results"][0]["path"] == "memory/2025-12-08.md"  # accents folded
    assert recall_json(ws, "crashes")["results"][0]["path"] == "memory/2025-12-08.md"  # English stemming
    assert recall_json(ws, "esta marrakech")["results"][0]["path"] == "memory/2025-11-27.md"
