"""`zmem mcp` end to end: the SDK's own client (stdio_client + ClientSession) drives a real
`python -m zmem -C <ws> mcp` subprocess over a real git workspace."""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from helpers.workspace import commit_all, git, run, today_log, write, zmem_proc
from zmem.install import pip_install

pytest.importorskip("mcp")

from helpers.mcp_client import call, error, session  # noqa: E402

TOOLS = {"memory_search", "memory_get", "memory_append", "graph_search", "memory_blame", "memory_recall_as_of",
         "memory_context"}


def lines_of(root: Path, rel: str, a: int, b: int) -> str:
    return "\n".join((root / rel).read_text(encoding="utf-8").split("\n")[a - 1:b])


@pytest.mark.slow
def test_tools_are_listed_with_descriptions_for_a_model(ws):
    async def go():
        async with session(ws) as s:
            return (await s.list_tools()).tools
    tools = {t.name: t for t in asyncio.run(go())}
    assert set(tools) == TOOLS
    for t in tools.values():  # when to use it, and what a citation is (tests/mcp/test_mcp_budget.py: its size)
        assert "#Lx-Ly" in t.description and len(t.description) > 100, t.name
    assert "cite" in tools["memory_search"].description and "memory_get" in tools["memory_search"].description
    assert "exactly" in tools["memory_get"].description
    assert set(tools["memory_get"].input_schema["properties"]) == {"path", "from", "lines"}  # OpenClaw's names
    assert tools["memory_search"].input_schema["required"] == ["query"]
    assert tools["memory_search"].annotations.read_only_hint and not tools["memory_append"].annotations.read_only_hint


@pytest.mark.slow
def test_search_then_get_reads_exactly_the_cited_lines(ws):
    async def go():
        async with session(ws) as s:
            found = await call(s, "memory_search", query="gateway Mac Studio")
            hit = found["results"][0]
            back = await call(s, "memory_get", path=hit["citation"])
            ranged = await call(s, "memory_get", path=hit["path"], **{"from": hit["startLine"]},
                                lines=hit["endLine"] - hit["startLine"] + 1)
            one = await call(s, "memory_get", path="memory/2025-11-24.md", **{"from": 6, "lines": 1})
            # OpenClaw's parameter names work too; min_score filters
            camel = await call(s, "memory_search", query="Peter", maxResults=1)
            none = await call(s, "memory_search", query="gateway Mac Studio", min_score=1.5)
            # the CLI's --path and --max-chars
            one_file = await call(s, "memory_search", query="gateway Peter", path="memory/2025-11-27.md")
            budget = await call(s, "memory_search", query="gateway Peter", max_chars=60)
            return found, hit, back, ranged, one, camel, none, one_file, budget
    found, hit, back, ranged, one, camel, none, one_file, budget = asyncio.run(go())
    assert [r["path"] for r in one_file["results"]] == ["memory/2025-11-27.md"]
    assert sum(len(r["snippet"]) for r in budget["results"]) <= 60
    assert set(found) >= {"results", "provider", "model", "mode", "warnings"}
    assert found["provider"] == "none" and found["mode"] == "bm25" and found["warnings"] == []  # the default
    assert hit["path"] == "memory/2025-11-24.md" and hit["source"] == "memory"
    assert set(hit) >= {"path", "startLine", "endLine", "score", "snippet", "source", "citation"}
    assert hit["citation"] == f"{hit['path']}#L{hit['startLine']}-L{hit['endLine']}"
    assert "gateway on the Mac Studio" in hit["snippet"]
    assert hit["snippet"] == lines_of(ws, hit["path"], hit["startLine"], hit["endLine"])
    assert back["text"] == hit["snippet"] and back["from"] == hit["startLine"]
    assert back["lines"] == hit["endLine"] - hit["startLine"] + 1 and back["path"] == hit["path"]
    assert ranged["text"] == hit["snippet"]
    assert one == {**one, "path": "memory/2025-11-24.md", "from": 6, "lines": 1,
                   "text": "- Peter prefers short answers on WhatsApp."}
    assert len(camel["results"]) == 1
    assert none["results"] == []


@pytest.mark.slow
def test_files_written_behind_the_servers_back_are_found_at_once(ws):
    """The server skips the stat sweep only while nothing changed: writes, deletes, new directories
    and commits made by other processes are seen by the very next call."""
    async def go():
        async with session(ws) as s:
            out = [await call(s, "memory_search", query="quokka")]
            write(ws, "memory/2025-12-01.md", "# 2025-12-01\n\n- A quokka visited the office.\n")
            out.append(await call(s, "memory_search", query="quokka"))
            write(ws, "memory/2025-12-01.md", "# 2025-12-01\n\n- A wombat visited the office.\n")
            out.append(await call(s, "memory_search", query="quokka"))
            write(ws, "bank/zoo/animals.md", "# Animals\n\n- The quokka is a marsupial.\n")  # a new directory
            out.append(await call(s, "memory_search", query="quokka"))
            commit_all(ws, "zoo")
            (ws / "bank/zoo/animals.md").unlink()
            out.append(await call(s, "memory_search", query="quokka"))
            git(ws, "checkout", "-q", "--", "bank/zoo/animals.md")
            out.append(await call(s, "memory_search", query="marsupial"))
            return out
    out = asyncio.run(go())
    paths = [[r["path"] for r in o["results"]] for o in out]
    assert paths == [[], ["memory/2025-12-01.md"], [], ["bank/zoo/animals.md"], [], ["bank/zoo/animals.md"]]


@pytest.mark.slow
def test_ignore_rule_changes_reach_the_running_server(ws):
    """.gitignore in a watched directory and .git/info/exclude (outside every watched directory):
    a file they newly ignore drops out of the very next answer, and comes back when un-ignored."""
    write(ws, "memory/2025-12-02.md", "# 2025-12-02\n\n- The okapi lives in the Congo.\n")
    exclude = ws / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)

    async def go():
        async with session(ws) as s:
            out = [await call(s, "memory_search", query="okapi")]
            write(ws, "memory/.gitignore", "2025-12-02.md\n")
            out.append(await call(s, "memory_search", query="okapi"))
            (ws / "memory/.gitignore").unlink()
            out.append(await call(s, "memory_search", query="okapi"))
            exclude.write_text("memory/2025-12-02.md\n")
            out.append(await call(s, "memory_search", query="okapi"))
            exclude.write_text("")
            out.append(await call(s, "memory_search", query="okapi"))
            return out
    paths = [[r["path"] for r in o["results"]] for o in asyncio.run(go())]
    assert paths == [["memory/2025-12-02.md"], [], ["memory/2025-12-02.md"], [], ["memory/2025-12-02.md"]]


@pytest.mark.slow
def test_a_replaced_model_file_is_loaded_again(ws, tmp_path):
    """`zmem model import --force` over the configured model_path, then `zmem embed`: the running
    server embeds queries with the new model (the stored vectors are its), not the one it loaded."""
    pytest.importorskip("llama_cpp")
    from helpers.tiny_bert import make_tiny_bert
    from zmem.embedders.modelimport import import_model
    model = tmp_path / "models" / "current.gguf"
    import_model(make_tiny_bert(tmp_path / "a", seed=1), model)
    cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[embeddings]\nprovider = "local"\nmodel_path = "{model}"\n')
    assert run(["-C", str(ws), "embed"]).exit_code == 0

    async def go():
        async with session(ws) as s:
            first = await call(s, "memory_search", query="gateway")
            import_model(make_tiny_bert(tmp_path / "b", seed=2), model, force=True)
            assert run(["-C", str(ws), "embed"]).exit_code == 0
            return first, await call(s, "memory_search", query="gateway")
    first, second = asyncio.run(go())
    assert first["mode"] == second["mode"] == "hybrid", (first["warnings"], second["warnings"])
    assert first["model"] != second["model"]
    assert not any("different embedding model" in w for w in second["warnings"]), second["warnings"]


@pytest.mark.slow
def test_append_then_search_finds_it_and_commits(ws):
    today = dt.date.today().isoformat()
    async def go():
        async with session(ws) as s:
            note = await call(s, "memory_append", text="The zebra crossing moved to Elm Street")
            found = await call(s, "memory_search", query="zebra Elm Street")
            fact = await call(s, "memory_append", text="Prefers oolong tea", retain="O", entities=["Peter"],
                              confidence=0.7)
            rel = await call(s, "memory_append", text="@Peter lives_in @Lisbon", retain="R")
            facts = await call(s, "memory_search", query="oolong", entity="Peter")
            graph = await call(s, "graph_search", name="@peter")
            draft = await call(s, "memory_append", text="uncommitted walrus note", commit=False)
            walrus = await call(s, "memory_search", query="walrus")
            return note, found, fact, rel, facts, graph, draft, walrus
    note, found, fact, rel, facts, graph, draft, walrus = asyncio.run(go())
    assert note["path"] == f"memory/{today}.md" and note["committed"] and note["citation"] == f"{note['path']}#L{note['line']}"
    hit = found["results"][0]
    assert hit["path"] == note["path"] and hit["startLine"] <= note["line"] <= hit["endLine"]
    assert "zebra crossing" in hit["snippet"]
    assert git(ws, "log", "--format=%s", "-4").splitlines() == [f"zmem append: memory/{today}.md"] * 3 + ["notes"]
    assert git(ws, "log", "-1", "--format=%H") == rel["commit"]
    assert fact["text"] == "- O(c=0.7) @Peter: Prefers oolong tea"
    f = facts["results"][0]
    assert f["fact"]["kind"] == "opinion" and f["fact"]["confidence"] == 0.7 and f["citation"].startswith(note["path"])
    assert any(e["type"] == "lives_in" and e["target_name"] == "Lisbon" for e in graph["edges"])
    assert graph["entity"]["name"] == "Peter" and {n["name"] for n in graph["nodes"]} >= {"Peter", "Lisbon"}
    assert not draft["committed"] and walrus["results"][0]["path"] == note["path"]  # indexed, not committed
    assert git(ws, "status", "--porcelain") == f"M memory/{today}.md"


@pytest.mark.slow
def test_group_scope_never_returns_memory_md(ws):
    write(ws, "MEMORY.md", "# Memory\n\n- The alarm code is zebra-4411.\n\n## Retain\n\n- R @Peter married_to @Ana\n")
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n- Saw a zebra at the zoo.\n\n## Retain\n\n"
          "- R @Peter lives_in @Lisbon\n")
    commit_all(ws, "private", date="2025-11-28T10:00:00+00:00")

    async def go(*args):
        async with session(ws, *args) as s:
            out = {"search": await call(s, "memory_search", query="zebra", max_results=20),
                   "as_of": await call(s, "memory_recall_as_of", query="zebra", as_of="HEAD", max_results=20),
                   "graph": await call(s, "graph_search", name="Peter")}
            if args:
                out["get"] = await error(s, "memory_get", path="MEMORY.md#L3")
                out["get_lower"] = await error(s, "memory_get", path="memory.md")
                out["blame"] = await error(s, "memory_blame", target="MEMORY.md#L3")
                out["blame_query"] = await call(s, "memory_blame", target="zebra")
            return out
    private = asyncio.run(go())
    assert "MEMORY.md" in {r["path"] for r in private["search"]["results"]}
    assert {e["type"] for e in private["graph"]["edges"]} == {"lives_in", "married_to"}
    group = asyncio.run(go("--scope", "group"))
    for key in ("search", "as_of"):
        paths = {r["path"] for r in group[key]["results"]}
        assert paths == {"memory/2025-11-28.md"}, (key, paths)
        assert "zebra-4411" not in json.dumps(group[key])
    assert [e["type"] for e in group["graph"]["edges"]] == ["lives_in"]
    assert "MEMORY.md" not in json.dumps(group["graph"]) and "Ana" not in {n["name"] for n in group["graph"]["nodes"]}
    assert "private" in group["get"] and "scope" in group["get"]
    assert "zebra-4411" not in group["get"] + group["get_lower"] + group["blame"]
    assert [r["path"] for r in group["blame_query"]["ranges"]] == ["memory/2025-11-28.md"]


@pytest.mark.slow
def test_errors_are_tool_errors_and_the_server_keeps_answering(ws):
    async def go(errlog):
        async with session(ws, errlog=errlog) as s:
            out = {
                "escape": await error(s, "memory_get", path="../etc/passwd"),
                "not_md": await error(s, "memory_get", path="zmem.toml"),
                "past_end": await error(s, "memory_get", path="memory/2025-11-24.md", **{"from": 99}),
                "entity": await error(s, "graph_search", name="Nobody"),
                "rev": await error(s, "memory_recall_as_of", query="x", as_of="not-a-rev"),
                "empty": await error(s, "memory_append", text="   "),
                "kind": await error(s, "memory_search", query="x", kind="feelings"),
                "bad_arg": await error(s, "memory_search", query="x", max_results=0),
                "since": await error(s, "memory_search", query="x", since="someday"),
                "blame": await error(s, "memory_blame", target="../secret.md#L1"),
            }
            out["after"] = await call(s, "memory_search", query="WhatsApp")
            return out
    with tempfile.TemporaryFile("w+") as errlog:
        out = asyncio.run(go(errlog))
        errlog.seek(0)
        stderr = errlog.read()
    assert "escapes the workspace" in out["escape"] and "hint:" in out["escape"]
    assert all(not v.startswith("Error executing tool") for v in out.values() if isinstance(v, str))  # zmem's own line
    assert "zmem.toml" in out["not_md"]
    assert "past the end" in out["past_end"]
    assert "no entity named 'Nobody'" in out["entity"] and "hint:" in out["entity"]
    assert "neither a date nor a revision" in out["rev"]
    assert "nothing to append" in out["empty"]
    assert "not a memory file" in out["blame"]
    assert "kind" in out["kind"] and "greater than or equal to 1" in out["bad_arg"]
    assert "internal error" not in json.dumps(out)
    assert out["after"]["results"][0]["path"] == "memory/2025-11-24.md"
    assert "Traceback" not in stderr, stderr


@pytest.mark.slow
def test_blame_and_recall_as_of_return_real_history(ws):
    write(ws, "memory/2025-11-01.md", "# 2025-11-01\n\n- Peter lives in Lisbon\n")
    a = commit_all(ws, "lisbon", date="2025-11-01T10:00:00+00:00")
    write(ws, "memory/2025-11-01.md", "# 2025-11-01\n\n- Peter lives in Porto\n")
    b = commit_all(ws, "porto", date="2025-11-10T10:00:00+00:00")

    async def go():
        async with session(ws) as s:
            then = await call(s, "memory_recall_as_of", query="Peter lives", as_of="2025-11-05")
            back = await call(s, "memory_get", path=then["results"][0]["citation"])
            now = await call(s, "memory_recall_as_of", query="Peter lives", as_of=b)
            blame = await call(s, "memory_blame", target="memory/2025-11-01.md#L3")
            return then, back, now, blame
    then, back, now, blame = asyncio.run(go())
    assert then["as_of"]["commit"] == a and then["as_of"]["date"].startswith("2025-11-01")
    hit = then["results"][0]
    assert hit["citation"] == f"memory/2025-11-01.md@{a[:10]}#L{hit['startLine']}-L{hit['endLine']}"
    assert "Lisbon" in hit["snippet"] and back["text"] == hit["snippet"] and back["rev"] == a
    assert now["as_of"]["commit"] == b and "Porto" in now["results"][0]["snippet"]
    [r] = blame["ranges"]
    assert r["citation"] == "memory/2025-11-01.md#L3-L3"
    [line] = r["lines"]
    assert line["text"] == "- Peter lives in Porto" and line["commit"] == b
    assert line["date"].startswith("2025-11-10") and line["author"] == "Test Author" and line["summary"] == "porto"
    # the same JSON as `zmem blame --json`
    cli = json.loads(run(["-C", str(ws), "blame", "memory/2025-11-01.md#L3", "--json"]).stdout)
    assert cli == blame  # the CLI and the tool return the same object, warnings included


def _use_and_embed(ws, server) -> None:
    """The loopback embeddings server as the provider, every chunk embedded."""
    cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[embeddings]\nprovider = "openai"\nmodel = "fake-embed"\nbase_url = "{server.base_url}"\n'
                   'api_key_env = "ZMEM_TEST_KEY"\n')
    os.environ["ZMEM_TEST_KEY"] = "sk-test-123"
    assert run(["-C", str(ws), "index"]).exit_code == 0


@pytest.mark.slow
def test_slow_embedding_provider_times_out_into_bm25_with_a_warning(ws):
    from helpers.embed_server import EmbeddingServer
    with EmbeddingServer() as server:
        _use_and_embed(ws, server)  # every chunk embedded

        async def go():
            async with session(ws, "--query-timeout", "0.3") as s:
                fast = await call(s, "memory_search", query="which machine runs the relay")
                server.faults = [("slow", 5.0)] * 4  # far from the 0.3 s timeout: noisy machines
                t = time.perf_counter()
                slow = await call(s, "memory_search", query="which machine runs the relay")
                return fast, slow, time.perf_counter() - t
        fast, slow, seconds = asyncio.run(go())
    assert fast["mode"] == "hybrid" and fast["provider"] == "openai" and fast["model"] == "fake-embed"
    assert fast["results"][0]["path"] == "memory/2025-11-24.md"  # found by meaning ("relay" ~ "gateway")
    assert slow["mode"] == "bm25" and seconds < 4.0  # did not wait for the answer
    assert any("query embedding failed" in w and "keyword" in w for w in slow["warnings"]), slow["warnings"]


def test_without_the_sdk_zmem_mcp_fails_with_a_hint(ws, monkeypatch):
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")] or ["mcp"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if the SDK were not installed
    monkeypatch.delitem(sys.modules, "zmem.mcp.server", raising=False)
    res = run(["-C", str(ws), "mcp"])
    assert res.exit_code == 1
    assert res.stderr.splitlines() == ["zmem: `zmem mcp` needs the mcp package (version 2.3 or later), which is not "
                                       "installed", f"hint: {pip_install('mcp')}"]


def test_other_commands_do_not_import_the_sdk(ws):
    code = ("import sys; from zmem.cli.app import main; sys.argv = ['zmem', '-C', sys.argv[1], 'recall', 'gateway']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('MCP' if 'mcp' in sys.modules else 'NO-MCP', file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, str(ws)], capture_output=True, text=True, timeout=60)
    assert proc.stderr.strip().endswith("NO-MCP"), proc.stderr
    assert "gateway" in proc.stdout


def test_the_stat_sweep_is_skipped_only_while_nothing_changed(ws, monkeypatch):
    import zmem.index.catchup
    from zmem.memory import Memory
    calls = []
    real = zmem.index.catchup.catch_up
    monkeypatch.setattr(zmem.index.catchup, "catch_up", lambda *a, **k: calls.append(1) or real(*a, **k))
    memory = Memory(ws, watch=True)  # as the server keeps it
    try:
        search = lambda q: [r.path for r in memory.recall(q, k=6).results]  # noqa: E731
        assert search("gateway") == ["memory/2025-11-24.md"] and len(calls) == 1
        if memory._source is False:
            pytest.skip("no inotify here: every call catches up")
        search("gateway")
        search("Peter")
        assert len(calls) == 1  # nothing changed: no sweep
        commit_all(ws, "empty")  # HEAD moved
        search("gateway")
        assert len(calls) == 2
        write(ws, "MEMORY.md", "# Memory\n\n- The okapi lives in Congo.\n")
        assert search("okapi") == ["MEMORY.md"] and len(calls) == 3
        search("okapi")
        assert len(calls) == 3
    finally:
        memory.close()


@pytest.mark.slow
def test_query_embedding_is_one_attempt_and_a_timed_out_provider_is_not_waited_for_again(ws):
    # the endpoint accepts the query and never answers: a call that returns at all gave up at its
    # timeout, so no clock is read (these machines are shared and noisy); the request counts prove
    # that nothing retried or waited again
    from helpers.embed_server import EmbeddingServer
    with EmbeddingServer() as server:
        _use_and_embed(ws, server)
        # the library (what the CLI calls): one attempt bounded by the timeout, no retry
        from zmem.memory import Memory
        server.faults = [("hang",)] * 4
        before = len(server.embedding_calls())
        with Memory.open(ws) as memory:
            res = memory.recall("which machine runs the relay", query_timeout=1.0, background_embed=False)
        assert res.mode == "bm25"  # gave up at the timeout
        assert len(server.embedding_calls()) == before + 1
        assert any("within 1 s" in w for w in res.warnings), res.warnings
        # another process (the next CLI recall) does not wait for it either: keywords, no request
        proc = zmem_proc("-C", str(ws), "recall", "which machine runs the relay", "--json")
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert out["mode"] == "bm25" and any("timed out recently" in w for w in out["warnings"]), out
        assert len(server.embedding_calls()) == before + 1
        (ws / ".zmem" / "query-timeouts.json").unlink()  # the server below times out on its own
        server.faults = [("hang",)] * 4

        async def go():
            async with session(ws, "--query-timeout", "1") as s:
                out = []
                for _ in range(3):
                    out.append((await call(s, "memory_search", query="which machine runs the relay"),
                                len(server.embedding_calls())))
                return out
        (first, n1), (second, n2), (third, n3) = asyncio.run(asyncio.wait_for(go(), 300))  # a safety net only
    assert first["mode"] == "bm25" and n1 == before + 2
    assert any("query embedding failed" in w for w in first["warnings"]), first["warnings"]
    # the next calls do not pay the timeout again: keywords at once, with a warning, no request
    for out in (second, third):
        assert out["mode"] == "bm25"
        assert any("timed out recently" in w for w in out["warnings"]), out["warnings"]
    assert n3 == n2 == n1


@pytest.mark.slow
def test_group_scope_graph_search_treats_private_facts_as_nonexistent(ws):
    write(ws, "MEMORY.md", "# Memory\n\n## Retain\n\n- W @Zora @Peter: Zora is Peter's therapist.\n"
          "- W @Peter @Lisbon: Peter's private Lisbon address.\n")
    write(ws, "bank/people/zed.md", "# Zed\n\n## Retain\n\n- W @Zed @Peter: Zed lends Peter money.\n")
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- W @Peter @Lisbon: Peter moved to Lisbon.\n")
    (ws / "zmem.toml").write_text('[scopes]\nprivate = ["bank/people/**"]\n')
    commit_all(ws, "facts")

    async def go(*args):
        async with session(ws, *args) as s:
            peter = await call(s, "graph_search", name="Peter")
            errors = [await error(s, "graph_search", name=n) for n in ("Zora", "Zed")] if args else None
            return peter, errors
    private, _ = asyncio.run(go())
    assert private["entity"]["facts"] == 4 and {"zora", "zed"} <= {n["key"] for n in private["nodes"]}
    group, (zora, zed) = asyncio.run(go("--scope", "group"))
    assert "no entity named 'Zora'" in zora and "no entity named 'Zed'" in zed
    assert "Zora" not in zora.split("\n", 1)[1] and "Zed" not in zed.split("\n", 1)[1]  # not suggested either
    assert group["entity"]["facts"] == 1  # counts from public facts only
    assert {n["key"] for n in group["nodes"]} == {"peter", "lisbon"}
    [edge] = group["edges"]
    assert edge["count"] == 1 and edge["evidence"] == ["memory/2025-11-28.md#L5"]
    lisbon = next(n for n in group["nodes"] if n["key"] == "lisbon")
    assert lisbon["facts"] == 1
    blob = json.dumps(group)
    assert "MEMORY.md" not in blob and "bank/people" not in blob and "therapist" not in blob


@pytest.mark.slow
def test_errors_name_tool_parameters_and_validation_errors_are_one_line_with_a_hint(ws):
    async def go():
        async with session(ws) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            return tools, {
                "bad_arg": await error(s, "memory_search", query="x", max_results=0),
                "kind": await error(s, "memory_search", query="x", kind="feelings"),
                "missing": await error(s, "memory_get"),
                "from0": await error(s, "memory_get", path="memory/2025-11-24.md", **{"from": 0}),
                "past_end": await error(s, "memory_get", path="memory/2025-11-24.md", **{"from": 99}),
                "confidence": await error(s, "memory_append", text="x", confidence=0.5),
                "empty": await error(s, "memory_append", text="  "),
                # names a model carries over from the CLI: dropping them would silently not filter
                "unknown": await error(s, "memory_search", query="x", k=3, until="2025-12-01"),
                "unknown_get": await error(s, "memory_get", path="memory/2025-11-24.md", start_line=3),
            }, {k: await call(s, "memory_search", query="Peter", kind=k) for k in ("Opinion", "OPINIONS", "o")}
    tools, out, kinds = asyncio.run(go())
    for key, text in out.items():
        lines = text.split("\n")
        assert len(lines) == 2 and lines[1].startswith("hint: "), (key, text)
        assert "pydantic" not in text and "http" not in text and "validation error" not in text, (key, text)
    assert out["bad_arg"].startswith("invalid arguments for memory_search: max_results should be greater than or "
                                     "equal to 1 (got 0)")
    assert "hint: memory_search takes query, max_results, min_score" in out["bad_arg"]
    assert "kind should be 'world'" in out["kind"] and "(got 'feelings')" in out["kind"]
    assert kinds["Opinion"] == kinds["OPINIONS"] == kinds["o"]  # what models write for kind="opinion"
    assert out["missing"].startswith("invalid arguments for memory_get: path is required")
    assert "from should be greater than or equal to 1" in out["from0"]
    # hints name the tool's parameters, not CLI flags
    assert out["past_end"].endswith("hint: cite a line from 1 to 6") and "--" not in out["past_end"]
    assert "--" not in out["confidence"] and 'retain="O"' in out["confidence"]
    assert 'text="' in out["empty"] and "zmem append" not in out["empty"]
    assert out["unknown"].startswith("invalid arguments for memory_search: unknown parameters 'k', 'until'")
    assert "max_results" in out["unknown"].split("\nhint: ")[1]
    assert out["unknown_get"].startswith("invalid arguments for memory_get: unknown parameter 'start_line'")
    assert "from" in out["unknown_get"].split("\nhint: ")[1]
    assert "Retain facts of this kind" in out["kind"].split("\nhint: ")[1]  # a parameter's own description


@pytest.mark.slow
def test_mcp_append_with_nul_is_an_error_result(ws):
    pytest.importorskip("mcp")
    from helpers.mcp_client import error, session

    async def go():
        async with session(ws) as s:
            return await error(s, "memory_append", text="null\u0000byte")
    assert "control character" in asyncio.run(go())
    assert not (ws / today_log()).exists() and git(ws, "status", "--porcelain") == ""


LONG = "a" * 300


@pytest.mark.slow
def test_memory_get_and_memory_blame_over_mcp_with_a_name_too_long(ws):
    pytest.importorskip("mcp")
    from helpers.mcp_client import error, session

    async def go():
        async with session(ws) as s:
            return [await error(s, "memory_get", path=f"memory/{LONG}.md"),
                    await error(s, "memory_blame", target=f"memory/{LONG}.md#L1")]
    for text in asyncio.run(go()):
        assert "no such memory file" in text and "hint:" in text and "internal error" not in text, text
