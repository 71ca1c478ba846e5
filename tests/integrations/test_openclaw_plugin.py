"""integrations/openclaw/ in a real OpenClaw gateway (openclaw@2026.9.6 on Node 24, installed by
.ci/install_openclaw.sh into a cache): the plugin is the selected memory slot, and its tools, called
through the gateway's tools.invoke against real zmem workspaces, answer what zmem answers. One gateway
serves the module; its agents are the cases (per-agent overrides in the plugin's config): main (a
committed workspace), fresh (a folder that is not a git repository yet), nozmem (a zmem command that is
not on PATH), broken (an invalid zmem.toml), slow (a 1 ms time limit), plain (a plain folder with
initWorkspace false) and the bad commands: absent (an absolute path that does not exist, on a folder zmem
would init and on a repository), notexec (a file without the x bit) and spaced (an executable and its
arguments as one string)."""
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.openclaw_gateway import GIT, NODE, OPENCLAW, PLUGIN_DIR, ZMEM, Gateway, git, missing, zmem

pytestmark = pytest.mark.slow

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
MISSING = missing()


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if MISSING:
        print(f"SKIPPED: {MISSING}")
        pytest.skip(MISSING)
    base = tmp_path_factory.mktemp("oc")
    home = base / "home"
    home.mkdir()
    ws = base / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n\n- Peter prefers concise replies under 1500 characters on WhatsApp.\n")
    (ws / "memory").mkdir()
    (ws / "memory" / "2026-11-24.md").write_text(
        "# 2026-11-24\n\n## Notes\n\n- Set up the OpenClaw gateway on the Mac Studio in the office.\n"
        "- Ana drinks espresso every morning before standup.\n\n## Retain\n- W @Ana: Works on the billing service.\n")
    (ws / "memory" / "2026-11-27.md").write_text(
        "# 2026-11-27\n\n## Notes\n\n- Decided to move the nightly backups to the Hetzner box.\n" + "".join(
            f"- Filler line {i} about quarterly planning and the roadmap review.\n" for i in range(200)))
    # one line of 61,200 characters: longer than memory_get's bound (maxReadChars 12,000) on its own
    (ws / "memory" / "2026-11-25.md").write_text("# 2026-11-25\n\n- giantline " + "lorem ipsum dolor " * 3400 + "\n- after\n")
    git(ws, "init", "-q")  # a repository that was there: init commits nothing, the test does
    assert zmem("init", str(ws)).returncode == 0
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "memory")
    plain = base / "plain"
    (plain / "memory").mkdir(parents=True)
    (plain / "memory" / "2026-11-20.md").write_text("# 2026-11-20\n\n- espresso machine needs descaling\n")
    (plain / "notes.txt").write_text("mine\n")
    (base / "nobin").mkdir()
    notexec = base / "notexec.sh"
    notexec.write_text("#!/bin/sh\necho hi\n")
    notexec.chmod(0o644)
    (base / "vanish" / "memory").mkdir(parents=True)
    (base / "vanish" / "memory" / "2026-11-20.md").write_text("# 2026-11-20\n\n- soon gone\n")
    fresh = base / "fresh"
    (fresh / "memory").mkdir(parents=True)
    (fresh / "memory" / "2026-11-20.md").write_text("# 2026-11-20\n\n- The espresso machine in the kitchen needs descaling.\n")
    (fresh / "notes.txt").write_text("not memory, but kept\n")
    broken = base / "broken"
    (broken / "memory").mkdir(parents=True)
    git(broken, "init", "-q")
    (broken / "memory" / "2026-11-21.md").write_text("- a note\n")
    (broken / "zmem.toml").write_text("[recall\nk = = 3\n")
    # with several agents, OpenClaw gives each its own folder under defaults.workspace unless it names one
    agents = {"main": {"default": True, "workspace": str(ws)}, "fresh": {"workspace": str(fresh)},
              "nozmem": {"workspace": str(ws)}, "broken": {}, "slow": {}, "plain": {}, "absent": {}, "absentrepo": {},
              "notexec": {}, "spaced": {}, "vanish": {}}
    config = {"agents": {"defaults": {"workspace": str(ws), "skipBootstrap": True}, "entries": agents}}
    plugin = {"command": ZMEM, "agents": {"nozmem": {"command": "zmem-is-not-installed-here"},
                                          "broken": {"workspace": str(broken)},
                                          "slow": {"timeoutMs": 1, "workspace": str(fresh)},
                                          # every per-agent key the docs name is accepted (the gateway starts)
                                          "main": {"prewarm": True, "startTimeoutMs": 60000},
                                          "plain": {"workspace": str(plain), "initWorkspace": False},
                                          "absent": {"workspace": str(base / "nobin"), "command": "/nonexistent/bin/zmem"},
                                          "absentrepo": {"workspace": str(ws), "command": "/nonexistent/bin/zmem"},
                                          "notexec": {"workspace": str(ws), "command": str(notexec)},
                                          "spaced": {"workspace": str(ws), "command": f"{sys.executable} -m zmem"},
                                          "vanish": {"workspace": str(base / "vanish")}}}
    before = snapshot(ws)
    plain_before = snapshot(plain)
    gw = Gateway(config, plugin, env={"ZMEM_WATCH_AUTO": "0", "OLLAMA_HOST": "127.0.0.1:9", **GIT})
    try:
        inspect = gw.cli("plugins", "inspect", "zmem", "--runtime", "--json")
        gw.start()
        yield {"gw": gw, "ws": ws, "fresh": fresh, "broken": broken, "before": before, "inspect": inspect,
               "plain": plain, "plain_before": plain_before, "base": base}
    finally:
        gw.close()


def ok_payload(res: dict) -> dict:
    assert res.get("ok") is True, json.dumps(res)[:800]
    return Gateway.payload(res)


def test_the_plugin_is_the_selected_memory_slot_with_its_tools(setup):
    res = setup["inspect"]
    assert res.returncode == 0, res.stderr[-2000:]
    plugin = json.loads(res.stdout)["plugin"]
    assert plugin["status"] == "loaded" and plugin["kind"] == "memory" and plugin["memorySlotSelected"] is True
    assert {"memory_search", "memory_get", "memory_append", "memory_blame", "memory_recall_as_of"} <= set(plugin["toolNames"])


def test_memory_search_cites_what_zmem_recall_cites_in_openclaws_shape(setup):
    gw, ws = setup["gw"], setup["ws"]
    out = ok_payload(gw.invoke("memory_search", {"query": "espresso standup"}))
    assert {"results", "provider", "model", "citations", "mode"} <= set(out)
    recall = json.loads(zmem("-C", str(ws), "recall", "--json", "espresso standup").stdout)
    first, expected = out["results"][0], recall["results"][0]
    assert first["citation"] == expected["citation"]
    assert (first["path"], first["startLine"], first["endLine"]) == (expected["path"], expected["start_line"], expected["end_line"])
    assert first["snippet"].endswith(f"\n\nSource: {expected['citation']}")  # memory.citations auto, a direct chat
    assert out["citations"] == "auto" and first["source"] == "memory"


def test_memory_search_over_the_websocket_rpc_is_the_plugins_tool(setup):
    res = setup["gw"].invoke_rpc("memory_search", {"query": "Hetzner backups"})
    assert res["ok"] is True and res["source"] == "plugin", res
    assert Gateway.payload(res)["results"][0]["path"] == "memory/2026-11-27.md"


def test_memory_get_returns_exactly_zmem_gets_lines(setup):
    gw, ws = setup["gw"], setup["ws"]
    hit = ok_payload(gw.invoke("memory_search", {"query": "Mac Studio gateway"}))["results"][0]
    args = {"path": hit["path"], "from": hit["startLine"], "lines": hit["endLine"] - hit["startLine"] + 1}
    got = ok_payload(gw.invoke("memory_get", args))
    printed = zmem("-C", str(ws), "get", f"{hit['path']}#L{hit['startLine']}-L{hit['endLine']}").stdout
    assert got["status"] == "ok" and got["text"] == printed.rstrip("\n")
    assert got["from"] == hit["startLine"] and got["lines"] == args["lines"]


def test_memory_get_bounds_a_whole_file_and_says_where_to_continue(setup):
    gw, ws = setup["gw"], setup["ws"]
    got = ok_payload(gw.invoke("memory_get", {"path": "memory/2026-11-27.md"}))
    assert got["status"] == "ok" and got["truncated"] is True and got["nextFrom"] == 121
    assert got["text"] == zmem("-C", str(ws), "get", "memory/2026-11-27.md", "--lines", "120").stdout.rstrip("\n")
    rest = ok_payload(gw.invoke("memory_get", {"path": "memory/2026-11-27.md", "from": got["nextFrom"]}))
    assert rest["from"] == 121 and "nextFrom" not in rest


def test_memory_get_reads_only_memory_files(setup):
    gw = setup["gw"]
    refused = ok_payload(gw.invoke("memory_get", {"path": "zmem.toml"}))
    assert refused["status"] == "error" and refused["code"] == "MEMORY_PATH_NOT_ALLOWED"
    assert "memory file: zmem.toml" in refused["error"] and "hint:" in refused["error"]
    escaped = ok_payload(gw.invoke("memory_get", {"path": "../../etc/passwd"}))
    assert escaped["status"] == "error" and "hint:" in escaped["error"]
    for outside in ("/etc/passwd", "~/.bashrc"):  # absolute and ~ paths: the same refusal, the documented code
        got = ok_payload(gw.invoke("memory_get", {"path": outside}))
        assert got["status"] == "error" and got["code"] == "MEMORY_PATH_NOT_ALLOWED" and "hint:" in got["error"], got
    absent = ok_payload(gw.invoke("memory_get", {"path": "memory/2020-01-01.md"}))
    assert absent == {"status": "not_found", "text": "", "path": "memory/2020-01-01.md"}


def test_memory_append_lands_in_todays_log_committed_and_the_next_search_finds_it(setup):
    gw, ws = setup["gw"], setup["ws"]
    out = ok_payload(gw.invoke("memory_append", {"text": "Prefers the window seat on long-haul flights to Lisbon.",
                                                 "retain": "O", "entities": ["Peter"], "confidence": 0.8}))
    today = datetime.date.today().isoformat()
    assert out["path"] == f"memory/{today}.md" and out["committed"] is True
    log = (ws / out["path"]).read_text()
    assert "@Peter" in log and "window seat" in log and "## Retain" in log
    assert out["path"] in git(ws, "show", "--name-only", "--format=", "HEAD")
    assert git(ws, "status", "--porcelain", "--", out["path"]) == ""
    found = ok_payload(gw.invoke("memory_search", {"query": "window seat Lisbon flights"}))
    assert found["results"][0]["path"] == out["path"]
    assert ok_payload(gw.invoke("memory_blame", {"target": found["results"][0]["citation"]}))["ranges"]


def test_memory_recall_as_of_answers_from_the_past(setup):
    out = ok_payload(setup["gw"].invoke("memory_recall_as_of", {"query": "espresso", "as_of": "HEAD"}))
    assert out["results"] and "@" in out["results"][0]["citation"]


def test_a_group_chat_gets_the_group_scope_without_memory_md(setup):
    gw = setup["gw"]
    private = ok_payload(gw.invoke("memory_search", {"query": "concise replies WhatsApp"}))
    assert private["scope"] == "private" and private["results"][0]["path"] == "MEMORY.md"
    group = ok_payload(gw.invoke("memory_search", {"query": "concise replies WhatsApp"},
                                 session_key="agent:main:telegram:group:4242"))
    assert group["scope"] == "group" and all(r["path"] != "MEMORY.md" for r in group["results"])
    assert all("Source:" not in r["snippet"] for r in group["results"])  # citations auto: not in groups


def test_a_folder_that_is_not_a_repository_is_made_one_once_keeping_every_file(setup):
    gw, fresh = setup["gw"], setup["fresh"]
    first = ok_payload(gw.invoke("memory_search", {"query": "descaling espresso machine"}, session_key="agent:fresh:main"))
    assert "zmem init" in first["notice"] and first["results"][0]["path"] == "memory/2026-11-20.md"
    # the notice says what zmem init did: its layout and the memory files that were there committed
    # (their history starts: blame and as-of know them), other files kept as they are, not committed
    assert "memory files that were there (MEMORY.md, memory/, bank/) committed" in first["notice"]
    assert git(fresh, "log", "--format=%s").startswith("zmem init: the ")
    assert git(fresh, "status", "--porcelain").splitlines() == ["?? notes.txt"]
    assert (fresh / ".git").is_dir() and (fresh / "notes.txt").read_text() == "not memory, but kept\n"
    assert "zmem" in (fresh / ".git" / "hooks" / "post-commit").read_text()
    again = ok_payload(gw.invoke("memory_search", {"query": "descaling"}, session_key="agent:fresh:main"))
    assert "notice" not in again


def zmem_children(gw: Gateway, ws: Path) -> list[int]:
    """Pids of the gateway's private-scope `zmem -C <ws> mcp` children (read from /proc: this gateway's only)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"mcp" in argv and str(ws).encode() in argv and b"group" not in argv and ppid == gw.proc.pid:
            pids.append(int(entry.name))
    return pids


def test_a_zmem_process_that_dies_is_restarted_by_the_next_call(setup):
    gw, ws = setup["gw"], setup["ws"]
    ok_payload(gw.invoke("memory_search", {"query": "espresso"}))
    pids = zmem_children(gw, ws)
    assert len(pids) == 1, pids  # one long-lived process for the workspace (private scope)
    os.kill(pids[0], 9)
    again = ok_payload(gw.invoke("memory_search", {"query": "espresso"}))
    assert again["results"] and zmem_children(gw, ws) not in ([], pids)
    assert "exited" in gw.log_text()


def node_json(gw: Gateway, script: str, *args: str) -> dict:
    res = subprocess.run([str(NODE), str(HELPERS / script), *args], env=gw.env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_the_search_manager_answers_search_read_status_and_probes_from_zmem(setup):
    gw, ws = setup["gw"], setup["ws"]
    out = node_json(gw, "openclaw_capability.mjs", str(OPENCLAW.parent), "Hetzner nightly backups")
    recall = json.loads(zmem("-C", str(ws), "recall", "--json", "-k", "3", "Hetzner nightly backups").stdout)
    assert out["search"][0]["citation"] == recall["results"][0]["citation"]
    hit = out["search"][0]
    printed = zmem("-C", str(ws), "get", f"{hit['path']}#L{hit['startLine']}-L{hit['endLine']}").stdout
    assert out["readFile"]["status"] == "ok" and out["readFile"]["text"] == printed.rstrip("\n")
    assert out["readMissing"]["status"] == "not_found"
    assert "memory file: zmem.toml" in out["readForeign"] and "hint:" in out["readForeign"]
    zm = out["status"]["custom"]["zmem"]
    assert out["status"]["workspaceDir"] == str(ws) and zm["alive"] is True and zm["pid"] > 0 and zm["scope"] == "private"
    assert out["embedding"]["ok"] is False and "keyword" in out["embedding"]["error"] and out["vector"] is False  # no model here


def test_prompt_session_context_flush_plan_and_session_hits(setup):
    ws = setup["ws"]
    out = node_json(setup["gw"], "openclaw_register.mjs", str(PLUGIN_DIR), str(ws), ZMEM)
    assert {t["names"][0]: t["contextVersion"] for t in out["tools"]}["memory_append"] == 2
    prompt = "\n".join(out["prompt"])
    assert "memory_search" in prompt and "memory_get" in prompt and "memory_append" in prompt and "Source:" in prompt
    assert out["promptWithoutTools"] == []
    private, group = "\n".join(out["context"]), "\n".join(out["groupContext"])
    assert "MEMORY.md" in private and "concise replies" in private  # zmem context, private scope
    assert "MEMORY.md" not in group and "concise replies" not in group  # a group chat: the group scope
    flush = out["flush"]
    assert flush["relativePath"] == "memory/2026-11-28.md" and "memory_append" in flush["prompt"]
    assert all(k in flush["prompt"] for k in ("W world", "B something", "O opinion", "S observation", "@Name", "commits"))
    assert "memory_append" in flush["systemPrompt"] and flush["softThresholdTokens"] == 4000
    assert out["flushOff"] is None
    sources = lambda key: [h["source"] for h in out[key]]  # noqa: E731
    assert sources("authorizedPrivate") == ["sessions", "memory"]
    assert sources("authorizedGroup") == ["memory"] and sources("authorizedOther") == ["memory"]


def tool_error(gw: Gateway, res: dict, *needles: str) -> None:
    """A failing tool: an error for the caller (never ok with an empty list), zmem's message and a hint in the log."""
    assert res.get("ok") is False and res["error"]["type"] == "tool_error", json.dumps(res)[:600]
    log = gw.log_text()
    for needle in needles:
        assert needle in log, f"{needle!r} not in the gateway log:\n{log[-3000:]}"
    assert "hint:" in log


def test_zmem_missing_from_path_is_a_tool_error_with_a_hint(setup):
    gw = setup["gw"]
    res = gw.invoke("memory_search", {"query": "espresso"}, session_key="agent:nozmem:main")
    tool_error(gw, res, '"zmem-is-not-installed-here" is not on the gateway\'s PATH')


def test_a_broken_workspace_is_a_tool_error_with_zmems_message(setup):
    gw = setup["gw"]
    res = gw.invoke("memory_search", {"query": "note"}, session_key="agent:broken:main")
    # zmem's own refusal: the tools.invoke caller gets its message and hint, not "tool execution failed"
    input_error(res, "zmem.toml: invalid TOML", "hint: fix the file, or move it aside")


def test_a_query_past_the_time_limit_is_a_tool_error(setup):
    gw = setup["gw"]
    res = gw.invoke("memory_search", {"query": "espresso descaling kitchen " * 20}, session_key="agent:slow:main")
    tool_error(gw, res, "zmem did not answer memory_search within 1 ms")


def test_nothing_is_written_to_the_workspace_but_what_zmem_writes(setup):
    ws, before = setup["ws"], setup["before"]
    today = f"memory/{datetime.date.today().isoformat()}.md"
    after = snapshot(ws)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    foreign = {p for p in changed if not p.startswith((".git/", ".zmem/")) and p != today}
    assert not foreign, foreign
    assert not (ws / "AGENTS.md").exists() and not (ws / "SOUL.md").exists()


def input_error(res: dict, *needles: str) -> str:
    """A refused argument: the caller gets the message and its hint (HTTP 400), not "tool execution failed"."""
    assert res.get("ok") is False and res["error"]["type"] == "tool_error", json.dumps(res)[:600]
    message = res["error"]["message"]
    assert "\nhint: " in message and len(message.split("\n")) == 2, message
    for needle in needles:
        assert needle in message, message
    return message


@pytest.mark.parametrize("args, needle", [
    ({"from": 10.5, "lines": 1}, "from must be a whole number"),
    ({"from": -5, "lines": 1}, "from must be a whole number \u2265 1, not -5"),
    ({"from": "abc", "lines": 1}, 'from must be a whole number \u2265 1, not "abc"'),
    ({"from": 10, "lines": 0}, "lines must be a whole number \u2265 1, not 0"),
    ({"corpus": "bogus"}, "corpus must be one of memory, all"),
    ({"rm": "-rf"}, 'unknown argument "rm"'),
])
def test_memory_get_refuses_arguments_outside_its_schema(setup, args, needle):
    res = setup["gw"].invoke("memory_get", {"path": "memory/2026-11-27.md", **args})
    input_error(res, "memory_get: " + needle)


@pytest.mark.parametrize("args, needle", [
    ({"maxResults": 0}, "maxResults must be a whole number from 1 to 100, not 0"),
    ({"maxResults": 2.5}, "maxResults must be"),
    ({"maxResults": "abc"}, "maxResults must be"),
    ({"maxResults": 1000}, "maxResults must be a whole number from 1 to 100, not 1000"),
    ({"minScore": "high"}, "minScore must be a number"),
    ({"minScore": -1}, "minScore must be a number \u2265 0"),
    ({"corpus": "bogus"}, "corpus must be one of memory, sessions, all"),
    ({"max_results": 3}, 'unknown argument "max_results"'),
])
def test_memory_search_refuses_arguments_outside_its_schema(setup, args, needle):
    res = setup["gw"].invoke("memory_search", {"query": "Filler line", **args})
    input_error(res, "memory_search: " + needle)


def test_zmems_refusals_reach_a_tools_invoke_caller_with_their_hint(setup):
    gw = setup["gw"]
    input_error(gw.invoke("memory_search", {"query": "espresso", "since": "yesterday-ish"}),
                "cannot read the date 'yesterday-ish'", "hint: use a span like 7d")
    input_error(gw.invoke("memory_search", {"query": "a" * 20000}), "at most 10,000")
    input_error(gw.invoke("memory_blame", {"target": "MEMORY.md#L3-L3"}, session_key="agent:main:telegram:group:42"),
                "group scope")
    rpc = gw.cli("gateway", "call", "tools.invoke", "--port", str(gw.port), "--token", gw.token, "--json", "--timeout",
                 "60000", "--params", json.dumps({"name": "memory_search", "args": {"query": "x", "since": "soonish"},
                                                  "sessionKey": "agent:main:main"}))
    assert "cannot read the date 'soonish'" in rpc.stdout + rpc.stderr, rpc.stdout[-1000:] + rpc.stderr[-1000:]


def test_memory_get_cuts_a_line_longer_than_its_bound_and_says_where_it_goes_on(setup):
    gw, ws = setup["gw"], setup["ws"]
    line = (ws / "memory" / "2026-11-25.md").read_text().split("\n")[2]
    first = ok_payload(gw.invoke("memory_get", {"path": "memory/2026-11-25.md"}))
    assert first["text"] == "# 2026-11-25\n" and first["nextFrom"] == 3
    parts, got = [], ok_payload(gw.invoke("memory_get", {"path": "memory/2026-11-25.md", "from": 3}))
    while got.get("nextOffset") is not None:
        assert len(got["text"]) <= 12000 and got["citation"] == "memory/2026-11-25.md#L3-L3", (len(got["text"]), got)
        assert got["truncated"] is True and got["text"].endswith("\u2026") and got["nextFrom"] == 3
        parts.append(got["text"])
        got = ok_payload(gw.invoke("memory_get", {"path": "memory/2026-11-25.md", "from": 3, "offset": got["nextOffset"]}))
    assert len(parts) == 5 and len(got["text"]) <= 12000
    assert got["text"].startswith("\u2026") and got["text"].endswith("- after") and "nextFrom" not in got
    assert got["citation"] == "memory/2026-11-25.md#L3-L4"
    pieces = [p.removeprefix("\u2026").removesuffix("\u2026") for p in parts]
    assert "".join(pieces) + got["text"].removeprefix("\u2026").split("\n")[0] == line  # the whole line, in order
    # following a search citation of the line is bounded too
    cited = ok_payload(gw.invoke("memory_get", {"path": "memory/2026-11-25.md#L3-L3"}))
    assert len(cited["text"]) <= 12000 and cited["nextOffset"] == 11999


@pytest.mark.parametrize("session_key", ["agent:main:subagent:3f1c2a", "agent:main:cron:nightly:run:77",
                                         "agent:main:telegram:direct:+15550001", "agent:main:dashboard:x"])
def test_only_the_main_session_gets_memory_md(setup, session_key):
    gw = setup["gw"]
    main = ok_payload(gw.invoke("memory_search", {"query": "Peter concise replies WhatsApp"}))
    assert main["scope"] == "private" and main["results"][0]["path"] == "MEMORY.md"
    other = ok_payload(gw.invoke("memory_search", {"query": "Peter concise replies WhatsApp"}, session_key=session_key))
    assert other["scope"] == "group" and all(r["path"] != "MEMORY.md" for r in other["results"]), other
    got = ok_payload(gw.invoke("memory_get", {"path": "MEMORY.md#L3-L3"}, session_key=session_key))
    assert got["status"] == "error" and got["code"] == "MEMORY_PATH_NOT_ALLOWED" and "concise" not in json.dumps(got)


def test_a_plain_folder_with_init_off_is_refused_and_left_as_it_was(setup):
    gw, plain = setup["gw"], setup["plain"]
    for tool, args in (("memory_search", {"query": "espresso"}), ("memory_get", {"path": "memory/2026-11-20.md"})):
        tool_error(gw, gw.invoke(tool, args, session_key="agent:plain:main"),
                   f"{plain} is not a zmem workspace (not a git repository) and initWorkspace is false",
                   f"run `zmem init {plain}` yourself")
    assert snapshot(plain) == setup["plain_before"] and not (plain / ".zmem").exists() and not (plain / ".git").exists()


@pytest.mark.parametrize("agent, needle", [
    ("absent", "cannot run zmem: /nonexistent/bin/zmem does not exist"),  # at the zmem init step
    ("absentrepo", "cannot run zmem: /nonexistent/bin/zmem does not exist"),  # at the zmem mcp start
    ("notexec", "notexec.sh: permission denied (not an executable file)"),
    ("spaced", "is taken as one executable's name, and none has it"),
])
def test_a_bad_command_is_named_for_what_it_is(setup, agent, needle):
    gw = setup["gw"]
    tool_error(gw, gw.invoke("memory_search", {"query": "espresso"}, session_key=f"agent:{agent}:main"), needle)
    log = gw.log_text()
    if agent == "spaced":
        assert f'give an executable with arguments as an array: ["{sys.executable}","-m","zmem"]' in log
    if agent.startswith("absent"):
        assert "not on the gateway's PATH" not in log.split(needle, 1)[1].split("\n")[0]


def test_a_workspace_removed_under_a_running_zmem_is_named_as_such(setup):
    gw, base = setup["gw"], setup["base"]
    assert ok_payload(gw.invoke("memory_get", {"path": "memory/2026-11-20.md"}, session_key="agent:vanish:main"))["status"] == "ok"
    (base / "vanish").rename(base / "vanished")
    res = gw.invoke("memory_get", {"path": "memory/2026-11-20.md"}, session_key="agent:vanish:main")
    tool_error(gw, res, f"workspace directory does not exist: {base / 'vanish'}")
