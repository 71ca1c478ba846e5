"""Building the history index (`zmem index --history`): the first-parent chain of commits, and each
memory file version's chunks, windows and facts, parsed once per blob. Part of every catch-up once
history is on (indexer), so it sits below the history queries (history)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zmem.store import db
from zmem.text.chunking import chunk_text, chunk_windows, text_hash
from zmem.store.fts import FTS_VERSION, cjk_columns, convert_old_form_rows
from zmem.text.markdown import day_from_path, decode_note
from zmem.text.retain import parse_facts
from zmem.workspace.core import Workspace

if TYPE_CHECKING:
    from zmem.git.repo import Repo

HISTORY_META = "history"  # "on" once `zmem index --history` (or an as-of query) built it


def _commits(n: int) -> str:
    return f"{n} commit" + ("" if n == 1 else "s")


@dataclass
class HistoryUpdate:
    commits: int = 0        # commits added to the chain
    blobs: int = 0          # file contents parsed
    rewound: int = 0        # commits dropped because HEAD moved off them (checkout, reset, rebase)
    rewritten: bool = False  # ... and the old tip is on no branch or tag any more (not a mere checkout)
    merged: bool = False     # ... or the old tip is in HEAD's history off its first-parent line (a sync's merge)
    shallow: bool = False
    seconds: float = 0.0

    def rewound_note(self) -> str | None:
        """What to tell the user about the commits dropped from the history index."""
        if not self.rewound or self.merged:  # merged in: what `zmem sync` does, documented as-of behaviour
            return None
        if self.rewritten:
            return (f"history was rewritten: {_commits(self.rewound)} no longer on any branch or tag "
                    f"{'was' if self.rewound == 1 else 'were'} dropped from the history index")
        return (f"HEAD moved off {_commits(self.rewound)} of the history index (it follows HEAD's first-parent "
                f"chain); {'it is' if self.rewound == 1 else 'they are'} still on another branch or tag and "
                f"{'comes' if self.rewound == 1 else 'come'} back when HEAD does")


def enabled(conn) -> bool:
    return db.get_meta(conn, HISTORY_META) == "on"


def update_history(ws: Workspace, repo: Repo, conn, *, enable: bool = False, progress=None) -> HistoryUpdate:
    """Extend the chain to HEAD (building it all on first use). The caller holds the index lock
    and no open transaction."""
    t0 = time.perf_counter()
    out = HistoryUpdate(shallow=repo.is_shallow())
    if not (enable or enabled(conn)):
        return out
    known = dict(conn.execute("SELECT sha, seq FROM hist_commits"))
    chain = repo.first_parent_chain(set(known))
    fork = known.get(chain[-1].sha) if chain and chain[-1].sha in known else 0
    new = [c for c in reversed(chain) if c.sha not in known]
    tip = conn.execute("SELECT max(seq) FROM hist_commits").fetchone()[0] or 0
    with db.write_transaction(conn):
        convert_old_form_rows(conn)  # rows an older zmem process wrote in the old form
        if tip > fork:  # HEAD moved off the recorded chain: drop what is no longer on it
            out.rewound = tip - fork
            old_tip = conn.execute("SELECT sha FROM hist_commits WHERE seq = ?", (tip,)).fetchone()[0]
            out.rewritten = not repo.reachable_from_refs(old_tip)
            out.merged = bool(chain) and repo.is_ancestor(old_tip, chain[0].sha)
            conn.execute("DELETE FROM hist_versions WHERE from_seq > ?", (fork,))
            conn.execute("UPDATE hist_versions SET to_seq = NULL WHERE to_seq > ?", (fork,))
            conn.execute("DELETE FROM hist_commits WHERE seq > ?", (fork,))
        parsed = {b for b, in conn.execute("SELECT blob FROM hist_blobs")}
        seq = fork
        for n, c in enumerate(new, 1):
            seq += 1
            conn.execute("INSERT INTO hist_commits(seq, sha, time, author, summary) VALUES(?,?,?,?,?)",
                         (seq, c.sha, c.time, c.author, c.summary))
            parent = c.parent if seq > 1 else None
            for rel, blob in repo.tree_changes(parent, c.sha):
                if not ws.is_memory_path(rel):
                    continue
                conn.execute("UPDATE hist_versions SET to_seq = ? WHERE path = ? AND to_seq IS NULL", (seq, rel))
                if blob is None:
                    continue
                conn.execute("INSERT INTO hist_versions(path, blob, from_seq, to_seq) VALUES(?,?,?,NULL)",
                             (rel, blob, seq))
                if blob not in parsed:
                    add_blob(ws, conn, rel, blob, repo.read_blob(blob))
                    parsed.add(blob)
                    out.blobs += 1
            if progress:
                progress(n, len(new))
        db.set_meta(conn, HISTORY_META, "on")
    out.commits = len(new)
    out.seconds = time.perf_counter() - t0
    return out


def add_blob(ws: Workspace, conn, rel: str, blob: str, data: bytes) -> None:
    c = ws.config
    text, _ = decode_note(rel, data, c.max_file_mb)
    lines = (text.count("\n") + (0 if text.endswith("\n") else 1)) if text else 0
    conn.execute("INSERT OR IGNORE INTO hist_blobs(blob, lines) VALUES(?, ?)", (blob, lines))
    if not text:
        return
    for ch in chunk_text(text, c.chunk_tokens, c.chunk_overlap):
        cur = conn.execute("INSERT INTO hist_chunks(blob, start_line, end_line, heading, text, fts_form) "
                           "VALUES(?,?,?,?,?,?)", (blob, ch.start_line, ch.end_line, ch.heading, ch.text, FTS_VERSION))
        conn.execute("INSERT INTO hist_fts(rowid, text, heading, cjk_bi, cjk_uni) VALUES(?,?,?,?,?)",
                     (cur.lastrowid, ch.text, ch.heading, *cjk_columns(ch.text + "\n" + ch.heading)))
        insert_windows(conn, [(cur.lastrowid, ch.text, ch.heading, ch.start_line, ch.fence)])
    facts, _ = parse_facts(text, rel, day_from_path(rel))
    conn.executemany("INSERT INTO hist_facts(blob, start_line, end_line, kind, confidence, text, names) "
                     "VALUES(?,?,?,?,?,?,?)",
                     [(blob, f.start_line, f.end_line, f.kind, f.confidence, f.text, "\t".join(f.entities))
                      for f in facts])


def insert_windows(conn, chunks) -> None:
    """The vector windows of history chunks (id, text, heading, start line, fence), each with the hash of
    the text it would embed: the key to its vector in the embedding cache."""
    conn.executemany("INSERT INTO hist_windows(chunk_id, start_line, end_line, hash) VALUES(?,?,?,?)",
                     [(cid, a, b, text_hash(t)) for row in chunks for cid, a, b, t in chunk_windows(*row)])


def with_fences(conn, rows) -> list[tuple[int, str, str, int, str]]:
    """History chunks (id, text, heading, start line, blob) as insert_windows takes them: with the code
    fence each starts inside (chunking.fences_at over its blob's chunks)."""
    from zmem.text.chunking import fences_at
    fences: dict[str, dict[int, str]] = {}
    out = []
    for cid, text, heading, start, blob in rows:
        if blob not in fences:
            fences[blob] = fences_at(conn.execute("SELECT start_line, text FROM hist_chunks WHERE blob = ?",
                                                  (blob,)).fetchall())
        out.append((cid, text, heading, start, fences[blob].get(start, "")))
    return out
