"""What a fresh zmem process loads before it answers: agents run one process per recall, so
modules a command's path does not need are startup time wasted (pygit2 ~100 ms, openai ~1 s).
Facts about sys.modules and compiled patterns, not timings."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from helpers.fresh import fresh
from helpers.workspace import commit_all, run, sessions_config, write

CJK_PATTERNS = ("zmem.text.chunking.CJK_RE", "zmem.store.fts._CJK_RUN")

HEAVY = ("pygit2", "openai", "numpy", "sqlite_vec", "llama_cpp", "zmem.query.sessions", "zmem.git.repo")


def loaded(report: dict, names=HEAVY) -> list[str]:
    return [m for m in report["modules"] if m in names or m.split(".")[0] in names]


def age(*roots: Path) -> None:
    """Every file an hour old: files changed within 2 s of a catch-up are read and hashed again
    (their mtime cannot be trusted yet); a workspace at rest has none."""
    old = time.time() - 3600
    for root in roots:
        for p in [root, *root.rglob("*")]:
            os.utime(p, (old, old), follow_symlinks=False)


def test_a_fresh_bm25_recall_imports_no_git_library_embedder_or_session_code(ws):
    age(ws, Path(os.environ["HOME"]))
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    report, proc = fresh("-C", str(ws), "recall", "gateway Mac Studio", "--json")
    assert report["code"] in (0, None), proc.stderr
    hits = json.loads(proc.stdout)["results"]
    assert hits and hits[0]["path"] == "memory/2025-11-24.md"
    # nothing changed, so nothing is hashed: hashlib (OpenSSL) is not loaded either; with the default
    # provider (auto) finding nothing, only its detection runs (a refused loopback connect through
    # _socket, not the socket module) and no provider code loads
    providers = ("zmem.embedders.openai", "zmem.embedders.onnx", "zmem.embedders.llama", "zmem.embedders.gemini",
                 "zmem.embedders.jsonhttp", "zmem.embedders.modelpull")
    assert loaded(report, HEAVY + ("hashlib", "zmem.index.embedding", "socket") + providers) == []
    # a query without CJK characters never compiles the CJK patterns (~3 ms each)
    assert [report["compiled"].get(p, False) for p in CJK_PATTERNS] == [False, False]


def test_a_cjk_query_still_compiles_and_uses_the_cjk_patterns(ws):
    report, proc = fresh("-C", str(ws), "recall", "北京", "--json")
    assert report["code"] in (0, None), proc.stderr
    hits = json.loads(proc.stdout)["results"]
    assert hits and "北京" in hits[0]["snippet"]
    assert report["compiled"]["zmem.store.fts._CJK_RUN"] is True


def test_a_fresh_noop_index_and_get_import_no_git_library(ws):
    assert run(["-C", str(ws), "index", "-q"]).exit_code == 0
    report, proc = fresh("-C", str(ws), "index", "-q")
    assert report["code"] in (0, None) and proc.stderr == ""
    assert loaded(report) == []
    report, proc = fresh("-C", str(ws), "get", "memory/2025-11-24.md#L5-L5")
    assert report["code"] in (0, None), proc.stderr
    assert proc.stdout.strip() == "- Set up the gateway on the Mac Studio."
    assert loaded(report, HEAVY + ("zmem.index.catchup",)) == []  # reading a file needs no index


def test_sessions_enabled_recall_still_searches_transcripts(ws):
    sessions = sessions_config()
    write(sessions, "s1.jsonl", json.dumps({"role": "user", "content": "the zqfalcon deploy key rotated",
                                              "timestamp": "2025-11-27T10:00:00Z"}) + "\n")
    commit_all(ws)
    assert run(["-C", str(ws), "index", "--sessions", "-q"]).exit_code == 0
    report, proc = fresh("-C", str(ws), "recall", "zqfalcon", "--json")
    assert report["code"] in (0, None), proc.stderr
    hits = json.loads(proc.stdout)["results"]
    assert hits and hits[0]["path"].endswith("s1.jsonl")
    assert "zmem.query.sessions" in report["modules"]
