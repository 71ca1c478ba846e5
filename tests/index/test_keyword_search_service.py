"""A running `zmem watch` answers fresh processes' keyword searches from the impact-ordered lists it
keeps (zmem.store.impact), only for exactly the index state the asking process reads: a fresh
`zmem recall` prints byte for byte what it prints searching with FTS5 itself, before and after a
commit changes the index, and whenever the watcher cannot answer (stopped, malformed question).
Real watch processes, real commits; a workspace with words in more than impact.LIST_DF chunks."""
from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers.watch import WatchProc
from helpers.workspace import commit_all, run, wait_for, write

from zmem.index import fsmonitor
from zmem.store import db, impact
from zmem.store.fts import fts_tokens

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")

COMMON = "gateway backup studio relay deploy cron".split()
RARE = "Lisbon Marrakech Porto Madrid webhook replica socket retry backoff".split()
QUERIES = ["gateway backup studio", "relay deploy", "gateway Lisbon", "studio cron webhook retry", "deploy"]

# A fresh `zmem ARGS` through the entry point agents run; "alone" takes the watcher's answers away
# (the recall searches with FTS5 itself, as without a watcher), "ask" records whether each was given.
WRAPPER = """
import sys
report, how = sys.argv.pop(1), sys.argv.pop(1)
sys.argv[0], code, served = "zmem", None, []
from zmem.index import fsmonitor
ranked = fsmonitor.ranked
def ask(*a, **kw):
    rows = ranked(*a, **kw) if how == "ask" else None
    served.append(rows is not None)
    return rows
fsmonitor.ranked = ask
from zmem.cli.entry import main
try:
    main()
except SystemExit as e:
    code = e.code
modules = sorted(sys.modules)
import json
with open(report, "w") as out:
    json.dump({"code": code, "served": served, "modules": modules}, out)
"""


def fresh_recall(root: Path, query: str, how: str, *extra: str) -> tuple[str, dict]:
    """(stdout, report) of a fresh `zmem -C ROOT recall QUERY EXTRA…` into pipes."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        proc = subprocess.run([sys.executable, "-c", WRAPPER, str(report), how, "-C", str(root), "recall", query,
                               *extra], capture_output=True, text=True, timeout=120)
        out = json.loads(report.read_text())
    assert out["code"] in (0, None) and proc.stderr == "", proc.stderr
    return proc.stdout, out


def _notes(r: random.Random, day: int) -> str:
    lines = [f"# 2025-{1 + day // 28:02d}-{1 + day % 28:02d}", ""]
    for section in range(4):  # a chunk per section
        lines += [f"## {r.choice(COMMON)} {section}", ""]
        for _ in range(r.randint(1, 4)):
            lines.append("- " + " ".join(r.choices(COMMON + RARE, k=r.randint(3, 9))) + ".")
        lines.append("")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """Each common word in more than impact.LIST_DF chunks."""
    root = tmp_path_factory.mktemp("big") / "ws"
    root.mkdir()
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    toml = root / "zmem.toml"  # small chunks: many of them from few files
    toml.write_text(toml.read_text().replace("# chunk_tokens = 400\n# chunk_overlap = 80",
                                             "chunk_tokens = 32\nchunk_overlap = 8"))
    r = random.Random(5)
    for day in range(330):
        write(root, f"memory/2025/day-{day:03d}.md", _notes(r, day))
    old = time.time() - 3600  # at rest: files changed just before a catch-up are read again by the next one
    for p in root.rglob("*.md"):
        os.utime(p, (old, old))
    commit_all(root, "notes")
    assert run(["-C", str(root), "index", "-q"]).exit_code == 0
    return root


@pytest.fixture
def ws(big, tmp_path) -> Path:
    root = tmp_path / "ws"
    subprocess.run(["cp", "-a", str(big), str(root)], check=True)
    assert run(["-C", str(root), "index", "-q"]).exit_code == 0  # the copy's stat signatures
    return root


@pytest.fixture
def watch(ws):
    proc = WatchProc(ws)
    proc.ready()
    yield proc
    proc.stop()


def state_key(root: Path) -> str:
    conn = db.connect(root / ".zmem" / "index.sqlite", readonly=True)
    try:
        return impact.state_key(conn)
    finally:
        conn.close()


def listed(root: Path) -> list[str]:
    """COMMON's tokens; checks that each is in LIST_DF chunks or more (a list is read for it)."""
    conn = db.connect(root / ".zmem" / "index.sqlite", readonly=True)
    try:
        tokens = [t[0] for t in fts_tokens(COMMON)]
        assert min(impact.document_frequencies(conn, tokens)) >= impact.LIST_DF
        return tokens
    finally:
        conn.close()


def served(root: Path, tokens: list[str]) -> bool:
    """Whether the watcher answers a search of tokens (asking makes the lists it lacks)."""
    return fsmonitor.ranked(root / ".zmem", state_key(root), tokens, 6, timeout=5.0) is not None


@pytest.mark.slow
def test_a_watchers_answer_is_fts5s_and_recall_prints_the_same_bytes(ws, watch):
    tokens = listed(ws)
    assert wait_for(lambda: served(ws, tokens), timeout=60)
    conn = db.connect(ws / ".zmem" / "index.sqlite", readonly=True)
    try:
        for k in (1, 6, 24, 200):
            for n in range(1, len(tokens) + 1):
                theirs = fsmonitor.ranked(ws / ".zmem", state_key(ws), tokens[:n], k, timeout=5.0)
                match = " OR ".join(f'"{t}"' for t in tokens[:n])
                fts5 = [tuple(row) for row in conn.execute(
                    "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?", (match, k))]
                assert theirs == fts5, (tokens[:n], k)  # the same ids and the same float ranks
    finally:
        conn.close()
    answers = []
    for query in QUERIES:
        for extra in ([], ["--json"], ["-k", "20"]):
            alone, _ = fresh_recall(ws, query, "alone", *extra)
            asked, report = fresh_recall(ws, query, "ask", *extra)
            assert asked == alone, (query, extra)
            answers += report["served"]
    assert answers.count(True) >= 10  # most searches were the watcher's


@pytest.mark.slow
def test_after_a_commit_the_answer_is_the_new_states_or_fts5s(ws, watch):
    tokens = listed(ws)
    assert wait_for(lambda: served(ws, tokens), timeout=60)
    before, report = fresh_recall(ws, "gateway backup studio", "ask")
    assert True in report["served"]
    old = state_key(ws)
    write(ws, "memory/2025/new.md", "# new\n\n## gateway\n\n- gateway gateway backup studio studio relay.\n")
    commit_all(ws, "a new note")
    # the first recall after the commit catches up itself (a new index state): any answer it is
    # given is for that state, and its output is what FTS5 gives there
    for _ in range(3):
        asked, report = fresh_recall(ws, "gateway backup studio", "ask")
        alone, _ = fresh_recall(ws, "gateway backup studio", "alone")
        assert asked == alone != before
        assert "memory/2025/new.md" in asked
    assert state_key(ws) != old
    assert fsmonitor.ranked(ws / ".zmem", old, tokens, 6, timeout=5.0) is None  # the old state: not answered
    assert_served_soon(ws, tokens, "gateway backup studio", asked)  # the new one is, once its lists are made


@pytest.mark.slow
def test_a_stopped_watcher_or_a_malformed_question_leaves_the_search_to_fts5(ws, watch):
    tokens = listed(ws)
    assert wait_for(lambda: served(ws, tokens), timeout=60)
    expected, _ = fresh_recall(ws, "relay deploy", "alone")
    for bad in (b"bm25\n", b"bm25 x\n", b"bm25 key 0 gatewai\n", b"bm25 key -1 gatewai\n",
                b"bm25 key 6\n", b"bm25 key 6  gatewai\n", b"bm25 \xff\xfe 6 a\n", b"bm25 " + b"[" * 60000 + b"\n"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(str(ws / ".zmem" / fsmonitor.SOCKET))
            s.sendall(bad)
            assert s.recv(64) == b"no request\n", bad
    assert fsmonitor.ranked(ws / ".zmem", "0.0.00", tokens, 6, timeout=5.0) is None  # no such state
    assert served(ws, tokens)  # the watcher goes on serving
    os.kill(watch.proc.pid, signal.SIGSTOP)
    try:
        asked, report = fresh_recall(ws, "relay deploy", "ask")
    finally:
        os.kill(watch.proc.pid, signal.SIGCONT)
    assert asked == expected and report["served"] and not any(report["served"])


@pytest.mark.slow
def test_a_served_recall_loads_no_json_or_threading_it_did_not_need(ws, watch):
    tokens = listed(ws)
    assert wait_for(lambda: served(ws, tokens), timeout=60)
    alone, plain = fresh_recall(ws, "gateway backup studio", "alone")
    asked, report = fresh_recall(ws, "gateway backup studio", "ask")
    assert asked == alone and True in report["served"]
    extra = set(report["modules"]) - set(plain["modules"])
    assert not extra & {"json", "threading", "socket"}, extra


@pytest.mark.slow
def test_after_a_full_rebuild_swaps_the_index_file_the_watcher_reads_the_new_one(ws, watch):
    tokens = listed(ws)
    assert wait_for(lambda: served(ws, tokens), timeout=60)
    assert run(["-C", str(ws), "index", "--full", "-q"]).exit_code == 0  # a new file renamed over the old
    alone, _ = fresh_recall(ws, "relay deploy", "alone")
    assert_served_soon(ws, tokens, "relay deploy", alone)


def assert_served_soon(root: Path, tokens: list[str], query: str, expected: str) -> None:
    """A fresh recall of query prints expected, and one is soon answered by the watcher (the index
    state can still move meanwhile: the watcher catches up after another process moved the snapshot)."""
    for _ in range(20):
        assert wait_for(lambda: served(root, tokens), timeout=60)
        asked, report = fresh_recall(root, query, "ask")
        assert asked == expected
        if True in report["served"]:
            return
    raise AssertionError("no fresh recall was answered by the watcher")


@pytest.mark.slow
def test_a_running_mcp_server_answers_too_and_its_own_searches_are_unchanged(ws):
    pytest.importorskip("mcp")
    import asyncio

    from helpers.mcp_client import call, session
    tokens = listed(ws)
    alone, _ = fresh_recall(ws, "gateway backup studio", "alone")

    async def go():
        async with session(ws) as s:
            own = await call(s, "memory_search", query="relay deploy")  # the first call starts watching
            await asyncio.to_thread(lambda: assert_served_soon(ws, tokens, "gateway backup studio", alone))
            for _ in range(3):  # the server's own searches, from the lists its answers made: as before
                assert await call(s, "memory_search", query="relay deploy") == own
    asyncio.run(go())
