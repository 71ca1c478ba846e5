"""Exact top-k BM25 over chunks_fts without scoring every matching chunk: FTS5's bm25 replayed in
Python (the same double operations in the same order, so the same float scores) and a threshold
algorithm (Fagin's TA) over each common word's chunks sorted by that word's contribution.

FTS5 ranks every chunk holding any query word (~1 µs each: 13-121 ms for common words at 10k
files). Here the chunks of the rarer words are all scored, and a common word's chunks are read best
first, in batches, until the k-th best score beats the most an unread chunk could still reach; the
answer is then FTS5's `ORDER BY rank LIMIT k` exactly: the same rowids, the same float scores,
equal scores by rowid. Anything this cannot answer provably (phrases, CJK grams, a word of several
tokens, filters, no common word, too many rare chunks) returns None, and the caller asks FTS5.

What it reads (per index state, kept in memory: a long-lived process reuses it across recalls):
a word's chunks and weighted counts from fts5vocab (instance), the chunk lengths from FTS5's own
docsize table, the row count and average length from its averages record. The state is keyed by
the index file's id (meta index_id) and what any write of the notes' rows changes: the chunk id
sequence (every insert), FTS5's structure record (its segments and their tombstone counts: every
insert or delete; a delete from a contentless_delete table leaves the averages record as it was)
and the averages record, read in one read transaction with the answer, so a write in between can
never mix two states. A catch-up that only re-stats files keeps the state (and the lists). An index
without an id (an older one opened read-only) keys on the snapshot time every catch-up records.

A fresh process, which leaves its first searches of a state to FTS5, asks a watcher holding lists
instead (top_k's ask): `zmem watch` / `zmem mcp` answer from theirs for exactly the same key
(served_top_k) and make the missing ones after answering (build; zmem.index.fsmonitor)."""
from __future__ import annotations

import heapq
import math
import re
from _thread import allocate_lock

K1, B = 1.2, 0.75  # FTS5's bm25 constants
LIST_DF = 1000  # a word in at least this many chunks is read best first; rarer words' chunks are all scored
SCAN_MAX = 3000  # more rare-word chunks than this to score: FTS5 is as fast
BATCH = 64  # list entries read per word per round
MARGIN = 1e-9  # relative: the k-th score must beat the bound by more than the rounding of either
MAX_ENTRIES = 500_000  # list entries kept per index state (~50 MB); a word in more chunks: FTS5 answers
# Searches of each index state a process leaves to FTS5 before reading lists: making a word's list
# costs about what FTS5 spends on one search of it, so a fresh `zmem recall` (one or two searches)
# never pays for lists; a long-lived process (`zmem mcp`, `zmem watch`) pays once per state and word.
FTS5_FIRST = 2
ENABLED = True  # tests turn it off to compare with FTS5 alone


def varints(blob: bytes) -> list[int]:
    """SQLite varints (as FTS5 writes its averages and docsize records)."""
    out, i = [], 0
    while i < len(blob):
        v = 0
        for j in range(9):
            c = blob[i]
            i += 1
            if j == 8:
                v = (v << 8) | c
                break
            v = (v << 7) | (c & 0x7F)
            if not c & 0x80:
                break
        out.append(v)
    return out


_HIGH = bytes(b if b >= 0x80 else 0 for b in range(256))  # the first bytes of varints of two or more bytes
_LONG = re.compile(rb"[\x80-\xff]{2}")  # a varint of three or more bytes


def _length(sz: bytes) -> int:
    """The sum of a docsize record's varints (the chunk's tokens in all columns), without decoding
    each: a one-byte varint is its byte, a two-byte one (c, d) is 128 (c - 128) + d."""
    if sz.isascii():
        return sum(sz)
    if _LONG.search(sz):
        return sum(varints(sz))
    high = sz.translate(_HIGH)
    return sum(sz) + 127 * sum(high) - 16384 * (len(sz) - high.count(0))


def idf(n_row: int, df: int) -> float:
    """FTS5's idf: log((N - n + 0.5) / (n + 0.5)), floored at 1e-6."""
    v = math.log((n_row - df + 0.5) / (df + 0.5))
    return 1e-6 if v <= 0.0 else v


class State:
    """What the scores of one index state need, read as queries need it. Memory: ~100 bytes per
    list entry (a chunk holding a listed word), at most MAX_ENTRIES of them, and ~85 bytes per chunk
    for the lengths."""

    def __init__(self, conn, key: tuple, n_row: int, avgdl: float):
        self.conn, self.key, self.n_row, self.avgdl = conn, key, n_row, avgdl
        self.dfs: dict[str, int] = {}
        self.gs: dict[str, dict[int, float]] = {}
        self.ordered: dict[str, list[int]] = {}
        self.entries = 0  # in gs
        self.searches = 0
        self._lengths: dict[int, int] | None = None

    def df(self, token: str) -> int:
        if token not in self.dfs:
            row = self.conn.execute("SELECT doc FROM temp.zmem_impact_row WHERE term = ?", (token,)).fetchone()
            self.dfs[token] = row[0] if row else 0
        return self.dfs[token]

    def freq(self, token: str) -> dict[int, float]:
        """chunk -> the token's weighted count there (text and cjk_bi 1.0, heading and cjk_uni 0.5)."""
        # summed in SQLite, a row per chunk: halves and ones add up exactly in any order
        f = dict(self.conn.execute(
            "SELECT doc, sum(CASE col WHEN 'heading' THEN 0.5 WHEN 'cjk_uni' THEN 0.5 ELSE 1.0 END) "
            "FROM temp.zmem_impact_instance WHERE term = ? GROUP BY doc ORDER BY doc", (token,)))
        self.dfs[token] = len(f)
        return f

    def lengths(self) -> dict[int, int]:
        """chunk -> its length in tokens (all columns), from FTS5's docsize table."""
        if self._lengths is None:
            self._lengths = {doc: _length(sz) for doc, sz in self.conn.execute("SELECT id, sz FROM chunks_fts_docsize")}
        return self._lengths

    def g(self, f: float, d: int) -> float:
        return (f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / self.avgdl))

    def contributions(self, token: str) -> dict[int, float]:
        """chunk -> token's bm25 term before idf there, as FTS5 computes it (the same double)."""
        if token not in self.gs:
            if self.entries + self.df(token) > MAX_ENTRIES:  # the lists kept so far make room
                self.gs.clear()
                self.ordered.clear()
                self.entries = 0
            lengths = self.lengths()
            self.gs[token] = gs = {doc: self.g(v, lengths[doc]) for doc, v in self.freq(token).items()}
            self.entries += len(gs)
        return self.gs[token]

    def ordered_list(self, token: str) -> list[int]:
        """The chunks holding token, by contribution best first (equal ones by chunk id)."""
        if token not in self.ordered:
            gs = self.contributions(token)  # in chunk id order (freq's): the stable sort keeps equal ones so
            # floats compared, not (-g, id) tuples: a sort holds the GIL throughout, and a watcher's other
            # threads wait for it (vouching: ~200 ms for a word in 80k chunks with tuples)
            self.ordered[token] = sorted(gs, key=gs.__getitem__, reverse=True)
        return self.ordered[token]

    def has_lists(self, tokens: list[str]) -> bool:
        """Whether a search of tokens would read no list it does not hold yet (nor the lengths)."""
        return self._lengths is not None and all(
            t in self.ordered for t in tokens if self.df(t) >= LIST_DF)


_states: dict[str, State] = {}
_lock = allocate_lock()


def _state(conn) -> State | None:
    """The state of the index conn reads now (the caller holds a read transaction), or None when
    chunks_fts is not there."""
    row = conn.execute("SELECT coalesce((SELECT value FROM meta WHERE key = 'index_id'), "
                       "(SELECT value FROM meta WHERE key = 'snapshot_ns')), "
                       "(SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), "
                       "(SELECT block FROM chunks_fts_data WHERE id = 1), "
                       "(SELECT block FROM chunks_fts_data WHERE id = 10)").fetchone()
    if row is None or row[2] is None or row[3] is None:
        return None
    avg = varints(row[2])
    if not avg or avg[0] <= 0:
        return None
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    key = tuple(row)
    state = _states.get(path)
    if state is None or state.key != key or state.conn is not conn:
        from zmem.store import db
        try:
            for name in ("instance", "row"):
                conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.zmem_impact_{name} USING "
                             f"fts5vocab(main, chunks_fts, {name})")
        except db.Error:  # no temporary tables here: FTS5 answers
            return None
        if state is not None and state.key == key and path:
            state.conn = conn  # another connection to the same index file in the same state: the lists hold
            return state
        if len(_states) >= 4:  # indexes this process read before (tests, a library user): let them go
            _states.clear()
        state = _states[path] = State(conn, key, avg[0], float(sum(avg[1:])) / float(avg[0]))
    return state


class _reading:
    """`with _reading(conn) as state:` this process's State of the index conn reads now (None when
    there is none), with _lock held, inside one read transaction (begun here unless conn is in one):
    the state's key and every read after it see one snapshot."""

    def __init__(self, conn):
        self.conn = conn
        self.began = False

    def __enter__(self) -> State | None:
        _lock.acquire()
        try:
            self.began = not self.conn.in_transaction
            if self.began:
                self.conn.execute("BEGIN")
            return _state(self.conn)
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc) -> None:
        try:
            if self.began:
                self.began = False
                self.conn.execute("COMMIT")
        finally:
            _lock.release()


def state_key(conn) -> str | None:
    """The key_text of the index state conn reads now (in a read transaction of its own)."""
    with _reading(conn) as state:
        return None if state is None else key_text(state.key)


def key_text(key: tuple) -> str:
    """A state's key as one word of ASCII (what a fresh process sends a watcher: zmem.index.fsmonitor)."""
    return f"{key[0]}.{key[1]}.{key[2].hex()}.{key[3].hex()}"


def document_frequencies(conn, tokens: list[str]) -> list[int] | None:
    """How many chunks hold each token (FTS5's own count), or None when the index cannot tell."""
    if not ENABLED or not tokens:
        return None
    with _reading(conn) as state:
        return None if state is None else [state.df(t) for t in tokens]


def top_k(conn, tokens: list[str], k: int, ask=None) -> list[tuple[int, float]] | None:
    """FTS5's `SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH '"w1" OR "w2" …' ORDER BY
    rank LIMIT k` for words of one token each (tokens: the words' tokens in the expression's
    order), or None when this cannot answer it cheaply (the caller asks FTS5). While this process
    leaves a state's first searches to FTS5, ask(key_text, tokens, k), if given, is asked when lists
    could answer: another process's answer for exactly this index state (a watcher's,
    zmem.index.fsmonitor.ranked) or None."""
    if not ENABLED or not tokens or k <= 0:
        return None
    with _reading(conn) as state:
        if state is None:
            return None
        state.searches += 1
        if state.searches > FTS5_FIRST:
            return _top_k(state, tokens, k)
        return ask(key_text(state.key), tokens, k) if ask is not None and _listable(state, tokens) else None


def _listable(state: State, tokens: list[str]) -> bool:
    """Whether _top_k would read lists for these tokens rather than return None at once."""
    dfs = dict(zip(tokens, (state.df(t) for t in tokens)))
    return (any(df >= LIST_DF for df in dfs.values()) and sum(df for df in dfs.values() if df < LIST_DF) <= SCAN_MAX
            and sum(dfs.values()) <= MAX_ENTRIES)


def served_top_k(conn, key: str, tokens: list[str], k: int) -> tuple[list[tuple[int, float]] | None, bool]:
    """(A watcher's side.) (top_k's rows for the index state whose key_text is key, or None; whether
    the lists to answer it are missing): answered only from lists already made, read in one read
    transaction with the state's key; `build` makes the missing ones."""
    with _reading(conn) as state:
        if state is None or key_text(state.key) != key or not _listable(state, tokens):
            return None, False
        if not state.has_lists(tokens):
            return None, True
        return _top_k(state, tokens, k), False


def build(conn, tokens: list[str], evict: bool = False) -> str | None:
    """(A watcher's side.) Make the lists of tokens (the common ones) and the lengths for the index
    state conn reads now; its key_text. evict: let other lists go to make room for these, else make
    only those that fit, in the order given."""
    with _reading(conn) as state:
        if state is None:
            return None
        state.lengths()
        for t in tokens:
            df = state.df(t)
            if LIST_DF <= df and (evict or t in state.gs or state.entries + df <= MAX_ENTRIES):
                state.ordered_list(t)
        return key_text(state.key)


def _top_k(state: State, tokens: list[str], k: int) -> list[tuple[int, float]] | None:
    dfs = [state.df(t) for t in tokens]
    listed = [i for i, df in enumerate(dfs) if df >= LIST_DF]
    if not listed:
        return None  # no common word: FTS5 ranks few chunks
    if sum({t: df for t, df in zip(tokens, dfs) if df < LIST_DF}.values()) > SCAN_MAX:
        return None
    if sum(dict(zip(tokens, dfs)).values()) > MAX_ENTRIES:
        return None  # more than the lists may hold
    idfs = [idf(state.n_row, df) for df in dfs]
    terms = [(w, state.contributions(t)) for w, t in zip(idfs, tokens)]
    scored: dict[int, float] = {}

    def score(doc: int) -> None:
        """FTS5's bm25 (fts5_aux.c): the sum, in the expression's order, of idf x each word's term
        (`contributions`: the same double). A word the chunk lacks adds idf * 0.0, which leaves the
        sum as it is: skipped."""
        s = 0.0
        for w, gs in terms:
            g = gs.get(doc)
            if g is not None:
                s += w * g
        scored[doc] = -1.0 * s

    for i, (_, gs) in enumerate(terms):
        if i not in listed:
            for doc in gs:
                if doc not in scored:
                    score(doc)
    ordered = {i: state.ordered_list(tokens[i]) for i in listed}
    at = dict.fromkeys(listed, 0)
    while True:
        # the most an unread chunk can score: each listed word's next contribution (0 when its list is read)
        bound = 0.0
        for i in listed:
            if at[i] < len(ordered[i]):
                bound += idfs[i] * terms[i][1][ordered[i][at[i]]]
        if bound == 0.0 or (len(scored) >= k and -heapq.nsmallest(k, scored.values())[-1] > bound * (1 + MARGIN)):
            return heapq.nsmallest(k, scored.items(), key=lambda x: (x[1], x[0]))
        for i in listed:
            for doc in ordered[i][at[i]:at[i] + BATCH]:
                if doc not in scored:
                    score(doc)
            at[i] += BATCH
