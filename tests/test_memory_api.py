"""zmem.Memory, the Python API: an agent written in Python uses memory without a subprocess. Real
git workspaces and real commits; results are the typed classes, and their to_json() is exactly what
the CLI prints with --json."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import zmem
from helpers.workspace import commit_all, git, run, run_json, write


def test_import_zmem_exports_the_api_and_stays_cheap():
    code = ("import sys, zmem; before = set(sys.modules); m = zmem.Memory; "
            "print(sorted(x for x in before if x.startswith('zmem'))); print(zmem.Memory.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["['zmem', 'zmem.version']", "zmem.memory"]
    assert set(zmem.__all__) >= {"Memory", "ZmemError", "Recall", "Lines", "Appended", "Facts", "Blame", "Log"}
    for name in zmem.__all__:
        assert getattr(zmem, name) is not None
    with pytest.raises(AttributeError):
        zmem.NoSuchThing  # noqa: B018


def test_recall_and_get_return_typed_results_that_print_as_the_cli_does(ws):
    with zmem.Memory.open(ws) as mem:
        found = mem.recall("gateway Mac Studio", k=3)
        assert isinstance(found, zmem.Recall) and isinstance(found.results[0], zmem.Hit)
        hit = found.results[0]
        assert hit.path == "memory/2025-11-24.md" and not found.stale
        lines = mem.get(hit.citation)
        assert isinstance(lines, zmem.Lines)
        assert lines.text == hit.snippet and lines.citation == hit.citation
        cli, _ = run_json(["-C", str(ws), "recall", "gateway Mac Studio", "-k", "3", "--json"])
        assert found.to_json() == cli
        cli, _ = run_json(["-C", str(ws), "get", hit.citation, "--json"])
        assert lines.to_json() == cli


def test_append_commits_and_is_recallable_at_once(ws):
    with zmem.Memory.open(ws) as mem:
        note = mem.append("The okapi lives in the Congo.")
        assert isinstance(note, zmem.Appended) and note.committed and note.warnings == []
        assert git(ws, "log", "-1", "--format=%H").strip() == note.commit
        top = mem.recall("okapi").results[0]
        assert (top.path, top.start_line) == (note.path, note.line)
        fact = mem.append("Moved to Porto.", retain="w", entities=["Peter"])
        assert mem.get(fact.citation).text == "- W @Peter: Moved to Porto."
        facts = mem.facts(entity="Peter")
        assert isinstance(facts, zmem.Facts) and [f.text for f in facts.facts] == ["Moved to Porto."]
        assert facts.to_json() == run_json(["-C", str(ws), "facts", "--entity", "Peter", "--json"])[0]


def test_blame_log_and_diff_follow_the_commits(ws):
    first = git(ws, "rev-parse", "HEAD").strip()
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- W @Ana: Lives in Lisbon.\n")
    commit_all(ws, "Ana's day")
    with zmem.Memory.open(ws) as mem:
        blamed = mem.blame("memory/2025-11-28.md#L5")
        assert isinstance(blamed, zmem.Blame)
        line = blamed.ranges[0].lines[0]
        assert line["summary"] == "Ana's day" and line["commit"] == git(ws, "rev-parse", "HEAD").strip()
        assert blamed.to_json() == run_json(["-C", str(ws), "blame", "memory/2025-11-28.md#L5", "--json"])[0]
        log = mem.log("@Ana")
        assert isinstance(log, zmem.Log) and log.type == "entity"
        assert [e["event"] for e in log.events] == ["added"]
        file_log = mem.log("memory/2025-11-28.md")
        assert file_log.type == "file" and [e["summary"] for e in file_log.events] == ["Ana's day"]
        changed = mem.diff(first)
        assert isinstance(changed, zmem.BeliefDiff)
        assert [f["text"] for f in changed.facts["added"]] == ["Lives in Lisbon."]
        assert changed.to_json() == run_json(["-C", str(ws), "diff", first, "--json"])[0]


def test_entity_graph_opinions_and_reflect(ws):
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- R @Ana lives_in @Lisbon\n"
          "- O(c=0.8) @Ana: Prefers tea.\n")
    commit_all(ws)
    with zmem.Memory.open(ws) as mem:
        ana = mem.entity("ana")
        assert isinstance(ana, zmem.EntityReport) and ana.entity.name == "Ana"
        assert [r["name"] for r in ana.related] == ["Lisbon"]
        hood = mem.graph("Ana")
        assert isinstance(hood, zmem.Neighbourhood) and [e.type for e in hood.edges] == ["lives_in"]
        assert hood.to_json() == run_json(["-C", str(ws), "graph", "Ana", "--json"])[0]
        ops = mem.opinions()
        assert isinstance(ops, zmem.Opinions) and ops.opinions == [] and ops.awaiting_reflect == 1
        done = mem.reflect()
        assert isinstance(done, zmem.ReflectResult) and done.commit and "bank/opinions.md" in done.files
        assert [o.statement for o in mem.opinions("Ana").opinions] == ["Prefers tea."]


def test_index_status_and_doctor(ws):
    with zmem.Memory.open(ws) as mem:
        report = mem.index(embed=False)
        assert isinstance(report, zmem.IndexReport) and not report.catch_up.stale
        status = mem.status()
        assert isinstance(status, zmem.Status) and not status.stale
        cli = json.loads(run(["-C", str(ws), "status", "--json"]).stdout)
        assert status.to_json().keys() == cli.keys() and status.files == cli["files"] > 0
        checks = mem.doctor()
        assert all(isinstance(c, zmem.Check) for c in checks)
        assert ("ok", "workspace") in {(c.level, c.name) for c in checks}


def test_the_context_manager_closes_the_index_connection(ws):
    from zmem.store import db
    with zmem.Memory.open(ws) as mem:
        mem.recall("gateway")
        conn = mem.conn
        conn.execute("SELECT 1")
    with pytest.raises(db.sqlite.ProgrammingError):  # closed
        conn.execute("SELECT 1")
    assert mem.recall("gateway").results  # a closed Memory opens again when used
    mem.close()


def test_one_connection_and_one_catch_up_per_memory(ws, monkeypatch):
    import zmem.index.catchup
    opened, caught_up = [], []
    real_open, real_catch_up = zmem.index.catchup.open_index, zmem.index.catchup.catch_up
    monkeypatch.setattr(zmem.index.catchup, "open_index", lambda *a, **k: opened.append(1) or real_open(*a, **k))
    monkeypatch.setattr(zmem.index.catchup, "catch_up", lambda *a, **k: caught_up.append(1) or real_catch_up(*a, **k))
    with zmem.Memory.open(ws) as mem:
        mem.recall("gateway")
        mem.facts()
        mem.graph_export()
        mem.blame("memory/2025-11-24.md#L5")
    assert len(opened) == 1 and len(caught_up) == 1


def test_errors_are_zmem_errors_with_a_hint(ws, tmp_path):
    with pytest.raises(zmem.ZmemError) as no_ws:
        zmem.Memory.open(tmp_path / "nowhere")
    assert no_ws.value.hint
    with zmem.Memory.open(ws) as mem:
        with pytest.raises(zmem.ZmemError) as unknown:
            mem.graph("Nobody")
        assert unknown.value.hint
        with pytest.raises(zmem.ZmemError):
            mem.get("../etc/passwd")


def test_a_group_scope_never_returns_private_files(ws):
    write(ws, "MEMORY.md", "# Memory\n\n- The gateway password hint is in the safe.\n")
    commit_all(ws)
    with zmem.Memory.open(ws, scope="group") as mem:
        assert "MEMORY.md" not in [h.path for h in mem.recall("gateway").results]
        with pytest.raises(zmem.ZmemError):
            mem.get("MEMORY.md")
        assert "MEMORY.md" in [h.path for h in mem.recall("gateway", scope="private").results]


@pytest.mark.slow
def test_the_documented_python_example_runs_on_the_demo(tmp_path):
    """docs/agents.md's example (the README's before issue 26) runs and prints the JSON it says."""
    import json
    import re
    from pathlib import Path
    page = (Path(__file__).resolve().parents[1] / "docs" / "agents.md").read_text(encoding="utf-8")
    example = re.search(r"^## Python API.*?^```python\n(.*?)^```", page, re.S | re.M).group(1)
    assert run(["demo", str(tmp_path / "zmem-demo")]).exit_code == 0
    proc = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("memory/") and any(line.startswith("world Moved to Porto. memory/") for line in lines)
    blame = json.loads(lines[-1])  # JSON, as the example says, not a dict's repr
    assert blame["target"].startswith("memory/") and blame["ranges"][0]["lines"]


@pytest.mark.slow
def test_the_cli_and_the_mcp_server_blame_alike_shallow_clone_notes_included(tmp_path, ws):
    """Both front ends go through Memory.blame: the MCP tool used to leave out the shallow-clone
    warning the CLI gives."""
    import asyncio
    pytest.importorskip("mcp")
    from helpers.mcp_client import call, session
    for day in ("01", "02", "03"):
        write(ws, f"memory/2025-12-{day}.md", f"# 2025-12-{day}\n\n- garden note {day}\n")
        commit_all(ws, f"day {day}")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{ws}", str(shallow)], check=True)
    target = "memory/2025-12-03.md#L3"
    cli, _ = run_json(["-C", str(shallow), "blame", target, "--json"])
    assert any("shallow clone" in w for w in cli["warnings"]), cli

    async def go():
        async with session(shallow) as s:
            return await call(s, "memory_blame", target=target)
    assert asyncio.run(asyncio.wait_for(go(), 120)) == cli
