"""Words written against characters newer than unicode61's Unicode 6.1 tables (🥳, skin tones, ~2,400
other symbols): SQLite keeps `Ana🥳` and `👍🏽zqword` as one token each, so zmem indexes their words
in cjk_bi (fts_glue, fts.cjk_columns) and finds them in notes, facts, history and sessions; indexes
written before (FTS_VERSION 2) are converted when opened (schema step fts_glued_words) and stay sound."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from helpers.workspace import classic_fts, commit_all, recall_json, roll_back_schema, run, write

from zmem.store import db
from zmem.store import fts
from zmem.store import migrations

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import gen_fts_glue  # noqa: E402

NOTE = ("# 2025-01-01\n\n## Notes\n\n- great work 👍🏽zqword today\n- party at the office with Ana🥳 tonight\n"
        "- 我买了iPhone🤝手机\n")
GLUED_LINES = {"zqword": "- great work 👍🏽zqword today", "Ana": "- party at the office with Ana🥳 tonight"}
SESSION_TEXT = "thanks👍🏽Quillon, the plan🧠 works 🥰"


def _ranges(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split():
        a, _, b = item.partition("-")
        out.append((int(a, 16), int(b or a, 16)))
    return out


def _fts_table():
    conn = db.sqlite.connect(":memory:", isolation_level=None)
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, cjk_bi, cjk_uni, content='', tokenize='{fts.TOKENIZER}')")
    return conn


# --- the glue set --------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_stored_glue_ranges_are_what_the_live_sqlite_glues():
    """fts_glue.RANGES holds only characters unicode61 keeps in a token, and every such character
    zmem does not read as part of a word (a newer Python may know more letters: those may stay)."""
    from zmem.store.fts_glue import RANGES
    stored = gen_fts_glue.parse(RANGES)
    assert gen_fts_glue.problems(stored)[:20] == []
    joiners = gen_fts_glue.unicode61_token_chars()
    # the characters of the report: newer emoji and skin tones glue, those of Unicode 6.1 do not
    for ch in "🥳🤔🤝🧠🥰🪴\U0001F3FB\U0001F3FF":
        assert ord(ch) in stored, ch
    for ch in "🎉👍✅🙏😂 .,-":
        assert ord(ch) not in stored and ord(ch) not in joiners, ch


def test_every_glue_range_keeps_its_neighbour_words_findable():
    """For the first and last character of every stored range: `Ana<ch>Bob` is one token to SQLite,
    and `ana` and `bob` still match the row cjk_columns writes."""
    from zmem.store.fts_glue import RANGES
    chars = sorted({chr(c) for a, b in _ranges(RANGES) for c in (a, b)})
    conn = _fts_table()
    rows = [(i, f"x Ana{ch}Bob y") for i, ch in enumerate(chars, 1)]
    conn.executemany("INSERT INTO t(rowid, text, cjk_bi, cjk_uni) VALUES(?, ?, ?, ?)",
                     [(i, t, *fts.cjk_columns(t)) for i, t in rows])
    for word in ("ana", "bob"):
        found = {r for (r,) in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (fts.build_match(word),))}
        lost = [repr(chars[i - 1]) for i, _ in rows if i not in found]
        assert not lost, (word, lost[:10])
    conn.execute("INSERT INTO t(t) VALUES('integrity-check')")


@pytest.mark.parametrize("text, words", [
    ("Ana🥳", ["Ana"]),
    ("great work 👍🏽zqword today", ["zqword"]),
    ("thanks👍🏽Ana", ["Ana"]),  # 👍 separates, 🏽 glues: `thanks` is a token of its own
    ("a🥳b🤔c", ["a", "b", "c"]),
    ("café🤔olá", ["café", "olá"]),
    ("我🥳Ana", ["Ana"]),  # CJK is cut into grams, the word is found once
    ("plan\U000F0001x", ["plan", "x"]),  # private use glues too
])
def test_cjk_columns_adds_the_glued_words(text, words):
    bi, uni = fts.cjk_columns(text)
    for w in words:
        assert w in bi.split(), (text, bi)
    assert len(bi.split()) == len(set(bi.split())), bi
    conn = _fts_table()
    conn.execute("INSERT INTO t(rowid, text, cjk_bi, cjk_uni) VALUES(1, ?, ?, ?)", (text, bi, uni))
    for w in fts.query_terms(text):  # every word zmem reads in the text finds it
        assert conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (fts.build_match(w),)).fetchall() == [(1,)], w


def test_text_without_glue_is_written_as_before():
    for text in ("plain ascii 🥳-free", "O aniversário da Beatriz é no sábado 🎉👍", "我买了iPhone手机",
                 "會議定在2025年12月 ✅", "e\u0301 decomposed", "1\ufe0f\u20e3 keycap, ❤\ufe0fAna"):
        assert fts.cjk_columns(text) == fts._cjk_columns_v2(text), text
    assert fts.cjk_columns("x" * 5000) == ("", "")


# --- recall, end to end ----------------------------------------------------------------------------


def _hit(ws, query, *extra) -> dict:
    hits = recall_json(ws, query, *extra)["results"]
    assert hits, f"{query!r}: no results"
    return hits[0]


def _get(ws, citation: str) -> str:
    res = run(["-C", str(ws), "get", citation])
    assert res.exit_code == 0, res.output + res.stderr
    return res.stdout


def _sessions(ws, text: str) -> Path:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[sessions]\nenabled = true\ndir = "~/.openclaw/agents/*/sessions"\n')
    sessions = Path(os.environ["HOME"]) / ".openclaw/agents/main/sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    f = sessions / "s.jsonl"
    f.write_text(json.dumps({"role": "user", "content": "hello there"}) + "\n"
                 + json.dumps({"role": "assistant", "content": text}) + "\n")
    return f


_FTS = [("chunks_fts", "text, heading", "SELECT id, text, heading FROM chunks"),
        ("facts_fts", "text, names", "SELECT id, text, names FROM facts"),
        ("hist_fts", "text, heading", "SELECT id, text, heading FROM hist_chunks"),
        ("session_fts", "text", "SELECT id, text FROM session_messages")]


def _integrity(ws) -> None:
    """SQLite's integrity-check, and more than it can see in a contentless table: every full-text
    index holds exactly the tokens the current code writes for the rows it indexes (a row deleted
    with fewer values than it was indexed with leaves its other tokens behind, silently)."""
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    try:
        for t, cols, sql in _FTS:
            conn.execute(f"INSERT INTO {t}({t}) VALUES('integrity-check')")
            expected = _fts_table_of(cols, [(row[0], *row[1:], *fts.cjk_columns("\n".join(row[1:])))
                                            for row in conn.execute(sql)])
            conn.execute(f"CREATE VIRTUAL TABLE temp.v_{t} USING fts5vocab(main, {t}, instance)")
            got = sorted(conn.execute(f"SELECT doc, col, term, offset FROM temp.v_{t}"))
            assert got == expected, (t, sorted(set(got) ^ set(expected))[:10])
    finally:
        conn.close()


def _fts_table_of(cols: str, rows: list[tuple]) -> list[tuple]:
    conn = db.sqlite.connect(":memory:", isolation_level=None)
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5({cols}, cjk_bi, cjk_uni, content='', tokenize='{fts.TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    marks = ", ".join("?" * (cols.count(",") + 4))
    conn.executemany(f"INSERT INTO t(rowid, {cols}, cjk_bi, cjk_uni) VALUES({marks})", rows)
    return sorted(conn.execute("SELECT doc, col, term, offset FROM v"))


def test_words_glued_to_newer_emoji_are_recalled_with_the_line_cited(ws):
    write(ws, "memory/2025-01-01.md", NOTE + "\n## Retain\n\n- W @Ana: Ana🥳 moved to Porto\n")
    commit_all(ws)
    for query, key in [("zqword", "zqword"), ("Ana", "Ana"), ("ana tonight", "Ana"), ("Ana🥳", "Ana"),
                       ("👍🏽zqword", "zqword"), ('"great work 👍🏽zqword"', "zqword")]:
        hit = _hit(ws, query)
        assert hit["path"] == "memory/2025-01-01.md", query
        # the name alone puts the fact about @Ana first (entity ranking); its line is glued to the emoji too
        lines = {GLUED_LINES[key]} | ({"- W @Ana: Ana🥳 moved to Porto"} if query in ("Ana", "Ana🥳") else set())
        assert lines & set(hit["snippet"].splitlines()), (query, hit["snippet"])
        assert lines & set(_get(ws, hit["citation"]).splitlines()), (query, hit["citation"])
    assert "iPhone🤝手机" in _hit(ws, "iPhone")["snippet"]
    # facts (a Retain bullet): BM25 over facts_fts
    res = json.loads(run(["-C", str(ws), "recall", "Ana", "--kind", "world", "--json"]).stdout)
    (fact,) = res["results"]
    assert fact["type"] == "fact" and "Ana🥳 moved to Porto" in fact["snippet"]
    # re-indexed and changed: rows delete cleanly
    write(ws, "memory/2025-01-01.md", "# 2025-01-01\n\n- nothing left\n")
    commit_all(ws)
    assert recall_json(ws, "zqword")["results"] == []
    assert run(["-C", str(ws), "index", "--full"]).exit_code == 0
    _integrity(ws)


def test_history_and_sessions_find_glued_words(ws):
    write(ws, "memory/2025-01-01.md", NOTE)
    commit_all(ws)
    write(ws, "memory/2025-01-01.md", "# 2025-01-01\n\n- nothing left\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index", "--history"]).exit_code == 0
    assert recall_json(ws, "zqword")["results"] == []
    for query, key in [("zqword", "zqword"), ("Ana", "Ana")]:
        past = _hit(ws, query, "--as-of", "HEAD~1")
        assert past["path"] == "memory/2025-01-01.md" and GLUED_LINES[key] in past["snippet"], query
    _sessions(ws, SESSION_TEXT)
    assert run(["-C", str(ws), "index", "--sessions"]).exit_code == 0
    for query in ("Quillon", "plan", "thanks"):
        hit = _hit(ws, query, "--source", "sessions")
        assert hit["source"] == "sessions" and SESSION_TEXT in hit["snippet"] and hit["start_line"] == 2, query
    _integrity(ws)


# --- indexes written before FTS_VERSION 3 ------------------------------------------------------------


def _v2_index(ws) -> None:
    """Turn the index back into what zmem wrote when dir_ctime was the last step (FTS_VERSION 2):
    every full-text row deleted with the current columns and written again with the old ones, the
    fingerprint naming schema 8 (NOTES_SCHEMA then)."""
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    with db.write_transaction(conn):
        classic_fts(conn)
        for fts_table, cols, sql in _FTS:
            for row in conn.execute(sql).fetchall():
                joined = "\n".join(row[1:])
                marks = ", ".join("?" * (len(row) + 2))
                conn.execute(f"INSERT INTO {fts_table}({fts_table}, rowid, {cols}, cjk_bi, cjk_uni) "
                             f"VALUES('delete', {marks})", (*row, *fts.cjk_columns(joined)))
                conn.execute(f"INSERT INTO {fts_table}(rowid, {cols}, cjk_bi, cjk_uni) VALUES({marks})",
                             (*row, *fts._cjk_columns_v2(joined)))
        fp = db.get_meta(conn, "fingerprint")
        assert f"schema={migrations.NOTES_SCHEMA};" in fp
        db.set_meta(conn, "fingerprint", fp.replace(f"schema={migrations.NOTES_SCHEMA};", "schema=8;"))
        roll_back_schema(conn, "dir_ctime")
    conn.close()


def _glued_index(ws) -> Path:
    """History (the note with glued words, then gone) and a session with glued words, indexed."""
    write(ws, "memory/2025-01-01.md", NOTE)
    commit_all(ws)
    write(ws, "memory/2025-01-02.md", "# 2025-01-02\n\n- lunch with Ana🥰 and zqother🤝\n")
    write(ws, "memory/2025-01-01.md", "# 2025-01-01\n\n- nothing left\n")
    commit_all(ws)
    f = _sessions(ws, SESSION_TEXT)
    assert run(["-C", str(ws), "index", "--history", "--sessions"]).exit_code == 0
    return f


def _old_rows(ws, table: str) -> int:
    """Rows of `table` that only the old form lacks a word of: cjk_bi empty in form 2."""
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    try:
        return conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH 'cjk_bi : quillon OR cjk_bi : zqword'"
                            ).fetchone()[0]
    finally:
        conn.close()


@pytest.mark.slow
def test_an_index_from_before_glued_words_is_converted_and_stays_sound(ws):
    f = _glued_index(ws)
    _v2_index(ws)
    assert _old_rows(ws, "hist_fts") == 0 and _old_rows(ws, "session_fts") == 0
    # opened by this zmem: fts_glued_words converts history and sessions, the catch-up re-derives the notes
    assert "zqother" in _hit(ws, "zqother")["snippet"]
    assert GLUED_LINES["zqword"] in _hit(ws, "zqword", "--as-of", "HEAD~1")["snippet"]
    assert GLUED_LINES["Ana"] in _hit(ws, "tonight Ana", "--as-of", "HEAD~1")["snippet"]
    assert _hit(ws, "Quillon", "--source", "sessions")["start_line"] == 2
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    assert db.schema_version(conn) == migrations.SCHEMA_VERSION
    assert f"schema={migrations.NOTES_SCHEMA};" in db.get_meta(conn, "fingerprint")
    conn.close()
    _integrity(ws)
    # converted rows delete by value cleanly: a rewritten session file drops its rows, a changed note its own
    f.write_text(json.dumps({"role": "user", "content": "brand new🧠talk"}) + "\n")
    assert run(["-C", str(ws), "index", "--sessions"]).exit_code == 0
    assert recall_json(ws, "Quillon", "--source", "sessions")["results"] == []
    assert _hit(ws, "talk", "--source", "sessions")["snippet"] == "brand new🧠talk"
    write(ws, "memory/2025-01-02.md", "# 2025-01-02\n\n- dinner🥰alone\n")
    commit_all(ws)
    assert recall_json(ws, "zqother")["results"] == [] and _hit(ws, "dinner")["path"] == "memory/2025-01-02.md"
    _integrity(ws)
    # a rebuild carries history over, in the new form
    assert run(["-C", str(ws), "index", "--full"]).exit_code == 0
    assert GLUED_LINES["zqword"] in _hit(ws, "zqword", "--as-of", "HEAD~2")["snippet"]
    _integrity(ws)


def test_an_index_from_before_both_conversions_runs_each_step_once(ws):
    """Up to file_ctime (FTS_VERSION 1: CJK grams only): fts_words_against_cjk takes history rows to
    form 2, fts_glued_words to 3."""
    _glued_index(ws)
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    with db.write_transaction(conn):
        classic_fts(conn)
        for cid, text, heading in conn.execute("SELECT id, text, heading FROM hist_chunks").fetchall():
            conn.execute("INSERT INTO hist_fts(hist_fts, rowid, text, heading, cjk_bi, cjk_uni) "
                         "VALUES('delete', ?, ?, ?, ?, ?)", (cid, text, heading, *fts.cjk_columns(text + "\n" + heading)))
            conn.execute("INSERT INTO hist_fts(rowid, text, heading, cjk_bi, cjk_uni) VALUES(?, ?, ?, ?, ?)",
                         (cid, text, heading, *fts._cjk_columns_v1(text + "\n" + heading)))
        for i, text in conn.execute("SELECT id, text FROM session_messages").fetchall():
            conn.execute("INSERT INTO session_fts(session_fts, rowid, text, cjk_bi, cjk_uni) VALUES('delete', ?, ?, ?, ?)",
                         (i, text, *fts.cjk_columns(text)))
            conn.execute("INSERT INTO session_fts(rowid, text, cjk_bi, cjk_uni) VALUES(?, ?, ?, ?)",
                         (i, text, *fts._cjk_columns_v1(text)))
        fp = db.get_meta(conn, "fingerprint")
        fp = re.sub(r"schema=\d+;", "schema=7;", re.sub(r"chunker=\d+", "chunker=1", fp))
        db.set_meta(conn, "fingerprint", fp)
        roll_back_schema(conn, "file_ctime")
    conn.close()
    past = _hit(ws, "iPhone", "--as-of", "HEAD~1")["snippet"]  # fts_words_against_cjk's words against CJK
    assert "iPhone🤝手机" in past
    assert GLUED_LINES["zqword"] in _hit(ws, "zqword", "--as-of", "HEAD~1")["snippet"]  # fts_glued_words'
    assert _hit(ws, "Quillon", "--source", "sessions")["start_line"] == 2
    _integrity(ws)
    assert run(["-C", str(ws), "index", "--full"]).exit_code == 0
    _integrity(ws)


def test_a_set_back_index_written_by_this_zmem_stays_exact(ws):
    """An index a zmem with fts_glued_words wrote (fingerprint schema >= 10) whose schema record
    says dir_ctime was the last step (tests, or a copy): its rows are current, fts_glued_words
    leaves them, and they stay exact."""
    f = _glued_index(ws)
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    with db.write_transaction(conn):
        roll_back_schema(conn, "dir_ctime")
    conn.close()
    assert _hit(ws, "zqword", "--as-of", "HEAD~1")
    f.write_text(json.dumps({"role": "user", "content": "short"}) + "\n")
    assert run(["-C", str(ws), "index", "--sessions"]).exit_code == 0
    _integrity(ws)


def test_rows_an_older_process_writes_after_the_conversion_are_converted_before_any_is_deleted(ws, monkeypatch):
    """A zmem process of the previous release that opened the index before fts_glued_words converted
    it goes on writing history and session rows in form 2 (fts_form NULL, schema step fts_form): they are converted
    before a rewritten transcript's rows are deleted by value (else the index is corrupt), and before
    history is extended (else their glued words are never found)."""
    from zmem.index import history as history_build
    from zmem.query import sessions
    f = _glued_index(ws)
    with monkeypatch.context() as old:  # the older process's write paths: form 2, no fts_form, no conversion
        for module in (sessions, history_build):
            old.setattr(module, "cjk_columns", fts._cjk_columns_v2)
            old.setattr(module, "FTS_VERSION", None)
            old.setattr(module, "convert_old_form_rows", lambda conn: None)
        with f.open("a") as fh:
            fh.write(json.dumps({"role": "assistant", "content": "all ok🥳Bia"}) + "\n")
        write(ws, "memory/2025-01-03.md", "# 2025-01-03\n\n- met ok🥳Bia today\n")
        commit_all(ws)
        assert run(["-C", str(ws), "index", "--history", "--sessions"]).exit_code == 0
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    for table in ("session_messages", "hist_chunks"):
        assert conn.execute(f"SELECT count(*) FROM {table} WHERE fts_form IS NULL").fetchone()[0] > 0, table
    conn.close()
    # history: converted when it is next extended (the catch-up before recall)
    write(ws, "memory/2025-01-03.md", "# 2025-01-03\n\n- gone\n")
    commit_all(ws)
    assert "ok🥳Bia" in _hit(ws, "Bia", "--as-of", "HEAD~1")["snippet"]
    # sessions: the rewritten transcript's rows, the old process's among them, delete cleanly
    f.write_text(json.dumps({"role": "user", "content": "brand new🧠talk"}) + "\n")
    res = run(["-C", str(ws), "index", "--sessions"])
    assert res.exit_code == 0 and "malformed" not in res.output + res.stderr, res.output + res.stderr
    assert recall_json(ws, "Bia", "--source", "sessions")["results"] == []
    assert _hit(ws, "talk", "--source", "sessions")["snippet"] == "brand new🧠talk"
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    for table in ("session_messages", "hist_chunks"):
        assert conn.execute(f"SELECT count(*) FROM {table} WHERE fts_form IS NULL").fetchone()[0] == 0, table
    conn.close()
    _integrity(ws)


def test_session_rows_an_older_process_wrote_are_converted_without_history(ws, monkeypatch):
    """As above with history off: session indexing itself converts them before deleting any."""
    from zmem.query import sessions
    f = _sessions(ws, SESSION_TEXT)
    assert run(["-C", str(ws), "index", "--sessions"]).exit_code == 0
    with monkeypatch.context() as old:
        old.setattr(sessions, "cjk_columns", fts._cjk_columns_v2)
        old.setattr(sessions, "FTS_VERSION", None)
        old.setattr(sessions, "convert_old_form_rows", lambda conn: None)
        with f.open("a") as fh:
            fh.write(json.dumps({"role": "assistant", "content": "all ok🥳Bia"}) + "\n")
        assert run(["-C", str(ws), "index", "--sessions"]).exit_code == 0
    f.write_text(json.dumps({"role": "user", "content": "brand new🧠talk"}) + "\n")
    res = run(["-C", str(ws), "index", "--sessions"])
    assert res.exit_code == 0 and "malformed" not in res.output + res.stderr, res.output + res.stderr
    assert _hit(ws, "talk", "--source", "sessions")["snippet"] == "brand new🧠talk"
    _integrity(ws)
