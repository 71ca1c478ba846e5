"""A memory tool call inside a real OpenClaw agent turn (not a test), where bench_openclaw.py calls
tools.invoke: how long the gateway takes from the model's tool call to the model's next request,
which carries the result, for memory_search and memory_get; how much of it the plugin's execute took
(ZMEM_TRACE); and zmem's in-process recall and get on the same workspace.

    python bench/bench_openclaw_turn.py --out /tmp/zmem-oc --files 10000 [--turns 12]

The model is the tests' scripted OpenAI-compatible server on loopback (tests/helpers/openclaw_model.py):
its first answer in a turn is the tool call, its second a final text. Each turn is `openclaw agent
--session-key agent:main:bench-N --message …` against the gateway (a new session each turn, so no
history grows). The step is timed on the model's side, CLOCK_MONOTONIC as the trace: from the moment
the tool call is sent to the moment the next request arrives. The first turn's tool step and the
plugin's execute in it are reported apart (the `zmem mcp` the gateway's start-up warmed serves it:
OpenClaw's agent runtime loads another instance of the plugin, which shares the pool kept on
globalThis). The warm-up is turns too: every query twice (a query's third recall is a warm one: its
keyword lists are built); then the timed turns alternate memory_search and memory_get. Medians, with
the 1-minute load before and after. Needs .ci/install_openclaw.sh's cache, as bench_openclaw.py.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from bench_openclaw import QUERIES, QUIET, fmt, indexed_workspace, med, slot  # noqa: E402
from helpers.openclaw_gateway import PLUGIN_DIR, Gateway, missing  # noqa: E402
from helpers.openclaw_model import ScriptedModel, tool_results  # noqa: E402


class Script:
    """The model's side: the tool call first, then a final text; notes when each answer was sent."""

    def __init__(self):
        self.call: tuple = ("memory_search", {"query": QUERIES[0]})
        self.sent: list[tuple[float, dict]] = []  # (monotonic seconds after answering, request body)

    def __call__(self, body: dict) -> tuple:
        reply = ("text", "done") if tool_results(body) or not body.get("tools") else ("tool", *self.call)
        self.sent.append((time.monotonic(), body))
        return reply


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--turns", type=int, default=12)
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    why = missing()
    if why:
        sys.exit(f"bench_openclaw_turn: {why}")
    ws = indexed_workspace(args.out, args.files)
    here = HERE.parent
    trace = args.out / "trace-turn.jsonl"
    trace.write_text("")
    os.environ.update(QUIET)
    from zmem import Memory
    memory = Memory(str(ws))
    hit = memory.recall(QUERIES[0]).results[0]
    get_args = {"path": hit.path, "from": hit.start_line, "lines": hit.end_line - hit.start_line + 1}
    script = Script()
    load = {"before": os.getloadavg()[0]}
    steps: dict[str, list[float]] = {"memory_search": [], "memory_get": []}
    execute: dict[str, list[float]] = {"memory_search": [], "memory_get": []}
    first_turn: dict[str, float] = {}  # the first turn's memory_search: tool step and execute
    pids: set[int] = set()  # the zmem mcp processes that answered the turns (trace)
    with ScriptedModel(script) as model:
        config = {"agents": {"defaults": {"workspace": str(ws), "skipBootstrap": True, "model": "loopback/scripted-1"}},
                  "models": {"providers": {"loopback": model.provider()}}}
        zmem = {"command": [sys.executable, "-m", "zmem"]}
        gw = slot(Gateway(config, zmem, env={**QUIET, "PYTHONPATH": str(here), "ZMEM_TRACE": str(trace)}),
                  PLUGIN_DIR, "zmem", zmem, False)
        try:
            gw.start()
            warm = [("memory_search", {"query": q}) for q in QUERIES * 2]  # a query's third recall is warm
            timed = [("memory_search", {"query": QUERIES[n // 2 % len(QUERIES)]}) if n % 2 == 0 else ("memory_get", get_args)
                     for n in range(args.turns)]
            for n, (tool, tool_args) in enumerate(warm + timed):
                script.call = (tool, tool_args)
                first = len(script.sent)
                traced = len(trace.read_text().splitlines())
                res = gw.cli("agent", "--session-key", f"agent:main:bench-{n}", "--message", "What do my notes say?",
                             "--json", "--timeout", "300", timeout=400)
                if res.returncode != 0:
                    sys.exit(f"bench_openclaw_turn: the turn failed: {res.stderr[-1500:]}")
                sent = script.sent[first:]
                asked = [i for i, (_, body) in enumerate(sent) if body.get("tools") and not tool_results(body)]
                answered = [i for i, (_, body) in enumerate(sent) if tool_results(body)]
                records = [json.loads(line) for line in trace.read_text().splitlines()[traced:] if line.strip()]
                mine = [r for r in records if r.get("src") == "plugin" and r.get("tool") == tool]
                pids.update(c["pid"] for r in mine for c in r.get("calls", []) if c.get("pid"))
                if not asked or not answered or not mine:
                    continue  # a turn whose model steps were not the two expected
                # the next request's arrival: the script runs as it arrives, just before it notes the answer
                step = (sent[answered[0]][0] - sent[asked[0]][0]) * 1000
                if n == 0:
                    first_turn = {"tool_step": step, "plugin_execute": mine[0]["exit"] - mine[0]["enter"]}
                if n < len(warm):
                    continue
                steps[tool].append(step)
                execute[tool].append(mine[0]["exit"] - mine[0]["enter"])
        finally:
            gw.close()
    load["after"] = os.getloadavg()[0]
    inproc = {"memory_search": [], "memory_get": []}
    for q in QUERIES * 3:
        t = time.perf_counter()
        memory.recall(q)
        inproc["memory_search"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        memory.get(f"{get_args['path']}#L{get_args['from']}")
        inproc["memory_get"].append((time.perf_counter() - t) * 1000)
    out = {"load": load, "files": args.files, "first_turn": first_turn, "zmem_processes": len(pids)}
    print(f"load {load['before']:.2f} -> {load['after']:.2f} (1-minute average), {args.files} files")
    if first_turn:
        print(f"the first turn's memory_search: tool step {first_turn['tool_step']:.1f} ms, the plugin's execute "
              f"{first_turn['plugin_execute']:.1f} ms; zmem mcp processes that answered the turns: {len(pids)}")
    for tool in steps:
        if not steps[tool]:
            print(f"{tool}: no timed turns")
            continue
        gap, ex, ip = med(steps[tool]), med(execute[tool]), med(inproc[tool])
        around = med([s - e for s, e in zip(steps[tool], execute[tool])])
        out[tool] = {"tool_step": gap, "plugin_execute": ex, "openclaw_around_execute": around, "in_process": ip}
        print(f"{tool}:\n  tool call sent -> next model request  {fmt(gap)}\n  the plugin's execute (trace)         "
              f"{fmt(ex)}\n  OpenClaw around it                    {fmt(around)}\n  zmem in-process                      {fmt(ip)}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
