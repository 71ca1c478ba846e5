"""Real agent turns through a real OpenClaw gateway (openclaw@2026.9.6) with integrations/openclaw/ as its
memory slot, against a real zmem workspace. The model is a scripted OpenAI-compatible chat completions
server on loopback (helpers/openclaw_model.py), configured as an OpenClaw model provider: a turn is
driven the way a user drives one (`openclaw agent --session-key ... --message ...`), the gateway runs its
whole agent loop (system prompt with the plugin's sections and session-start context, the auto-recall
hook, the model's tool calls executed by the plugin, the pre-compaction memory flush, compaction), and
the tests assert on what the model was sent and on the workspace's git history."""
from __future__ import annotations

import datetime
import json
import subprocess
import time
from pathlib import Path

import pytest

from helpers.openclaw_gateway import GIT, NODE, OPENCLAW, ZMEM, Gateway, git, missing, zmem
from helpers.openclaw_model import ScriptedModel, content_text, system_text, tool_names

pytestmark = pytest.mark.slow

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
MISSING = missing()
FLUSH_MARK = "Pre-compaction memory flush"
FLUSH_FACT = "- W @Ana: Switched to decaf coffee in November 2026."


def tool_results_of_this_step(body: dict) -> list[str]:
    """The tool results after the model's last answer (OpenClaw puts its own context after them)."""
    messages = body["messages"]
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=len(messages))
    return [content_text(m) for m in messages[last:] if m.get("role") == "tool"]


class Script:
    """The model's side of a turn: a memory_search call for `query` first, then a final text; in the
    memory flush run, a write of one Retain fact to today's log, then NO_REPLY; compaction's summary
    request gets a summary."""

    def __init__(self):
        self.query = "espresso standup"
        self.writes: list[dict] = []  # write calls to make (one a step) before the memory_search
        self.call: tuple | None = None  # (tool, arguments) to call instead of memory_search
        self.today = datetime.date.today().isoformat()

    def __call__(self, body: dict) -> tuple:
        after_tool = bool(tool_results_of_this_step(body))
        if FLUSH_MARK in system_text(body) or FLUSH_MARK in content_text(body["messages"][-1]):
            if after_tool:
                return ("text", "NO_REPLY")
            return ("tool", "write", {"path": f"memory/{self.today}.md", "content": f"\n## Retain\n{FLUSH_FACT}\n"})
        if not body.get("tools"):
            return ("text", "## Original Request\nA question about Ana.\n## Early Progress\n- Looked it up in memory.")
        if self.writes:
            return ("tool", "write", self.writes.pop(0))
        if after_tool:
            return ("text", "Ana drinks espresso before standup (memory/2026-11-24.md).")
        return ("tool", *(self.call or ("memory_search", {"query": self.query})))


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if MISSING:
        print(f"SKIPPED: {MISSING}")
        pytest.skip(MISSING)
    ws = tmp_path_factory.mktemp("octurn") / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- Peter prefers concise replies under 1500 characters on WhatsApp.\n")
    (ws / "memory" / "2026-11-24.md").write_text(
        "# 2026-11-24\n\n## Notes\n\n- Set up the OpenClaw gateway on the Mac Studio in the office.\n"
        "- Ana drinks espresso every morning before standup.\n\n## Retain\n- W @Ana: Works on the billing service.\n")
    git(ws, "init", "-q")  # a repository that was there: init commits nothing, the test does
    assert zmem("init", str(ws)).returncode == 0
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "memory")
    script = Script()
    with ScriptedModel(script) as model:
        config = {"agents": {"defaults": {"workspace": str(ws), "skipBootstrap": True, "model": "loopback/scripted-1"}},
                  "models": {"providers": {"loopback": model.provider(context_window=64000)}}}
        # auto-recall runs in before_prompt_build, a conversation hook: a non-bundled plugin needs the grant
        gw = Gateway(config, {"command": ZMEM, "autoRecall": True},
                     env={"ZMEM_WATCH_AUTO": "0", "OLLAMA_HOST": "127.0.0.1:9", **GIT},
                     plugin_entry={"hooks": {"allowConversationAccess": True}})
        try:
            gw.start()
            yield {"gw": gw, "ws": ws, "model": model, "script": script}
        finally:
            gw.close()


def turn(setup, session_key: str, message: str, query: str) -> tuple[dict, list[dict]]:
    """One user turn: the CLI's JSON answer and the requests the model got for it."""
    model, gw = setup["model"], setup["gw"]
    setup["script"].query = query
    first = len(model.requests)
    res = gw.cli("agent", "--session-key", session_key, "--message", message, "--json", "--timeout", "300", timeout=400)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return json.loads(res.stdout), [r for r in model.requests[first:] if FLUSH_MARK not in system_text(r)]


def tool_result(request: dict) -> dict:
    (result,) = tool_results_of_this_step(request)
    return json.loads(result)


def first_citation(ws: Path, query: str) -> str:
    return json.loads(zmem("-C", str(ws), "recall", "--json", query).stdout)["results"][0]["citation"]


def test_a_turn_in_the_main_session_gives_the_model_zmems_context_recall_and_citations(setup):
    ws = setup["ws"]
    message = "What does Ana drink every morning before standup?"
    out, requests = turn(setup, "agent:main:main", message, "espresso standup")
    assert len(requests) == 2, [tool_names(r) for r in requests]  # the tool call, then the answer
    first, second = requests
    # memory_search and memory_get are direct tools (not behind OpenClaw's Tool Search)
    assert {"memory_search", "memory_get"} <= set(tool_names(first))
    system = system_text(first)
    # the session-start context: every line `zmem context` prints for the private scope, under its citations
    context = zmem("-C", str(ws), "context", "--scope", "private", "--budget", "6000").stdout.strip()
    assert "## Memory context (zmem, as this session started)" in system
    missing_lines = [line for line in context.splitlines() if line not in system]
    assert context and not missing_lines and "MEMORY.md#L1-L3" in context and "concise replies" in system
    # auto-recall: the best memories for the message, with zmem recall's citation, before the user's words
    users = "\n".join(content_text(m) for m in first["messages"] if m["role"] == "user")
    assert "Relevant memories (zmem recall" in users
    assert f"(Source: {first_citation(ws, message)})" in users
    # the model's memory_search call came back with zmem's exact citation for the question
    result = tool_result(second)
    assert result["results"][0]["citation"] == first_citation(ws, "espresso standup") == "memory/2026-11-24.md#L6-L6"
    assert result["backend"] == "zmem" and result["scope"] == "private"
    assert "Ana drinks espresso" in json.dumps(out)


def test_agent_turns_and_tool_calls_share_one_zmem_process_per_workspace(setup):
    # OpenClaw evaluates the plugin's module again for its agent runtime, in the same gateway process: the
    # zmem processes live on globalThis, so turns are served by the warm process tools.invoke uses
    gw, ws = setup["gw"], setup["ws"]
    assert gw.invoke("memory_search", {"query": "espresso standup"})["ok"]
    _, requests = turn(setup, "agent:main:main", "What does Ana drink every morning?", "espresso standup")
    assert tool_result(requests[-1])["results"], "the turn's memory_search found nothing"
    private = [argv for argv in gw.zmem_servers(ws) if "group" not in argv]
    assert len(private) == 1, private


def test_a_memory_get_zmem_refuses_in_a_turn_is_a_read_result_not_a_failed_tool(setup):
    # zmem's refusal is raised by the ZmemError class of the plugin instance that made the shared pool and
    # handled by the agent runtime's instance: it must still become memory_get's not_found/error result
    setup["script"].call = ("memory_get", {"path": "memory/1999-01-01.md"})
    try:
        _, requests = turn(setup, "agent:main:main", "What did I note on 1 January 1999?", "unused")
    finally:
        setup["script"].call = None
    assert tool_result(requests[-1]) == {"status": "not_found", "text": "", "path": "memory/1999-01-01.md"}


def test_a_group_session_gets_the_group_scope_without_memory_md(setup):
    out, requests = turn(setup, "agent:main:telegram:group:4242", "How long should replies to Peter be on WhatsApp?",
                         "concise replies WhatsApp")
    first, second = requests
    system = system_text(first)
    assert "## Memory context (zmem, as this session started)" in system and "scope group" in system
    assert "concise replies" not in system and "MEMORY.md#L" not in system
    users = "\n".join(content_text(m) for m in first["messages"] if m["role"] == "user")
    assert "MEMORY.md" not in users
    result = tool_result(second)
    assert result["scope"] == "group" and all(r["path"] != "MEMORY.md" for r in result["results"])
    # the same question in the private session finds MEMORY.md: the group scope is what left it out
    assert first_citation(setup["ws"], "concise replies WhatsApp").startswith("MEMORY.md#")


@pytest.mark.parametrize("session_key", ["agent:main:subagent:3f1c2a", "agent:main:cron:nightly:run:77"])
def test_sub_agent_and_cron_sessions_get_the_group_scope_without_memory_md(setup, session_key):
    # OpenClaw loads MEMORY.md in the main session only: sub-agent and cron sessions omit it, and a sub-agent's
    # key keeps no trace of a group chat that spawned it. Neither the session-start context, nor auto-recall,
    # nor the model's memory_search may carry MEMORY.md there.
    out, requests = turn(setup, session_key, "How long should replies to Peter be on WhatsApp?", "concise replies WhatsApp")
    first, second = requests
    system = system_text(first)
    # (OpenClaw 2026.9.6 gives these sessions a minimal prompt: no memory section, so no session-start context)
    assert "## Memory context (zmem, as this session started)" not in system or "scope group" in system
    assert "concise replies" not in system and "MEMORY.md#L" not in system
    users = "\n".join(content_text(m) for m in first["messages"] if m["role"] == "user")
    assert "MEMORY.md" not in users and "concise replies" not in users
    result = tool_result(second)
    assert result["scope"] == "group" and all(r["path"] != "MEMORY.md" for r in result["results"])


def test_the_pre_compaction_flush_writes_todays_log_and_zmem_commits_it(setup):
    gw, ws, model, script = setup["gw"], setup["ws"], setup["model"], setup["script"]
    today = f"memory/{script.today}.md"
    # the model reports a prompt of 50,000 tokens in a 64,000-token window: past the flush plan's threshold
    # (64,000 - 20,000 reserve - 4,000 soft), so OpenClaw runs the memory flush, then compacts
    model.prompt_tokens = 50_000
    try:
        turn(setup, "agent:main:flushcase", "What does Ana drink?", "Ana drinks")
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            flushes = [r for r in model.requests if FLUSH_MARK in system_text(r)]
            done = (ws / today).exists() and FLUSH_FACT in (ws / today).read_text() \
                and not git(ws, "status", "--porcelain", "--", today)
            if flushes and done:
                break
            time.sleep(0.5)
    finally:
        model.prompt_tokens = 100
    assert flushes, "OpenClaw ran no memory flush"
    plan = content_text(flushes[0]["messages"][-1]) + system_text(flushes[0])
    assert "memory_append" in plan and "## Retain" in plan and today in plan
    # why it writes with `write`: OpenClaw 2026.9 offers the flush run only read and an append-only write
    assert set(tool_names(flushes[0])) == {"read", "write"}
    assert FLUSH_FACT in (ws / today).read_text()
    assert git(ws, "status", "--porcelain", "--", today) == "", "the flush's note was left uncommitted"
    message = git(ws, "log", "-1", "--format=%B", "--", today)
    assert message.startswith(f"zmem: {today}") and "OpenClaw's write tool" in message
    # committed and indexed: a typed fact about Ana, found by the next search
    found = Gateway.payload(gw.invoke("memory_search", {"query": "decaf coffee", "entity": "Ana"}))
    assert found["results"][0]["path"] == today and found["results"][0]["fact"]["kind"] == "world"


def test_a_memory_file_the_agent_writes_in_a_turn_is_committed_and_other_files_are_not(setup):
    gw, ws, script = setup["gw"], setup["ws"], setup["script"]
    script.writes = [{"path": "memory/2026-11-28.md", "content": "# 2026-11-28\n\n- Ana booked the team offsite in Porto.\n"},
                     {"path": "scratch.md", "content": "a scratch note, not memory\n"}]
    turn(setup, "agent:main:writes", "Note that Ana booked the offsite in Porto.", "offsite Porto")
    assert not script.writes
    deadline = time.monotonic() + 60
    while git(ws, "status", "--porcelain", "--", "memory/2026-11-28.md") and time.monotonic() < deadline:
        time.sleep(0.3)
    assert git(ws, "status", "--porcelain", "--", "memory/2026-11-28.md") == ""
    assert "written by OpenClaw's write tool (agent main)" in git(ws, "log", "-1", "--format=%B", "--", "memory/2026-11-28.md")
    assert git(ws, "status", "--porcelain", "--", "scratch.md") == "?? scratch.md\n"  # not memory: left alone
    found = Gateway.payload(gw.invoke("memory_search", {"query": "offsite Porto"}))
    assert found["results"][0]["path"] == "memory/2026-11-28.md"


def test_status_reports_zmems_files_chunks_and_freshness(setup):
    gw, ws = setup["gw"], setup["ws"]
    # OpenClaw's status scan asks the memory slot for a manager with purpose "status" and reads status(); its CLI
    # shows it only in `openclaw status --json --all` with no gateway answering (a reachable gateway's status has
    # memory: null in 2026.9.6), which also queries the npm registry for updates: so through its runtime export
    res = subprocess.run([str(NODE), str(HELPERS / "openclaw_capability.mjs"), str(OPENCLAW.parent), "Ana", "status"],
                         env=gw.env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    memory = json.loads(res.stdout.strip().splitlines()[-1])["status"]
    expected = json.loads(zmem("-C", str(ws), "status", "--json").stdout)
    assert memory["backend"] == "builtin" and memory["workspaceDir"] == str(ws)
    assert (memory["files"], memory["chunks"]) == (expected["files"], expected["chunks"]) and memory["files"] > 0
    assert memory["dirty"] is False and memory["custom"]["zmem"]["head"] == git(ws, "rev-parse", "HEAD").strip()
    assert memory["vector"]["available"] is False and memory["custom"]["zmem"]["vectors"] == 0  # no model here
    assert memory["custom"]["zmem"]["indexedCommit"] == expected["indexed_commit"]
