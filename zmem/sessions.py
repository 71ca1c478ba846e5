"""Agent session transcripts (opt-in): JSONL files, one message per line, indexed for recall.

Only user and assistant text is kept, with obvious secrets redacted; a hit cites the JSONL file and
line (`~/.openclaw/agents/main/sessions/abc.jsonl#L42`). Indexing is incremental by byte offset and
runs once a file has grown by `delta_bytes` or `delta_messages`; recall never waits for it (it
starts a detached `zmem index --sessions` and answers from what is indexed). Sessions are not memory
files: `zmem get` refuses them, and `--scope group` never returns them.

Shapes understood (OpenClaw's at least):
  {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "…"}]}, "timestamp": …}
  {"role": "assistant", "content": "…", "timestamp": "2025-11-27T10:00:00Z"}
"""
from __future__ import annotations

import glob
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from zmem import db
from zmem.errors import ConfigError
from zmem.fts import cjk_columns

DELTA_BYTES = 100_000
DELTA_MESSAGES = 50
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
_ASSIGNED = re.compile(rf"""(?i)(?<![\w.-])({_SECRET_NAME})(?!\w)(["']?)"""
                       rf"(\s*[:=]\s*|\s+(?:is|was)\s+(?!{_NOT_A_SECRET}))({_SECRET_VALUE})")
# "the wifi password for the office is correcthorsebattery": only "password for/to/of/on X is" counts;
# any other word between ("password manager is 1Password", "password policy is strict") makes the
# sentence about something else, so it is left alone. Plain "password is X" is handled by _ASSIGNED.
_PHRASE = re.compile(rf"(?i)(?<![\w.-])((?:password|passwd|passphrase|senha|contraseña)\s+(?:for|to|of|on)"
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


@dataclass(frozen=True)
class SessionSettings:
    enabled: bool = False
    dirs: tuple[str, ...] = ()
    delta_bytes: int = DELTA_BYTES
    delta_messages: int = DELTA_MESSAGES

    @staticmethod
    def from_table(table: dict, where: str) -> SessionSettings:
        def bad(key, what):
            return ConfigError(f"{where}: `sessions.{key}` must be {what}", hint="see README, Session transcripts")
        enabled = table.get("enabled", False)
        if not isinstance(enabled, bool):
            raise bad("enabled", "true or false")
        d = table.get("dir", table.get("dirs", ()))
        dirs = (d,) if isinstance(d, str) else d
        if not isinstance(dirs, (list, tuple)) or not all(isinstance(x, str) for x in dirs):
            raise bad("dir", "a path or a list of paths (globs allowed)")
        out = {}
        for key in ("delta_bytes", "delta_messages"):
            v = table.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise bad(key, "a whole number ≥ 0")
            if v is not None:
                out[key] = v
        if enabled and not dirs:
            raise bad("dir", 'set when enabled (e.g. dir = "~/.openclaw/agents/*/sessions")')
        return SessionSettings(enabled, tuple(dirs), **out)


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


def message_text(obj) -> tuple[str, str, str | None] | None:
    """(role, text, timestamp) of a user or assistant message line, else None."""
    if not isinstance(obj, dict):
        return None
    msg = obj.get("message") if isinstance(obj.get("message"), dict) else obj
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
    if not text:
        return None
    ts = obj.get("timestamp") or msg.get("timestamp")
    if isinstance(ts, (int, float)):
        ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts / 1000 if ts > 1e11 else ts))
    return role, redact(text[:MAX_MESSAGE_CHARS]), ts if isinstance(ts, str) else None


@dataclass
class SessionUpdate:
    files: int = 0
    messages: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0


def pending(conn, settings: SessionSettings) -> list[tuple[Path, int, int]]:
    """(file, indexed offset, size) of files that grew past the thresholds (or shrank: rewritten)."""
    known = {p: (off, msgs) for p, off, msgs in conn.execute("SELECT path, offset, lines FROM session_files")}
    out = []
    for f in session_files(settings):
        try:
            size = f.stat().st_size
        except OSError:
            continue
        off, _ = known.get(str(f), (0, 0))
        grown = size - off
        if size < off or (off == 0 and size > 0) or grown >= settings.delta_bytes or \
                (grown > 0 and _new_lines(f, off, settings.delta_messages) >= settings.delta_messages):
            out.append((f, off, size))
    return out


def _new_lines(path: Path, offset: int, cap: int) -> int:
    """Complete lines after offset, counting up to cap (cheap: reads at most delta_bytes)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return min(fh.read(DELTA_BYTES).count(b"\n"), cap)
    except OSError:
        return 0


def index_sessions(conn, settings: SessionSettings, *, force: bool = False) -> SessionUpdate:
    """Index what the thresholds (or force) say is due; the caller holds the index lock."""
    t0 = time.perf_counter()
    out = SessionUpdate()
    if not settings.enabled:
        return out
    due = [(f, off, size) for f, off, size in _all(conn, settings)] if force else pending(conn, settings)
    present = {str(f) for f in session_files(settings)}
    with db.write_transaction(conn):
        for (path,) in conn.execute("SELECT path FROM session_files").fetchall():
            if path not in present:
                _drop(conn, path)
        for f, off, size in due:
            if size < off:  # truncated or rewritten: start over
                _drop(conn, str(f))
                off = 0
            n, end, line_no = _index_file(conn, f, off)
            out.files += 1
            out.messages += n
            out.bytes += end - off
    out.seconds = time.perf_counter() - t0
    return out


def _all(conn, settings):
    known = dict(conn.execute("SELECT path, offset FROM session_files"))
    for f in session_files(settings):
        try:
            size = f.stat().st_size
        except OSError:
            continue
        if size != known.get(str(f), 0):
            yield f, known.get(str(f), 0), size


def _drop(conn, path: str) -> None:
    rows = conn.execute("SELECT id, text FROM session_messages WHERE path = ?", (path,)).fetchall()
    conn.executemany("INSERT INTO session_fts(session_fts, rowid, text, cjk_bi, cjk_uni) VALUES('delete', ?, ?, ?, ?)",
                     [(i, t, *cjk_columns(t)) for i, t in rows])
    conn.execute("DELETE FROM session_messages WHERE path = ?", (path,))
    conn.execute("DELETE FROM session_files WHERE path = ?", (path,))


def _index_file(conn, path: Path, offset: int) -> tuple[int, int, int]:
    """Index complete lines from offset; returns (messages, new offset, lines so far)."""
    row = conn.execute("SELECT lines FROM session_files WHERE path = ?", (str(path),)).fetchone()
    line_no = row[0] if row and offset else 0
    n = 0
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read()
    end = data.rfind(b"\n") + 1  # a half-written last line waits for the next run
    pos = 0
    rows = []
    while pos < end:
        nl = data.index(b"\n", pos)
        raw = data[pos:nl]
        pos = nl + 1
        line_no += 1
        try:
            msg = message_text(json.loads(raw))
        except (ValueError, UnicodeDecodeError):
            continue  # not JSON: skipped (a broken line never stops the rest)
        if msg:
            rows.append((str(path), line_no, *msg))
    for p, ln, role, text, ts in rows:
        cur = conn.execute("INSERT INTO session_messages(path, line, role, ts, text) VALUES(?,?,?,?,?)",
                           (p, ln, role, ts, text))
        conn.execute("INSERT INTO session_fts(rowid, text, cjk_bi, cjk_uni) VALUES(?,?,?,?)",
                     (cur.lastrowid, text, *cjk_columns(text)))
        n += 1
    conn.execute("INSERT INTO session_files(path, offset, lines) VALUES(?,?,?) ON CONFLICT(path) DO UPDATE SET "
                 "offset = excluded.offset, lines = excluded.lines", (str(path), offset + end, line_no))
    return n, offset + end, line_no


def search_sessions(conn, query: str, k: int, snippet_chars: int = 700) -> list:
    """BM25 over indexed messages: Hits citing the JSONL file and line."""
    from zmem.fts import build_match
    from zmem.search import Hit, make_snippet
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


def settings_for(ws) -> SessionSettings:
    """The [sessions] settings, with relative `dir` entries (in zmem.toml or the user config alike)
    resolved against the workspace root, never the current directory."""
    settings = SessionSettings.from_table(ws.config.sessions, "the [sessions] settings")
    dirs = tuple(d if os.path.isabs(os.path.expanduser(d)) else str(ws.root / d) for d in settings.dirs)
    return SessionSettings(settings.enabled, dirs, settings.delta_bytes, settings.delta_messages)


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
    import subprocess
    import sys
    ws.state_dir.mkdir(exist_ok=True)
    with open(ws.state_dir / "sessions.log", "ab") as log:
        subprocess.Popen([sys.executable, "-m", "zmem", "-C", str(ws.root), "index", "--sessions", "--quiet",
                          "--no-embed"], stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                         close_fds=True)


def merge_ranked(a: list, b: list, k: int) -> list:
    """Interleave two ranked hit lists by reciprocal rank (their scores are not comparable)."""
    scored = [(1.0 / (60 + r), i, h) for i, hits in enumerate((a, b)) for r, h in enumerate(hits, 1)]
    scored.sort(key=lambda x: (-x[0], x[1]))
    return [h for _, _, h in scored[:k]]
