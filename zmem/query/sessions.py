"""Agent session transcripts (opt-in): JSONL files, one message per line, indexed for recall.

Only user and assistant text is kept, with obvious secrets redacted; a hit cites the JSONL file and
line (`~/.openclaw/agents/main/sessions/abc.jsonl#L42`). Indexing is incremental by byte offset and
runs once a file has grown by `delta_bytes` or `delta_messages`; recall never waits for it (it
starts a detached `zmem index --sessions` and answers from what is indexed). Sessions are not memory
files: `zmem get` refuses them, and `--scope group` never returns them.

Shapes understood (tests/query/test_session_shapes.py has a line of each):
  OpenClaw   {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "…"}]},
              "timestamp": …}                              (~/.openclaw/agents/<agent>/sessions/*.jsonl)
  Claude Code {"type": "user"|"assistant", "message": {"role": …, "content": "…" or [{"type": "text", …},
              {"type": "tool_use"|"tool_result"|"thinking", …}]}, "timestamp": "…", "isMeta": …}
                                                            (~/.claude/projects/<project>/<session>.jsonl)
  Codex      {"type": "response_item", "payload": {"type": "message", "role": …, "content":
              [{"type": "input_text"|"output_text", "text": "…"}]}, "timestamp": "…"}
                                                            (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)
  plain      {"role": "assistant", "content": "…", "timestamp": "2025-11-27T10:00:00Z"}
Only the text of user and assistant messages is kept: tool calls and results, thinking, system and
developer messages, Claude Code's meta lines (isMeta) and the context an agent injects as a user
message (<environment_context>, <command-name>, <system-reminder>, …) are left out.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from zmem.store import db
from zmem.text.lazyre import LazyPattern
from zmem.store.fts import FTS_VERSION, cjk_columns, convert_old_form_rows, delete_rows
from zmem.workspace.session_settings import DELTA_BYTES, SessionSettings

MAX_MESSAGE_CHARS = 20_000  # longer messages are cut (a pasted log is not a memory)

# Obvious secrets, by shape. Each match is replaced by [REDACTED:<kind>].
_SECRETS = [
    ("openai-key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}")),
    ("aws-key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("google-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("private-key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)")),
    ("bearer", re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9_\-.=]{16,}")),
    ("password", None),  # the assignments below: the name is kept, its value hidden
]

# A secret-looking name: an identifier ending in PASSWORD/PASSWD/PASSPHRASE/PWD/SECRET/TOKEN/API_KEY
# (DB_PASSWORD, ANTHROPIC_API_KEY, "api_key"), or any KEY with a prefix (AWS_SECRET_ACCESS_KEY, private-key).
_SECRET_NAME = (r"(?:[A-Za-z0-9]+[_.-])*(?:password|passwd|passphrase|pwd|senha|contraseña|secret|token|api[_-]?key)"
                r"|(?:[A-Za-z0-9]+[_.-])+key")
# Words after "is" that say something about a password rather than being one.
_NOT_A_SECRET = (r"(?:the|a|an|not|no|too|very|still|now|also|just|set|wrong|correct|incorrect|invalid|valid|required|"
                 r"needed|missing|expired|expiring|changed|reset|done|complete|completed|ready|weak|strong|same|"
                 r"different|saved|stored|shared|empty|long|short|case|here|there|below|above|in|on|at|for|from|"
                 r"that|this|it|what|your|my|our|their|his|her|being|been|probably|written|printed|sent|fine|ok|"
                 r"okay|good|bad|secure|insecure|safe|unsafe|known|unknown|right|easy|hard|simple|stale|old|new)\b")
_SECRET_VALUE = r"""(?!\[REDACTED)(?:"[^"\n]{3,}"|'[^'\n]{3,}'|[^\s,;"'}\]]{3,})"""
# NAME=value, NAME: value, "NAME": "value", NAME is value
_ASSIGNED = LazyPattern(rf"""(?i)(?<![\w.-])({_SECRET_NAME})(?!\w)(["']?)"""
                       rf"(\s*[:=]\s*|\s+(?:is|was)\s+(?!{_NOT_A_SECRET}))({_SECRET_VALUE})")
# "the wifi password for the office is correcthorsebattery": only "password for/to/of/on X is" counts;
# any other word between ("password manager is 1Password", "password policy is strict") makes the
# sentence about something else, so it is left alone. Plain "password is X" is handled by _ASSIGNED.
_PHRASE = LazyPattern(rf"(?i)(?<![\w.-])((?:password|passwd|passphrase|senha|contraseña)\s+(?:for|to|of|on)"
                     rf"(?:\s+[\w'-]+){{1,4}}?"
                     rf"\s+(?:is|was)\s+)(?!{_NOT_A_SECRET}|\[REDACTED)([^\s,;.!?]{{3,}})")


def _hide(m) -> str:
    value = m.group(4)
    quote = value[0] if value[0] in "\"'" else ""
    return f"{m.group(1)}{m.group(2)}{m.group(3)}{quote}[REDACTED:password]{quote}"


def redact(text: str) -> str:
    for kind, pattern in _SECRETS:
        if kind == "password":  # keep "password: " and hide the value
            text = _ASSIGNED.sub(_hide, text)
            text = _PHRASE.sub(lambda m: f"{m.group(1)}[REDACTED:password]", text)
        elif kind == "bearer":
            text = pattern.sub(lambda m: f"{m.group(1)} [REDACTED:{kind}]", text)
        else:
            text = pattern.sub(f"[REDACTED:{kind}]", text)
    return text


def session_files(settings: SessionSettings) -> list[Path]:
    out: set[Path] = set()
    for d in settings.dirs:
        for match in glob.glob(os.path.expanduser(d)):
            p = Path(match)
            if p.is_dir():
                out.update(f for f in p.rglob("*.jsonl") if f.is_file() and not f.is_symlink())
            elif p.suffix == ".jsonl" and p.is_file() and not p.is_symlink():
                out.add(p)
    return sorted(out)


# what an agent writes into a transcript as a user message but the user did not say
_INJECTED = ("<environment_context>", "<user_instructions>", "<command-name>", "<command-message>",
             "<local-command-stdout>", "<local-command-stderr>", "<system-reminder>", "# AGENTS.md instructions")


def message_text(obj) -> tuple[str, str, str | None] | None:
    """(role, text, timestamp) of a user or assistant message line, else None."""
    if not isinstance(obj, dict) or obj.get("isMeta") is True:
        return None
    if isinstance(obj.get("message"), dict):
        msg = obj["message"]
    elif obj.get("type") == "response_item" and isinstance(obj.get("payload"), dict):
        msg = obj["payload"]  # Codex
        if msg.get("type", "message") != "message":
            return None
    else:
        msg = obj
    role = msg.get("role")
    if role not in ("user", "assistant"):
        return None
    content = msg.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(p.get("text", "") for p in content
                         if isinstance(p, dict) and p.get("type") in ("text", "output_text", "input_text")
                         and isinstance(p.get("text"), str))
    else:
        return None
    text = text.strip()
    if not text or text.startswith(_INJECTED):
        return None
    ts = obj.get("timestamp") or msg.get("timestamp")
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        try:  # epoch milliseconds or seconds; a number no clock can show (1e300, NaN) is no timestamp
            ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts / 1000 if ts > 1e11 else ts))
        except (OverflowError, OSError, ValueError):
            ts = None
    return role, redact(text[:MAX_MESSAGE_CHARS]), ts if isinstance(ts, str) else None


@dataclass
class SessionUpdate:
    files: int = 0
    messages: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)  # warnings: files not read, lines not taken
    seconds: float = 0.0


TAIL_QUIET_NS = 2_000_000_000  # a final line without newline is taken once its file is this old
MARK = "session_mark:"  # meta key prefix: per file, what the indexed prefix looked like
# how message_text reads transcripts: an index made by another version reads every file again (2: Claude
# Code's meta lines and injected context left out, Codex rollouts read)
PARSE_VERSION = "2"
PARSE_KEY = "session_parse"
MARK_BYTES = 1024  # the prefix is known by its first and last MARK_BYTES


def pending(conn, settings: SessionSettings) -> list[tuple[Path, int, int]]:
    """(file, indexed offset, size) of files that grew past the thresholds by messages the indexer
    would take now, new files with such messages, and rewritten files (their old messages go)."""
    return [(f, off, size) for f, off, size, _ in _due(conn, settings, force=False)]


def _due(conn, settings: SessionSettings, *, force: bool) -> list[tuple[Path, int, int, bool]]:
    """(file, offset to index from, size, start over) of the files to index now; force: whatever
    is new, ignoring the thresholds."""
    known = dict(conn.execute("SELECT path, offset FROM session_files"))
    marks = {k[len(MARK):]: json.loads(v) for k, v in
             conn.execute("SELECT key, value FROM meta WHERE key GLOB ?", (MARK + "*",))}
    now = time.time_ns()
    out = []
    outdated = bool(known) and db.get_meta(conn, PARSE_KEY) != PARSE_VERSION
    for f in session_files(settings):
        try:
            st = f.stat()
        except OSError:
            continue
        off = known.get(str(f), 0)
        if off and (outdated or _rewritten(f, st, off, marks.get(str(f)))):
            out.append((f, 0, st.st_size, True))  # even with nothing new to take: the old messages go
            continue
        if st.st_size <= off:
            continue
        cap = max(settings.delta_messages, 1)
        new = _new_messages(f, off, st, cap, now)
        if new and (force or off == 0 or st.st_size - off >= settings.delta_bytes or new >= settings.delta_messages):
            out.append((f, off, st.st_size, False))
    return out


def _prefix(fh, end: int) -> tuple[str, bytes]:
    """(digest of the first and last MARK_BYTES before end, the byte at end or b"" at the end of file)."""
    fh.seek(0)
    first = fh.read(min(end, MARK_BYTES))
    fh.seek(max(end - MARK_BYTES, 0))
    last = fh.read(end - max(end - MARK_BYTES, 0))
    nxt = fh.read(1)
    return hashlib.sha1(b"%d\0%s\0%s" % (end, first, last)).hexdigest(), nxt


def _rewritten(path: Path, st: os.stat_result, off: int, mark: list | None) -> bool:
    """Whether the indexed prefix of a file is no longer there: the file is shorter, its first or last
    indexed bytes differ (a new conversation in the same file, a rewrite, an atomic replace with other
    content), or a final line indexed without newline went on. Read only when the stat moved."""
    if st.st_size < off:
        return True
    if mark is None:  # indexed before marks were kept: only a shorter file shows
        return False
    ino, mtime, digest = mark
    if st.st_ino == ino and st.st_mtime_ns == mtime and st.st_size == off:
        return False
    try:
        with open(path, "rb") as fh:
            now, nxt = _prefix(fh, off)
            fh.seek(off - 1)
            last = fh.read(1)
    except OSError:
        return False
    return now != digest or (last != b"\n" and nxt not in (b"", b"\n"))


def _new_messages(path: Path, offset: int, st: os.stat_result, cap: int, now_ns: int) -> int:
    """Lines after offset that the indexer would take now, counting up to cap (cheap: reads at
    most DELTA_BYTES, plus the final line when it has no newline)."""
    try:
        with open(path, "rb") as fh:
            prev = b"\n"
            if offset:
                fh.seek(offset - 1)
                prev = fh.read(1)
            head = fh.read(DELTA_BYTES)
            n = head.count(b"\n") - (prev != b"\n" and head[:1] == b"\n")  # the end of a line taken before
            if n >= cap or head.endswith(b"\n") and offset + len(head) == st.st_size:
                return min(n, cap)
            if offset + len(head) == st.st_size:
                tail = head[head.rfind(b"\n") + 1:]
            else:
                tail = _final_line(fh, offset, st.st_size)
                if st.st_size - len(tail) > offset + len(head):
                    n += 1  # a newline past what was read: at least one line longer than DELTA_BYTES ends there
    except OSError:
        return 0
    return min(n + _takes_final_line(tail, st.st_mtime_ns, now_ns), cap)


def _final_line(fh, offset: int, size: int) -> bytes:
    """What follows the last newline after offset (read backwards, a block at a time)."""
    buf, pos = b"", size
    while pos > offset:
        step = min(65536, pos - offset)
        pos -= step
        fh.seek(pos)
        buf = fh.read(step) + buf
        nl = buf.rfind(b"\n")
        if nl >= 0:
            return buf[nl + 1:]
    return buf


def _takes_final_line(tail: bytes, mtime_ns: int, now_ns: int) -> bool:
    """A last line without newline is taken when it is a complete JSON object (or array) and the
    file has not changed for TAIL_QUIET_NS: a writer in the middle of a line is never cut short."""
    if not tail.strip() or now_ns - mtime_ns < TAIL_QUIET_NS:
        return False
    obj, _ = _parse(tail)
    return isinstance(obj, (dict, list))


def _parse(raw: bytes) -> tuple[object, str | None]:
    """(the JSON value of one line, None) or (None, why it is not one). Never raises for any bytes:
    a line nested deeper than Python's recursion limit is a RecursionError in json, not a ValueError."""
    try:
        return json.loads(raw), None
    except UnicodeDecodeError:
        return None, "not UTF-8"
    except ValueError:
        return None, "not valid JSON"
    except RecursionError:
        return None, "JSON nested too deeply"


def index_sessions(conn, settings: SessionSettings, *, force: bool = False) -> SessionUpdate:
    """Index what the thresholds (or force) say is due; the caller holds the index lock."""
    t0 = time.perf_counter()
    out = SessionUpdate()
    if not settings.enabled:
        return out
    due = _due(conn, settings, force=force)
    present = {str(f) for f in session_files(settings)}
    with db.write_transaction(conn):
        convert_old_form_rows(conn)  # rows an older zmem process wrote: _drop deletes them by value
        for (path,) in conn.execute("SELECT path FROM session_files").fetchall():
            if path not in present:
                _drop(conn, path)
        for f, off, size, restart in due:
            if restart:  # truncated or rewritten: start over
                _drop(conn, str(f))
                off = 0
            try:
                n, end, line_no, bad = _index_file(conn, f, off)
            except OSError as e:
                out.skipped.append(f"{_home(str(f))}: not indexed: {e.strerror or e}")
                continue
            out.skipped.extend(_bad_lines_warnings(f, bad))
            out.files += 1
            out.messages += n
            out.bytes += end - off
        db.set_meta(conn, PARSE_KEY, PARSE_VERSION)
    out.seconds = time.perf_counter() - t0
    return out


def _drop(conn, path: str) -> None:
    rows = conn.execute("SELECT id, text FROM session_messages WHERE path = ?", (path,)).fetchall()
    delete_rows(conn, "session_fts", rows)
    conn.execute("DELETE FROM session_messages WHERE path = ?", (path,))
    conn.execute("DELETE FROM session_files WHERE path = ?", (path,))
    db.set_meta(conn, MARK + path, None)


BAD_LINES_NAMED = 3  # per file and run: lines named one warning each; the rest are counted


def _bad_lines_warnings(path: Path, bad: list[tuple[int, str]]) -> list[str]:
    """One warning per line that was skipped (file:line: why), the first few; then one counting the rest."""
    shown = _home(str(path))
    out = [f"{shown}:{line}: skipped: {why}" for line, why in bad[:BAD_LINES_NAMED]]
    if len(bad) > BAD_LINES_NAMED:
        out.append(f"{shown}: {len(bad) - BAD_LINES_NAMED} more lines skipped (not JSON messages), "
                   f"the last at line {bad[-1][0]}")
    return out


def _index_file(conn, path: Path, offset: int) -> tuple[int, int, int, list[tuple[int, str]]]:
    """Index complete lines from offset (and a final line without newline once it is complete
    and quiet); returns (messages, new offset, lines so far, [(line, why)] of the lines skipped as
    unreadable). A broken line never stops the rest."""
    row = conn.execute("SELECT lines FROM session_files WHERE path = ?", (str(path),)).fetchone()
    line_no = row[0] if row and offset else 0
    n = 0
    bad: list[tuple[int, str]] = []
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())  # before reading: a later append shows as a new mtime
        prev = b"\n"
        if offset:
            fh.seek(offset - 1)
            prev = fh.read(1)
        data = fh.read()
        end = data.rfind(b"\n") + 1  # a half-written last line waits for the next run …
        if _takes_final_line(data[end:], st.st_mtime_ns, time.time_ns()):
            end = len(data)  # … unless it is complete and the file is quiet
        # a final line taken without its newline: the newline that ends it is not a new line
        pos = 1 if prev != b"\n" and data[:1] == b"\n" else 0
        rows = []
        while pos < end:
            nl = data.find(b"\n", pos, end)
            nl = end if nl < 0 else nl
            raw = data[pos:nl]
            pos = nl + 1
            line_no += 1
            obj, why = _parse(raw)
            if why:
                if raw.strip():  # a blank line is no message, and nothing to warn about
                    bad.append((line_no, why))
                continue
            msg = message_text(obj)
            if msg:
                rows.append((str(path), line_no, *msg))
        digest, _ = _prefix(fh, offset + end)
    for p, ln, role, text, ts in rows:
        cur = conn.execute("INSERT INTO session_messages(path, line, role, ts, text, fts_form) VALUES(?,?,?,?,?,?)",
                           (p, ln, role, ts, text, FTS_VERSION))
        conn.execute("INSERT INTO session_fts(rowid, text, cjk_bi, cjk_uni) VALUES(?,?,?,?)",
                     (cur.lastrowid, text, *cjk_columns(text)))
        n += 1
    conn.execute("INSERT INTO session_files(path, offset, lines) VALUES(?,?,?) ON CONFLICT(path) DO UPDATE SET "
                 "offset = excluded.offset, lines = excluded.lines", (str(path), offset + end, line_no))
    db.set_meta(conn, MARK + str(path), json.dumps([st.st_ino, st.st_mtime_ns, digest]))
    return n, offset + end, line_no, bad


def search_sessions(conn, query: str, k: int, snippet_chars: int = 700) -> list:
    """BM25 over indexed messages: Hits citing the JSONL file and line."""
    from zmem.store.fts import build_match
    from zmem.query.search import Hit, make_snippet
    match = build_match(query)
    if match is None:
        return []
    rows = conn.execute("SELECT m.path, m.line, m.role, m.ts, m.text, session_fts.rank FROM session_fts "
                        "JOIN session_messages m ON m.id = session_fts.rowid WHERE session_fts MATCH ? "
                        "ORDER BY session_fts.rank LIMIT ?", (match, k)).fetchall()
    out = []
    for path, line, role, ts, text, rank in rows:
        _, _, snippet = make_snippet(text, 1, query, snippet_chars)
        shown = _home(path)
        out.append(Hit(shown, line, line, round((-rank) / (1.0 - rank), 4), snippet, (ts or "")[:10] or None,
                       f"session · {role}", line, line, source="sessions"))
    return out


def _home(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home):] if path.startswith(home + os.sep) else path


def unmatched_dirs(settings: SessionSettings) -> list[str]:
    """The configured `dir` entries (paths or globs) under which there is no *.jsonl file."""
    out = []
    for d in settings.dirs:
        found = False
        for match in glob.glob(os.path.expanduser(d)):
            p = Path(match)
            if (p.is_dir() and any(f.is_file() for f in p.rglob("*.jsonl"))) or \
                    (p.suffix == ".jsonl" and p.is_file()):
                found = True
                break
        if not found:
            out.append(d)
    return out


def unmatched_warning(settings: SessionSettings) -> str | None:
    """One warning naming every `dir` entry that matches no session file (a typo, a moved directory)."""
    missing = unmatched_dirs(settings) if settings.enabled else []
    if not missing:
        return None
    return ("[sessions] dir matches no session files (*.jsonl): " + ", ".join(_home(d) for d in missing)
            + " (relative paths are resolved against the workspace root)")


def spawn_session_index(ws) -> None:
    """`zmem index --sessions` detached: recall never waits for transcripts to be indexed."""
    from zmem.workspace.spawn import spawn_detached
    spawn_detached(ws, ["index", "--sessions", "--quiet", "--no-embed"], "sessions.log")


def merge_scored(conn, query: str, notes: list, messages: list, k: int, *, mode: str, text_weight: float,
                 vector_weight: float) -> list:
    """Memory hits and session message hits in one list by score, not by rank (a weak note first in its
    list must not go before a message holding the whole question). In bm25 mode both scores are FTS5's
    BM25 as s / (1 + s). Otherwise a message is scored as adaptive fusion scores a note found by keywords
    alone (fusion.keyword_scores), and one holding only incidental words of the question (coverage below
    fusion.EVIDENCE_FLOOR: it has no vector to vouch for it) is no answer. Ties: the note first."""
    if messages and mode != "bm25":
        from zmem.query import fusion
        scored = fusion.keyword_scores(conn, query, [(h.snippet, h.score) for h in messages], text_weight=text_weight,
                                       vector_weight=vector_weight, table="session_fts")
        for h, (s, _) in zip(messages, scored):
            h.score = round(s, 4)
        messages = [h for h, (_, c) in zip(messages, scored) if c >= fusion.EVIDENCE_FLOOR]
    merged = [(h.score, 0, i, h) for i, h in enumerate(notes)] + [(h.score, 1, i, h) for i, h in enumerate(messages)]
    merged.sort(key=lambda x: (-x[0], x[1], x[2]))
    return [h for *_, h in merged[:k]]
