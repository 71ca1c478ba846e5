"""What goes into the FTS5 columns, and turning any user query into a safe MATCH expression."""
from __future__ import annotations

import re
import unicodedata
from _thread import allocate_lock  # threading.Lock itself, without importing threading (~1 ms)

from zmem.text.chunking import CJK_CLASS, CUT, MARKS
from zmem.text.lazyre import LazyPattern
from zmem.text.markdown import without_markers

# the CJK patterns compile in ~3 ms each (lazyre): not at import
_CJK_RUN = LazyPattern(f"[{CJK_CLASS}]+")
_CJK_SPLIT = LazyPattern(f"([{CJK_CLASS}]+)")
# A word as unicode61 sees it: letters and digits, and the combining marks it keeps inside tokens
# (NFD text, macOS input: "a" + U+0301), which Python's \w leaves out.
_WCH = rf"(?:[^\W_]|[{MARKS}])"
_TOKEN_START = LazyPattern(f"{_WCH}+")  # the token characters a text starts with
_WORD = re.compile(rf"{_WCH}+(?:['’]{_WCH}+)*")
_PHRASE = re.compile(r'"([^"]+)"')
_MARK = re.compile(f"[{MARKS}]+")
_WCH_RE = LazyPattern(_WCH)

# Words too common to help an OR query (and slow on large indexes): English, Portuguese, Spanish.
STOPWORDS = frozenset("""
a an and are as at be been but by can could did do does for from had has have he her him his how i if in
into is it its me my no not of on or our she so than that the their them then there these they this to
us was we were what when where which who whom why will with would you your yes about after before
o os as um uma uns umas e é de do da dos das em no na nos nas por para com que se ao aos à às ou mas
el la los las un una unos unas y es del al en por para con que se lo le les su sus o pero como
""".split())

# What cjk_columns puts in the columns: 2 added the words written against CJK (schema step
# fts_words_against_cjk, convert_rows, converts older rows), 3 the words glued to characters newer
# than unicode61's tables (step fts_glued_words, convert_glued_rows). The meta key only marks
# indexes written while fts_words_against_cjk was developed, whose rows were already in form 2.
FTS_VERSION = 3
FTS_META = "fts_version"


def nfc(text: str) -> str:
    """Composed Unicode (NFC), so decomposed input (macOS) reads like the same text composed."""
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", text)


def cjk_columns(text: str) -> tuple[str, str]:
    """The cjk_bi and cjk_uni columns: space-separated bigrams and unigrams of every CJK run
    (unicode61 cannot segment CJK), and in cjk_bi also the words unicode61 glues to a neighbour:
    letters and digits written against CJK characters (unicode61 keeps `我买了iPhone手机` as one
    token, so `iPhone` is found only there; `会议定在2025年12月`: `2025`, `12`), and words written
    against a character its Unicode 6.1 tables do not know (fts_glue: newer emoji, skin tones; `Ana🥳`
    is one token `ana🥳`, `👍🏽Ana` gives `🏽ana`). Decomposed text (macOS) is read composed: Hangul is
    CJK only so."""
    if text.isascii():
        return "", ""
    text = nfc(text)
    bi, uni = _cjk_grams(text)
    glued = _glued_words(text)
    if glued:
        seen = set(bi)
        bi.extend(w for w in glued if w not in seen)
    return " ".join(bi), " ".join(uni)


def _cjk_columns_v2(text: str) -> tuple[str, str]:
    """cjk_columns before FTS_VERSION 3 (no words glued to newer characters): what schema step fts_glued_words
    (`convert_glued_rows`) deletes old rows with."""
    if text.isascii():
        return "", ""
    bi, uni = _cjk_grams(nfc(text))
    return " ".join(bi), " ".join(uni)


def _cjk_grams(text: str) -> tuple[list[str], list[str]]:
    """cjk_bi and cjk_uni of composed text as FTS_VERSION 2 wrote them, as lists."""
    parts = _CJK_SPLIT.split(text)  # other text, a CJK run, other text, …, a CJK run, other text
    if len(parts) == 1:
        return [], []
    bi: list[str] = []
    uni: list[str] = []
    for run in parts[1::2]:
        uni.extend(run)
        bi.extend(map(str.__add__, run, run[1:]))
    last = len(parts) - 1
    for j in range(0, len(parts), 2):  # the text between runs, which holds no CJK character
        part = parts[j]
        if not part:
            continue
        head = _TOKEN_START.match(part).end() if j and _letter(part, 0) else 0
        tail = len(part)
        if j < last:
            m = _TOKEN_START.match(part[::-1])  # the letters it ends with (one per code point: any order)
            if m:
                tail -= m.end()
        if head == len(part) and j < last:  # letters only, between two runs: one token with both
            bi.append(part)
            continue
        if head:
            bi.append(part[:head])
        if tail < len(part):
            bi.append(part[tail:])
    return bi, uni


# Words glued to a character unicode61 keeps in a token but zmem does not read as part of a word
# (fts_glue.RANGES, generated from SQLite: its Unicode 6.1 tables are frozen). Compiled when first
# needed (~6 ms): the BMP ranges as one class (a bitmap: ~5 µs per 700 characters), the others,
# rare outside emoji, looked up per character after a quick scan for any character beyond the BMP.
_ASTRAL = LazyPattern("[\U00010000-\U0010ffff]")
_SUBCH = rf"(?:[^\W_{CJK_CLASS}]|[{MARKS}])"  # a letter, digit or mark, not CJK (CJK is _cjk_grams')
_SUB = LazyPattern(f"{_SUBCH}+")
_glue: tuple | None = None


def _glue_tables() -> tuple:
    global _glue
    if _glue is None:
        from bisect import bisect_right

        from zmem.store.fts_glue import RANGES
        bmp, starts, ends = [], [], []
        for item in RANGES.split():
            a, _, b = item.partition("-")
            lo, hi = int(a, 16), int(b or a, 16)
            if lo <= 0xFFFF:
                bmp.append(re.escape(chr(lo)) + ("-" + re.escape(chr(min(hi, 0xFFFF))) if hi > lo else ""))
            if hi > 0xFFFF:
                starts.append(max(lo, 0x10000))
                ends.append(hi)

        seen: dict[str, bool] = {}  # per character beyond the BMP: at most a few thousand emoji

        def astral(ch: str) -> bool:
            glue = seen.get(ch)
            if glue is None:
                c = ord(ch)
                i = bisect_right(starts, c) - 1
                glue = seen[ch] = i >= 0 and c <= ends[i]
            return glue
        _glue = (re.compile(f"[{''.join(bmp)}]"), astral)
    return _glue


def _glued_words(text: str) -> list[str]:
    """The words (letters, digits, marks; not CJK) written right against a glue character, in order."""
    bmp, astral = _glue_tables()
    at = [m.start() for m in bmp.finditer(text)]
    if _ASTRAL.search(text):
        at += [m.start() for m in _ASTRAL.finditer(text) if astral(m.group())]
        at.sort()
    if not at:
        return []
    words: list[str] = []
    rev = None
    n = len(text)
    for p in at:
        if _WCH_RE.match(text, p):  # a letter to this Python (assigned after the table was generated)
            continue
        if p and _SUB.match(text, p - 1, p):  # a word ends right before: find its start in reverse
            rev = rev or text[::-1]
            words.append(_SUB.match(rev, n - p).group()[::-1])
        m = _SUB.match(text, p + 1)
        if m:
            words.append(m.group())
    return list(dict.fromkeys(words))


def _letter(text: str, i: int) -> bool:
    """Whether text[i] (not a CJK character) is part of a unicode61 token: a letter, digit or mark."""
    return text[i].isalnum() or (text[i] >= "\u0300" and _MARK.match(text, i) is not None)


def _cjk_columns_v1(text: str) -> tuple[str, str]:
    """cjk_columns before FTS_VERSION 2 (CJK grams only): what `convert_rows` deletes old rows with."""
    bi: list[str] = []
    uni: list[str] = []
    for run in _CJK_RUN.findall(text):
        uni.extend(run)
        bi.extend(run[i:i + 2] for i in range(len(run) - 1))
    return " ".join(bi), " ".join(uni)


def convert_rows(conn) -> None:
    """Schema step fts_words_against_cjk (migrations.STEPS; the caller holds the write transaction): the history and
    session full-text rows an older zmem wrote are deleted with the old columns (FTS_VERSION 1) and
    inserted with FTS_VERSION 2's (a contentless table deletes a row only given exactly what it
    indexed); fts_glued_words takes them on to the current form. The notes' own rows need nothing here: the new schema number changes the index fingerprint, so the next
    catch-up clears and re-derives all of them (indexer._clear_notes). The schema number, not a meta
    key, records the step: an older zmem refuses a newer schema instead of writing rows in the old
    form into a converted index."""
    from zmem.store import db
    m = re.search(r"\bchunker=(\d+)", db.get_meta(conn, "fingerprint") or "")
    if db.get_meta(conn, FTS_META) == "2" or (m and int(m.group(1)) >= 2):
        return  # rows already in form 2 (an index written while this step was being developed)
    _convert(conn, _cjk_columns_v1, _cjk_columns_v2, mark_slices=True)


def convert_glued_rows(conn) -> None:
    """Schema step fts_glued_words (as convert_rows): history and session rows from FTS_VERSION 2
    to 3. Only rows holding a glue character (fts_glue) change: those are deleted with the old
    columns and inserted with cjk_columns'. The notes' rows are re-derived by the fingerprint change
    (whose NOTES_SCHEMA is 10 since this step)."""
    from zmem.store import db
    m = re.search(r"\bschema=(\d+)", db.get_meta(conn, "fingerprint") or "")
    if m and int(m.group(1)) >= 10:
        return  # a zmem with this step wrote the index already (its schema record was set back)
    _convert(conn, _cjk_columns_v2, cjk_columns, mark_slices=False)


# (fts table, its text columns, the table holding its rows, the column indexed with `text` or None):
# the tables a fingerprint change does not re-derive
_TABLES = [("hist_fts", "text, heading", "hist_chunks", "heading"), ("session_fts", "text", "session_messages", None)]
NON_ASCII_GLOB = "*[^\x01-\x7f]*"


def convert_old_form_rows(conn) -> None:
    """History and session rows an older zmem process wrote after fts_glued_words converted the index
    (it opened the index before and writes form 2, leaving fts_form NULL, schema step fts_form):
    deleted with the old columns, inserted with cjk_columns' and marked current, as fts_glued_words
    did. The caller holds the index lock and a write transaction; call before deleting any such row
    by value. Nothing to do is one look at a partial index."""
    if not any(conn.execute(f"SELECT 1 FROM {source} WHERE fts_form IS NULL LIMIT 1").fetchone()
               for _, _, source, _ in _TABLES):
        return
    _convert(conn, _cjk_columns_v2, cjk_columns, mark_slices=False, only_old_form=True)
    for _, _, source, _ in _TABLES:
        conn.execute(f"UPDATE {source} SET fts_form = ? WHERE fts_form IS NULL", (FTS_VERSION,))


def _convert(conn, old_columns, new_columns, *, mark_slices: bool, only_old_form: bool = False) -> None:
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for fts, cols, source, other in _TABLES:
        if fts not in tables or source not in tables:
            continue
        marks = ", ".join("?" * (cols.count(",") + 4))  # rowid, the text columns, cjk_bi, cjk_uni
        where = "text GLOB ?1" + (f" OR {other} GLOB ?1" if other else "")  # CJK columns need a non-ASCII character
        if only_old_form:
            where = f"fts_form IS NULL AND ({where})"
        rows = conn.execute(f"SELECT id, text, {other or 'NULL'} FROM {source} WHERE {where}", (NON_ASCII_GLOB,)).fetchall()
        marked = _marked_slices(conn) if mark_slices and source == "hist_chunks" else {}
        rows += [(i, text, heading) for i, text, heading, _ in marked.values()]
        old, new, texts = [], [], []
        for rowid, text, extra in {r[0]: r for r in rows}.values():
            after_text = marked[rowid][3] if rowid in marked else text
            if other is None:
                before, after = (text, *old_columns(text)), (after_text, *new_columns(after_text))
            else:
                before = (text, extra, *old_columns(text + "\n" + extra))
                after = (after_text, extra, *new_columns(after_text + "\n" + extra))
            if before != after:
                old.append((rowid, text) if other is None else (rowid, text, extra))
                new.append((rowid, *after))
            if after_text != text:
                texts.append((after_text, rowid))
        delete_rows(conn, fts, old, old_columns)
        conn.executemany(f"INSERT INTO {fts}(rowid, {cols}, cjk_bi, cjk_uni) VALUES({marks})", new)
        # history keeps its chunks (they depend on git alone): slices of a long line are marked in
        # place with CHUNKER_VERSION 2's "…" (_marked_slices)
        conn.executemany(f"UPDATE {source} SET text = ? WHERE id = ?", texts)


# ----------------------------------------------------------------------------- the full-text tables

# Each full-text table: its text columns, its rows (rowid, then those columns' values, cjk_columns
# reads them joined by "\n") and its bm25 weights (text columns, then cjk_bi, cjk_uni).
TABLES = {
    "chunks_fts": ("text, heading", "SELECT id, text, heading FROM chunks", "bm25(1.0, 0.5, 1.0, 0.5)"),
    "facts_fts": ("text, names", "SELECT id, text, names FROM facts", "bm25(1.0, 0.5, 1.0, 0.5)"),
    "hist_fts": ("text, heading", "SELECT id, text, heading FROM hist_chunks", "bm25(1.0, 0.5, 1.0, 0.5)"),
    "session_fts": ("text", "SELECT id, text FROM session_messages", "bm25(1.0, 1.0, 0.5)"),
}
CONTENTLESS_DELETE = (3, 43, 0)  # the first SQLite whose FTS5 has contentless_delete=1


def can_delete_by_rowid() -> bool:
    """Whether this SQLite makes full-text tables that delete a row by its rowid alone."""
    from zmem.store import db
    return db.sqlite.sqlite_version_info >= CONTENTLESS_DELETE


def deletes_by_rowid(conn, table: str) -> bool:
    """Whether `table` was made with contentless_delete=1 (schema step contentless_delete_fts on SQLite >= 3.43)."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    return bool(row) and "contentless_delete=1" in row[0]


def delete_rows(conn, table: str, rows: list[tuple], columns=None) -> None:
    """Delete full-text rows; rows: (rowid, the values of the table's text columns). A table made
    with contentless_delete=1 deletes by rowid alone. An older one (made by SQLite < 3.43) must be
    given exactly what it indexed, or it keeps the other tokens and is silently corrupt: the CJK
    columns are derived again from the values (by `columns`, cjk_columns unless told)."""
    if not rows:
        return
    if deletes_by_rowid(conn, table):
        conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(r[0],) for r in rows])
        return
    columns = columns or cjk_columns
    cols = TABLES[table][0]
    marks = ", ".join("?" * (len(rows[0]) + 2))
    conn.executemany(f"INSERT INTO {table}({table}, rowid, {cols}, cjk_bi, cjk_uni) VALUES('delete', {marks})",
                     [(*r, *columns("\n".join(r[1:]))) for r in rows])


def _rows(conn, table: str):
    """(rowid, text columns…, cjk_bi, cjk_uni) of every row `table` should hold, in the current form."""
    for row in conn.execute(TABLES[table][1]):
        if table == "chunks_fts":  # notes are indexed without zmem's marker lines (prepare_file)
            row = (row[0], without_markers(row[1]), *row[2:])
        yield (*row, *cjk_columns("\n".join(row[1:])))


def rebuild_tables(conn, tables=None) -> dict[str, int]:
    """Make full-text tables anew from the rows they index (the caller holds the write transaction):
    with contentless_delete=1 where SQLite has it, in the current form (history and session rows
    then record it: fts_form). Returns the rows written per table."""
    out = {}
    option = ", contentless_delete=1" if can_delete_by_rowid() else ""
    for table in tables or TABLES:
        cols, _, rank = TABLES[table]
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5({cols}, cjk_bi, cjk_uni, content=''{option}, "
                     f"tokenize='{TOKENIZER}')")
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('rank', '{rank}')")
        marks = ", ".join("?" * (cols.count(",") + 4))
        cur = conn.executemany(f"INSERT INTO {table}(rowid, {cols}, cjk_bi, cjk_uni) VALUES({marks})",
                               _rows(conn, table))
        out[table] = max(cur.rowcount, 0)
    for fts, _, source, _ in _TABLES:
        if fts in out:
            conn.execute(f"UPDATE {source} SET fts_form = ? WHERE fts_form IS NOT ?", (FTS_VERSION, FTS_VERSION))
    return out


def check_tables(conn, passed: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(table, what is wrong) for each full-text table that does not hold exactly the tokens its
    rows give in the current form: tokens a delete left behind (given other values than were
    indexed: an older zmem process, another Python's word boundaries), rows in an older form, or an
    index SQLite cannot read. FTS5's own integrity-check cannot see the first two in a contentless
    table, so a table that deletes by value is compared, term by term, with one built afresh from
    its rows (in temp: nothing in the index is written; ~0.1 ms a row). A table that deletes by
    rowid (contentless_delete=1) cannot keep a deleted row's tokens: FTS5's integrity-check (its
    structure, ~6 µs a row; `PRAGMA integrity_check(table)`) and the rows' recorded form (fts_form)
    are enough there. passed: table -> stored_digest of a state whose integrity-check found nothing
    (made by this function, kept by the caller); a table whose bytes are those still is not checked
    again (~25 ms to hash instead of ~6 µs a row), and the tables that pass are recorded in it."""
    from zmem.store import db
    problems = []
    for table, (cols, _, _) in TABLES.items():
        try:
            if deletes_by_rowid(conn, table):
                digest = stored_digest(conn, table) if passed is not None else None
                if digest is None or passed.get(table) != digest:
                    # FTS5's integrity-check through the pragma: it reads only, so a read-only index and a
                    # writer busy meanwhile are no problem ('integrity-check' is an INSERT)
                    found = [msg for (msg,) in conn.execute(f"PRAGMA integrity_check({table})")]
                    if found != ["ok"]:
                        problems.append((table, f"SQLite cannot read it ({'; '.join(found[:3])})"))
                        continue
                    if digest is not None:
                        passed[table] = digest
                older = _rows_in_older_form(conn, table)
                if older:
                    problems.append((table, f"{older} row{'s' * (older != 1)} indexed in an older form"))
                continue
            differ = _differing_terms(conn, table, cols)
        except db.DatabaseError as e:
            problems.append((table, f"SQLite cannot read it ({e})"))
            continue
        if differ:
            problems.append((table, f"{differ} term{'s' * (differ != 1)} differ from what its rows give"))
    return problems


def stored_digest(conn, table: str) -> str:
    """A SHA-256 of everything FTS5 stores for table (its definition and every row of its shadow
    tables) and of the SQLite version reading it: what FTS5's integrity-check reads, so equal
    digests get the same verdict."""
    import hashlib
    from zmem.store import db
    h = hashlib.sha256(db.sqlite_version().encode())
    for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND (name = ? OR name "
                                  "LIKE ? ESCAPE '\\') ORDER BY name", (table, table.replace("_", "\\_") + "\\_%")):
        h.update(f"\0{name}\0{sql}\0".encode())
        if name == f"{table}_data":  # the index itself: megabytes of blocks, hashed as they are
            for rowid, block in conn.execute(f"SELECT id, block FROM {name}"):
                h.update(f"{rowid} {len(block) if block is not None else -1} ".encode())
                h.update(block or b"")
        elif sql and not sql.startswith("CREATE VIRTUAL"):  # a row per line, every value quoted
            row = " || ' ' || ".join(f"quote({c[1]})" for c in conn.execute(f"PRAGMA table_info({name})"))
            (rows,) = conn.execute(f"SELECT group_concat({row}, char(10)) FROM {name}").fetchone()
            h.update((rows or "").encode())
    return h.hexdigest()


def _rows_in_older_form(conn, table: str) -> int:
    """Rows of table's source indexed in an older form than cjk_columns' (history and session rows
    record theirs; notes' rows are indexed again when the form changes: the indexer's fingerprint)."""
    source = next((src for fts, _, src, _ in _TABLES if fts == table), None)
    if source is None:
        return 0
    return conn.execute(f"SELECT count(*) FROM {source} WHERE fts_form IS NOT ?", (FTS_VERSION,)).fetchone()[0]


def _differing_terms(conn, table: str, cols: str) -> int:
    marks = ", ".join("?" * (cols.count(",") + 4))
    try:
        conn.execute(f"CREATE VIRTUAL TABLE temp.zmem_fresh USING fts5({cols}, cjk_bi, cjk_uni, content='', "
                     f"tokenize='{TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE temp.zmem_fresh_v USING fts5vocab(temp, zmem_fresh, col)")
        conn.execute(f"CREATE VIRTUAL TABLE temp.zmem_live_v USING fts5vocab(main, {table}, col)")
        conn.executemany(f"INSERT INTO temp.zmem_fresh(rowid, {cols}, cjk_bi, cjk_uni) VALUES({marks})",
                         _rows(conn, table))
        return conn.execute("SELECT (SELECT count(*) FROM (SELECT * FROM temp.zmem_live_v EXCEPT "
                            "SELECT * FROM temp.zmem_fresh_v)) + (SELECT count(*) FROM (SELECT * FROM "
                            "temp.zmem_fresh_v EXCEPT SELECT * FROM temp.zmem_live_v))").fetchone()[0]
    finally:
        for name in ("zmem_live_v", "zmem_fresh_v", "zmem_fresh"):
            conn.execute(f"DROP TABLE IF EXISTS temp.{name}")


def _marked_slices(conn) -> dict[int, tuple[int, str, str, str]]:
    """History chunks that are slices of one long line (several chunks citing that one line, in
    insertion order): id -> (id, text, heading, the text with "…" where the line goes on)."""
    groups: dict[tuple[str, int], list[tuple[int, str, str]]] = {}
    for i, blob, line, text, heading in conn.execute(
            "SELECT id, blob, start_line, text, heading FROM hist_chunks WHERE (blob, start_line) IN "
            "(SELECT blob, start_line FROM hist_chunks WHERE start_line = end_line GROUP BY blob, start_line "
            "HAVING count(*) > 1) ORDER BY blob, start_line, id"):
        groups.setdefault((blob, line), []).append((i, text, heading))
    out = {}
    for slices in groups.values():
        for n, (i, text, heading) in enumerate(slices):
            out[i] = (i, text, heading, (CUT if n else "") + text + (CUT if n < len(slices) - 1 else ""))
    return out


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _may_hold_cjk(text: str) -> bool:
    """Whether text has a character at or above U+3040, where CJK_CLASS begins: a query without one
    needs no CJK pattern (compiling one costs ~3 ms of a fresh recall)."""
    return bool(text) and max(text) >= "\u3040"


def cjk_runs(text: str) -> list[str]:
    """The runs of CJK characters in text (_CJK_RUN.findall)."""
    return _CJK_RUN.findall(text) if _may_hold_cjk(text) else []


def without_cjk(text: str) -> str:
    """text with each run of CJK characters replaced by a space."""
    return _CJK_RUN.sub(" ", text) if _may_hold_cjk(text) else text


# English clitics: `Sofia's` is searched as `sofia` (the tokenizer makes the text's `Sofia's` `sofia` `s`, so the
# quoted word would be the phrase `sofia s` and miss every note that writes the name alone), `I'm` as `i`, a stopword
_CLITIC = re.compile(r"(?<=\w)(?:['’](?:s|m|re|ve|ll|d)|n['’]t)$")
_POSSESSIVE = re.compile(r"(?<=\w)['’]s$")
_NEGATIONS = {"can't": "can", "won't": "will", "shan't": "shall", "ain't": "is"}


def query_terms(query: str) -> list[str]:
    """Lower-cased non-CJK words of a query, English clitics cut off (`sofia's` -> `sofia`, `don't` ->
    `do`), without stopwords (the words as written if nothing else is left)."""
    text = without_cjk(nfc(query))
    words = [w.lower() for w in _WORD.findall(text)]
    cut = [_NEGATIONS.get(w.replace("’", "'")) or _CLITIC.sub("", w) for w in words]
    kept = [w for w in cut if w not in STOPWORDS]
    return list(dict.fromkeys(kept or words))


def possessives(query: str) -> list[str]:
    """The query's words written with a possessive `'s`: searched as written too (the phrase `sofia s`), so a
    note writing `Sofia's` ranks above one writing `Sofia` alone, which query_terms' `sofia` finds."""
    return [w.lower() for w in _WORD.findall(without_cjk(query)) if _POSSESSIVE.search(w)]


def build_match(query: str, leave_out: frozenset[str] = frozenset()) -> str | None:
    """An FTS5 MATCH expression that searches for the query's words; never a syntax error.

    Every term is quoted, so operators (AND, OR, NOT, NEAR), `*`, `-`, `:` and parentheses are
    searched as text rather than parsed. Terms are OR-ed and bm25 ranks chunks that match more
    of them higher. "Quoted phrases" in the query are kept as phrases. leave_out: words of
    query_terms not to search (common_terms).
    """
    query = nfc(query)
    parts: list[str] = []
    for phrase in _PHRASE.findall(query):
        words = [w for w in _WORD.findall(without_cjk(phrase))]
        if len(words) > 1:
            parts.append(_quote(" ".join(words)))
    parts += [_quote(w) for w in possessives(query)]
    for w in query_terms(query):
        if w not in leave_out:
            parts.append(_quote(w))
    for run in cjk_runs(query):
        if len(run) == 1:
            parts.append("cjk_uni : " + _quote(run))
        else:
            grams = dict.fromkeys(run[i:i + 2] for i in range(len(run) - 1))
            parts.append("cjk_bi : (" + " OR ".join(_quote(g) for g in grams) + ")")
    if not parts:
        return None
    return " OR ".join(dict.fromkeys(parts))


def word_tokens(query: str, leave_out: frozenset[str] = frozenset()) -> list[str] | None:
    """The token of each phrase of build_match(query, leave_out), in the expression's order, when
    every phrase is one word of one token; else None: a quoted phrase of several words, a CJK run, a
    word the tokenizer splits (`o'brien`) or a possessive (`Sofia's`, searched as written too) makes
    phrases the bm25 replay (store.impact) leaves to FTS5."""
    query = nfc(query)
    if any(len(_WORD.findall(without_cjk(phrase))) > 1 for phrase in _PHRASE.findall(query)) or cjk_runs(query) \
            or possessives(query):
        return None
    words = [w for w in query_terms(query) if w not in leave_out]
    tokens = fts_tokens(words)
    if not words or any(len(t) != 1 for t in tokens):
        return None
    return [t[0] for t in tokens]


def common_terms(conn, query: str) -> frozenset[str]:
    """The words of query_terms in at least half of the chunks. FTS5's bm25 gives such a word the
    floor weight 1e-6 (its idf would be <= 0), so it cannot lift a chunk above one holding a rarer
    query word; scoring the chunks it is in is most of a recall's time (~2 µs each). Each word's
    chunks are counted up to half of them (~40 ns each)."""
    words = query_terms(query)
    if len(words) < 2:
        return frozenset()
    half = (conn.execute("SELECT count(*) FROM chunks").fetchone()[0] + 1) // 2
    tokens = fts_tokens(words)
    if all(len(t) == 1 for t in tokens):  # a one-token word's matching chunks: its document frequency
        from zmem.store import impact
        dfs = impact.document_frequencies(conn, [t[0] for t in tokens])
        if dfs is not None:
            return frozenset(w for w, df in zip(words, dfs) if df >= half)
    count = "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)"
    return frozenset(w for w in words if conn.execute(count, (_quote(w), half)).fetchone()[0] >= half)


# ----------------------------------------------------------------------------- matching lines as FTS does


def fold(text: str) -> str:
    """Lower case without diacritics (NFKD, combining marks dropped): how snippets compare words
    (unicode61 remove_diacritics 2 folds the same accents, `aniversário` = `aniversario`)."""
    if text.isascii():
        return text.lower()
    return _MARK.sub("", unicodedata.normalize("NFKD", text.lower()))


TOKENIZER = "porter unicode61 remove_diacritics 2"  # the FTS tables' tokenizer (migrations.py)
_tokens: dict[str, tuple[str, ...]] = {}
_tokens_lock = allocate_lock()
_tokens_conn = None


def fts_tokens(words: list[str]) -> list[tuple[str, ...]]:
    """Each word's tokens as the index's tokenizer makes them (`recommendations` -> `recommend`,
    `Tomás` -> `toma`, `don't` -> `don`, `t`), asked of SQLite itself through an in-memory FTS5
    table and fts5vocab (~0.6 ms once per process, then ~0.06 ms per new query)."""
    global _tokens_conn
    with _tokens_lock:
        missing = [w for w in dict.fromkeys(words) if w not in _tokens]
        if missing:
            if _tokens_conn is None:
                from zmem.store import db
                conn = db.sqlite.connect(":memory:", isolation_level=None, check_same_thread=False)
                conn.execute(f"CREATE VIRTUAL TABLE w USING fts5(x, tokenize='{TOKENIZER}')")
                conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, instance)")
                _tokens_conn = conn
            if len(_tokens) > 10_000:  # a long-lived process (the MCP server): bounded
                _tokens.clear()
            found: dict[int, list[tuple[int, str]]] = {}
            _tokens_conn.execute("BEGIN")
            try:
                _tokens_conn.executemany("INSERT INTO w(rowid, x) VALUES(?, ?)", enumerate(missing))
                for doc, term, offset in _tokens_conn.execute("SELECT doc, term, offset FROM v"):
                    found.setdefault(doc, []).append((offset, term))
            finally:
                _tokens_conn.execute("ROLLBACK")
            for i, w in enumerate(missing):
                _tokens[w] = tuple(term for _, term in sorted(found.get(i, ())))
        return [_tokens[w] for w in words]


# CJK_CLASS as (first, last) character pairs: one character is tested without compiling CJK_RE (~3 ms)
_CJK_RANGES = tuple((CJK_CLASS[i], CJK_CLASS[i + 2]) for i in range(0, len(CJK_CLASS), 3))


def word_start(low: str, key: str) -> int:
    """The first place key starts a word of low (after anything but a letter or digit, or after a
    CJK character: unicode61 keeps `买了iphone` one token, cjk_columns indexes its `iphone`), or -1."""
    at = low.find(key)
    while at > 0:
        before = low[at - 1]
        if not before.isalnum() or (before >= "\u3040" and any(a <= before <= b for a, b in _CJK_RANGES)):
            return at
        at = low.find(key, at + 1)
    return at


def match_keys(query: str) -> list[str]:
    """Per query word, what a line must hold (in fold()ed text, at the start of a word) to match it
    as FTS does: the word's longest token (stemmed, accents folded), less a final `e` or `i` that
    porter adds or changes (`hoping` -> `hope`, `happy` -> `happi`), so every form FTS matches has
    it: `recommendations` and `recommended` share `recommend`."""
    terms = query_terms(query)
    keys = []
    for term, tokens in zip(terms, fts_tokens(terms)):
        key = fold(max(tokens, key=len) if tokens else term)
        if len(key) > 3 and key[-1] in "ei":
            key = key[:-1]
        if key:
            keys.append(key)
    return list(dict.fromkeys(keys))


def query_grams(query: str) -> list[str]:
    """The CJK bigrams of a query (a one-character run: that character), as build_match searches them."""
    return list(dict.fromkeys(run[i:i + 2] for run in cjk_runs(nfc(query))
                              for i in range(max(1, len(run) - 1))))
