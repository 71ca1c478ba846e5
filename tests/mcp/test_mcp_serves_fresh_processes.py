"""`zmem mcp` serves fresh zmem processes as `zmem watch` does, from its start and between tool calls:
it vouches that nothing changed (they skip the stat sweep), catches up in the background once changes
settle, and loads the query model hybrid recall needs. Real `zmem mcp` processes driven by the SDK's
client, real hooks and commits, fresh `zmem recall` processes that report what the server answered."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, wait_for, write, zmem_proc
from zmem.index import fsmonitor
from zmem.index.catchup import open_index
from zmem.store import db
from zmem.workspace.core import find_workspace

pytest.importorskip("mcp")

from helpers.mcp_client import call, session  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "uname") or os.uname().sysname != "Linux",
                                reason="inotify: Linux only")

# `zmem ARGS` through the entry point agents run, writing each of the watcher's answers to "nothing
# changed since this snapshot?" to the report file (a forked freshness check's answer too)
ASKING = """
import sys
report = sys.argv.pop(1)
from zmem.index import fsmonitor
ask = fsmonitor.vouched
def vouched(*args, **kwargs):
    answer = ask(*args, **kwargs)
    with open(report, "a") as f:
        f.write("yes\\n" if answer else "no\\n")
    return answer
fsmonitor.vouched = vouched
sys.argv[0] = "zmem"
from zmem.cli.entry import main
main()
"""


def fresh_recall(root: Path, *words: str) -> tuple[str, list[str]]:
    """(stdout of a fresh `zmem recall WORDS --json`, the watcher's answers it got)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "answers"
        proc = subprocess.run([sys.executable, "-c", ASKING, str(report), "-C", str(root), "recall", *words, "--json"],
                              capture_output=True, text=True, timeout=120, env=dict(os.environ))
        assert proc.returncode == 0, proc.stderr
        return proc.stdout, report.read_text().split() if report.exists() else []


def vouched(root: Path) -> bool:
    """Whether the server vouches for the index's snapshot now (as a fresh process would ask)."""
    ws = find_workspace(root)
    conn = open_index(ws)
    try:
        return fsmonitor.vouched(ws.state_dir, db.get_meta(conn, "snapshot_ns"), timeout=5.0)
    finally:
        conn.close()


def paths(out: str) -> list[str]:
    return [r["path"] for r in json.loads(out)["results"]]


@pytest.fixture
def hooked(tmp_path) -> Path:
    """A workspace with zmem's git hooks installed, indexed."""
    root = tmp_path / "hooked"
    proc = zmem_proc("init", str(root))
    assert proc.returncode == 0, proc.stderr
    for i in range(1, 4):
        write(root, f"memory/2025-01-0{i}.md", f"# 2025-01-0{i}\n\n- Note {i}: the relay runs on the gateway.\n")
    commit_all(root, "notes")
    assert zmem_proc("-C", str(root), "index", "-q").returncode == 0
    return root


@pytest.mark.slow
def test_fresh_recalls_are_vouched_for_from_the_start_before_any_tool_call(hooked):
    alone, answers = fresh_recall(hooked, "relay gateway")
    assert "yes" not in answers  # nobody to ask: the sweep

    async def go():
        async with session(hooked):  # the handshake only: no tool call
            assert await asyncio.to_thread(wait_for, lambda: vouched(hooked))
            return await asyncio.to_thread(fresh_recall, hooked, "relay gateway")
    served, answers = asyncio.run(go())
    assert set(answers) == {"yes"} and served == alone
    assert not (hooked / ".zmem" / fsmonitor.SOCKET).exists()  # removed when the server stops


@pytest.mark.slow
def test_after_a_commit_and_an_edit_fresh_recalls_are_vouched_for_again_without_a_tool_call(hooked):
    async def go():
        async with session(hooked) as s:
            assert await asyncio.to_thread(wait_for, lambda: vouched(hooked))
            # a commit through git, its hook catching up in another process
            write(hooked, "memory/2025-01-04.md", "# 2025-01-04\n\n- The quokka moved to the relay room.\n")
            git(hooked, "add", "-A")
            git(hooked, "commit", "-q", "-m", "quokka")
            head = git(hooked, "rev-parse", "HEAD")
            assert await asyncio.to_thread(wait_for, lambda: vouched(hooked), 60)
            after_commit = await asyncio.to_thread(fresh_recall, hooked, "quokka")
            # an edit nobody commits or indexes: the server catches up once it settles
            write(hooked, "memory/2025-01-04.md", "# 2025-01-04\n\n- The wombat moved to the relay room.\n")
            assert await asyncio.to_thread(wait_for, lambda: vouched(hooked), 60)
            after_edit = await asyncio.to_thread(fresh_recall, hooked, "wombat")
            # the session still answers its calls, from the same index
            found = await call(s, "memory_search", query="wombat")
            after_call = await asyncio.to_thread(fresh_recall, hooked, "wombat")
            return head, after_commit, after_edit, found, after_call
    head, (commit_out, commit_answers), (edit_out, edit_answers), found, (call_out, call_answers) = asyncio.run(go())
    assert git(hooked, "rev-parse", "HEAD") == head
    assert set(commit_answers) == {"yes"} and paths(commit_out) == ["memory/2025-01-04.md"]
    assert set(edit_answers) == {"yes"} and paths(edit_out) == ["memory/2025-01-04.md"]
    assert [r["path"] for r in found["results"]] == ["memory/2025-01-04.md"]
    assert set(call_answers) == {"yes"} and call_out == edit_out
    # without the server, the same recall prints the same
    alone, answers = fresh_recall(hooked, "wombat")
    assert "yes" not in answers and alone == edit_out


@pytest.mark.slow
def test_a_settings_change_rebuilds_the_watch_and_fresh_recalls_are_vouched_for_again(hooked):
    """zmem.toml changed: the server's watch thread reloads everything (its own thread stopped, a new
    one serving the socket) and vouches again, still with no tool call; the session keeps answering."""
    async def go():
        async with session(hooked) as s:
            assert await asyncio.to_thread(wait_for, lambda: vouched(hooked))
            write(hooked, "zmem.toml", (hooked / "zmem.toml").read_text() + "\n# edited\n")
            assert await asyncio.to_thread(wait_for, lambda: vouched(hooked), 60)
            recalled = await asyncio.to_thread(fresh_recall, hooked, "relay gateway")
            found = await call(s, "memory_search", query="relay gateway")
            return recalled, found
    (out, answers), found = asyncio.run(go())
    assert set(answers) == {"yes"} and len(paths(out)) == 3
    assert len(found["results"]) == 3
    assert not (hooked / ".zmem" / fsmonitor.SOCKET).exists()


@pytest.mark.slow
def test_the_query_model_is_loaded_as_the_server_starts(tmp_path):
    """A hybrid workspace whose vectors come from an in-process model (onnx): the server loads it as it
    starts, so the first fresh hybrid recall's query is embedded by it (not answered "no loading")."""
    for module in ("numpy", "onnxruntime", "tokenizers", "onnx"):  # numpy first: onnxruntime needs it
        pytest.importorskip(module)
    from helpers.tiny_bert import onnx_workspace, tiny_onnx_model
    root = tmp_path / "ws"
    ws, fingerprint = onnx_workspace(root, tiny_onnx_model(tmp_path))

    async def go():
        async with session(root):  # no tool call: nothing of its own made it load the model
            assert await asyncio.to_thread(wait_for, lambda: vouched(root))  # serving, caught up
            return await asyncio.to_thread(fsmonitor.embedded, ws.state_dir, fingerprint,
                                           "which machine runs the gateway", 30.0)
    assert asyncio.run(go()) is not None
