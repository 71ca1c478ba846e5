"""memory_search and memory_get through a real OpenClaw gateway (not a test): integrations/openclaw/
as the memory slot of openclaw@2026.9.6, called over POST /tools/invoke on loopback, beside zmem's
own in-process recall on the same workspace and beside the gateway's floor: a second gateway whose
memory slot is a plugin whose tools do nothing (tests/helpers/openclaw_noop), called the same way.

    python bench/bench_openclaw.py --out /tmp/zmem-oc --files 10000 [--calls 40]
        [--base /path/to/other/checkout] [--enable-memory-core] [--json FILE]

Cold: the first call after each gateway says it is ready (/readyz), and the first memory_get. Warm:
medians over --calls rounds after a warm-up; each round calls every target once (in-process recall
and get, each gateway's memory_search and memory_get, the no-op gateway's noop_probe), in an order
that rotates, so that the machine's load falls on all of them alike. --base runs a third gateway with
this checkout's plugin and another checkout's zmem (its Python package on PYTHONPATH): an A/B of
zmem mcp in one sitting.
Every gateway has plugins.entries.memory-core.enabled = false, as the documented install does,
unless --enable-memory-core (OpenClaw's default; see docs/openclaw.md's latency section).

CPU per call: what each gateway's node process and its `zmem mcp` used during the timed rounds,
divided by the calls it answered (a gateway's includes its background work: two gateways running the
same code differed by ~6 ms per call here; `zmem mcp`'s is steadier). Overheads: the gateway's warm median minus the in-process median (raw), and minus the no-op
gateway's median for the same tool (above the gateway's floor). Where the time of a warm call goes
comes from ZMEM_TRACE (the plugin and zmem mcp note when a call entered, was sent, read, run,
ready to write, answered and left; this process notes when it sent the request and had the answer): the
medians of each step, which need not add up to the median of the whole. Machine load (1-minute
average) is printed before and after: the machines are shared, so read medians and differences,
not single numbers. Needs the cache of .ci/install_openclaw.sh (ZMEM_OPENCLAW_CACHE, default
~/.cache/zmem-ci/openclaw).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from make_synthetic import make_workspace  # noqa: E402
from helpers.openclaw_gateway import PLUGIN_DIR, Gateway, missing  # noqa: E402

QUERIES = ["gateway backup Mac Studio", "Peter Lisbon", "aniversário Marrakech", "北京 出差", "deploy script database",
           "who prefers meetings in the morning", "TLS certificate renewal", "rate limiter 429 retries"]
QUIET = {"ZMEM_WATCH_AUTO": "0", "OLLAMA_HOST": "127.0.0.1:9"}
NOOP_PLUGIN = HERE.parent / "tests" / "helpers" / "openclaw_noop"  # a memory slot whose tools do nothing
# where a warm call's time goes, from the trace: (label, from, to)
STEPS = [("gateway, request in: HTTP, auth, session, tool set, policy, hooks", "send", "enter"),
         ("plugin, before the request to zmem mcp", "enter", "sent"),
         ("pipe to zmem mcp (until it has read the line)", "sent", "read"),
         ("zmem mcp, before the tool: parse, validate", "read", "start"),
         ("the tool in zmem mcp (freshness check, recall or get, result)", "start", "end"),
         ("zmem mcp, after the tool: answer JSON", "end", "reply"),
         ("write, pipe back and JSON.parse in the plugin", "reply", "answered"),
         ("plugin, after the answer: OpenClaw's shape, result JSON", "answered", "exit"),
         ("gateway, answer out", "exit", "recv")]
REQUEST = ("the plugin's request to zmem mcp, in all (sent -> answer parsed)", "sent", "answered")


def med(samples: list[float]) -> dict:
    ms = sorted(samples)
    return {"median_ms": round(statistics.median(ms), 1), "min_ms": round(ms[0], 1), "max_ms": round(ms[-1], 1), "n": len(ms)}


def fmt(d: dict) -> str:
    return f"median {d['median_ms']:7.1f} ms  (min {d['min_ms']:.1f}, max {d['max_ms']:.1f}, n={d['n']})"


def invoke(gw: Gateway, name: str, args: dict) -> tuple[float, float, dict]:
    """(sent, answered) in milliseconds of CLOCK_MONOTONIC (the trace's clock), and the result; fails
    on a tool error."""
    sent = time.monotonic() * 1000
    res = gw.invoke(name, args)
    answered = time.monotonic() * 1000
    assert res.get("ok"), res
    return sent, answered, res


def steps(calls: list[tuple[float, float]], trace: Path, tool: str) -> dict:
    """Medians of the trace's steps of the warm calls of one tool (calls: their (send, recv)); the
    steps inside zmem mcp only where it writes the trace (a zmem of before the trace does not)."""
    lines = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    served = {(r["pid"], r["id"]): r for r in lines if r.get("src") == "mcp"}
    plugin = [r for r in lines if r.get("src") == "plugin" and r["tool"] == tool]
    out: dict[str, list[float]] = {label: [] for label, _, _ in STEPS + [REQUEST]}
    for send, recv in calls:
        rec = next((r for r in plugin if send <= r["enter"] <= recv), None)
        if rec is None or [c["method"] for c in rec["calls"]] != ["tools/call"]:
            continue  # (a call that also waited for zmem mcp to start)
        call = rec["calls"][0]
        t = {"send": send, "recv": recv, "enter": rec["enter"], "exit": rec["exit"], "sent": call["sent"],
             "answered": call["answered"], **served.get((call["pid"], call["id"]), {})}
        for label, a, b in STEPS + [REQUEST]:
            if a in t and b in t:
                out[label].append(t[b] - t[a])
    return {label: med(v) for label, v in out.items() if v}


def slot(gw: Gateway, plugin_dir: Path, plugin_id: str, plugin_config: dict, memory_core: bool) -> Gateway:
    """The gateway's plugins: plugin_dir's plugin as the memory slot, memory-core enabled or not."""
    path = gw.dir / "state" / "openclaw.json"
    cfg = json.loads(path.read_text())
    cfg["plugins"] = {"load": {"paths": [str(plugin_dir)]}, "slots": {"memory": plugin_id},
                      "entries": {plugin_id: {"enabled": True, "config": plugin_config},
                                  "memory-core": {"enabled": memory_core}}}
    path.write_text(json.dumps(cfg, indent=1))
    return gw


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) a process has used, in milliseconds (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def processes(gw: Gateway) -> dict[str, int]:
    """The gateway's node process and its `zmem mcp` children, by name."""
    out = {"gateway": gw.proc.pid}
    for task in Path(f"/proc/{gw.proc.pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"mcp" in Path(f"/proc/{child}/cmdline").read_bytes():
                out["zmem mcp"] = int(child)
    return out


def start(gw: Gateway, cold: bool) -> dict:
    """Start a gateway; with cold, its first memory_search and memory_get after it is ready."""
    gw.start()
    out = {"ready_ms": round(gw.started_ms)}
    if cold:
        a, b, res = invoke(gw, "memory_search", {"query": QUERIES[0]})
        out["search_cold_ms"], out["search_cold_plugin"] = round(b - a, 1), Gateway.payload(res).get("debug", {})
        hit = Gateway.payload(res)["results"][0]
        out["get_args"] = {"path": hit["path"], "from": hit["startLine"], "lines": hit["endLine"] - hit["startLine"] + 1}
        a, b, _ = invoke(gw, "memory_get", out["get_args"])
        out["get_cold_ms"] = round(b - a, 1)
    return out


def indexed_workspace(out: Path, files: int) -> Path:
    """out/ws-<files>: a synthetic workspace (made once, bench/make_synthetic.py), indexed by this checkout's zmem."""
    out.mkdir(parents=True, exist_ok=True)
    ws = out / f"ws-{files}"
    if not (ws / ".git").exists():
        t = time.perf_counter()
        make_workspace(ws, files)
        print(f"workspace: {files} files in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "zmem", "-C", str(ws), "index"], check=True, capture_output=True,
                   env={**os.environ, **QUIET, "PYTHONPATH": str(HERE.parent)})
    print(f"index: {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return ws


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--base", type=Path, help="another checkout of zmem whose zmem mcp to compare with")
    ap.add_argument("--enable-memory-core", action="store_true",
                    help="leave OpenClaw's bundled memory-core enabled (its default; the documented install disables it)")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    why = missing()
    if why:
        sys.exit(f"bench_openclaw: {why}")
    ws = indexed_workspace(args.out, args.files)
    here = HERE.parent

    config = {"agents": {"defaults": {"workspace": str(ws), "skipBootstrap": True}}}
    core = args.enable_memory_core
    traces = {"zmem": args.out / "trace-zmem.jsonl"} | ({"base": args.out / "trace-base.jsonl"} if args.base else {})
    for trace in traces.values():
        trace.write_text("")
    zmem = {"command": [sys.executable, "-m", "zmem"]}
    gateways = {"zmem": slot(Gateway(config, zmem, env={**QUIET, "PYTHONPATH": str(here), "ZMEM_TRACE": str(traces["zmem"])}),
                             PLUGIN_DIR, "zmem", zmem, core),
                "no-op": slot(Gateway(config, {}, env=QUIET), NOOP_PLUGIN, "noop-memory", {}, core)}
    if args.base:  # this plugin, the other checkout's zmem
        env = {**QUIET, "PYTHONPATH": str(args.base.resolve()), "ZMEM_TRACE": str(traces["base"])}
        gateways["base"] = slot(Gateway(config, zmem, env=env), PLUGIN_DIR, "zmem", zmem, core)
    load = {"before": os.getloadavg()[0], "cpus": os.cpu_count()}
    os.environ.update(QUIET)
    from zmem import Memory
    memory = Memory(str(ws))
    try:
        started = {name: start(gw, cold=name != "no-op") for name, gw in gateways.items()}
        get_args = started["zmem"]["get_args"]
        first = memory.recall(QUERIES[0]).results[0]
        targets = {"in-process recall": lambda q: memory.recall(q),
                   "in-process get": lambda q: memory.get(first.citation)}
        for name, gw in gateways.items():
            targets[f"{name} memory_search"] = lambda q, gw=gw: invoke(gw, "memory_search", {"query": q})
            targets[f"{name} memory_get"] = lambda q, gw=gw: invoke(gw, "memory_get", get_args)
        targets["no-op noop_probe"] = lambda q: invoke(gateways["no-op"], "noop_probe", {})
        for q in QUERIES:  # warm-up
            for run in targets.values():
                run(q)
        times: dict[str, list[float]] = {name: [] for name in targets}
        pids = {(g, p): pid for g, gw in gateways.items() for p, pid in processes(gw).items()}
        cpu0 = {k: cpu_ms(pid) for k, pid in pids.items()}
        windows = {(g, tool): [] for g in traces for tool in ("memory_search", "memory_get")}
        order = list(targets)
        for i in range(args.calls):
            q = QUERIES[i % len(QUERIES)]
            shift = i % len(order)
            for name in order[shift:] + order[:shift]:
                sent = time.monotonic() * 1000
                out = targets[name](q)
                times[name].append(time.monotonic() * 1000 - sent)
                gateway, _, tool = name.partition(" ")
                if gateway in traces:
                    windows[gateway, tool].append(out[:2])
        load["after"] = os.getloadavg()[0]
        per_round = {g: sum(1 for name in targets if name.startswith(g + " ")) for g in gateways}
        cpu = {f"{g} {p}": round((cpu_ms(pid) - cpu0[g, p]) / (args.calls * per_round[g]), 2) for (g, p), pid in pids.items()}
    finally:
        memory.close()
        for gw in gateways.values():
            gw.close()

    warm = {name: med(v) for name, v in times.items()}
    result = {"files": args.files, "calls": args.calls, "load_1min": load, "memory_core_enabled": core,
              "started": started, "warm": warm, "cpu_ms_per_call": cpu,
              "steps": {f"{g} {tool}": steps(w, traces[g], tool) for (g, tool), w in windows.items()}}
    over = result["overhead_ms"] = {}
    for tool, inproc in (("memory_search", "in-process recall"), ("memory_get", "in-process get")):
        for name in gateways:
            if name != "no-op":
                over[f"{name} {tool} raw"] = round(warm[f"{name} {tool}"]["median_ms"] - warm[inproc]["median_ms"], 1)
                over[f"{name} {tool} above the floor"] = round(
                    warm[f"{name} {tool}"]["median_ms"] - warm[f"no-op {tool}"]["median_ms"] - warm[inproc]["median_ms"], 1)
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


def report(r: dict) -> None:
    load = r["load_1min"]
    print(f"{r['files']} files, {r['calls']} rounds, load {load['before']:.2f} -> {load['after']:.2f} on {load['cpus']} CPUs"
          + (", memory-core enabled" if r["memory_core_enabled"] else ", memory-core disabled"))
    for name, s in r["started"].items():
        line = f"{name:6s} gateway ready (readyz) {s['ready_ms']} ms"
        if "search_cold_ms" in s:
            line += (f"; first memory_search {s['search_cold_ms']} ms (waiting for zmem {s['search_cold_plugin'].get('processMs')} ms),"
                     f" first memory_get {s['get_cold_ms']} ms")
        print(line)
    print("warm:")
    for name, d in r["warm"].items():
        print(f"  {name:26s} {fmt(d)}")
    print("CPU per timed call (ms; less sensitive to the load than the wall clock):")
    for name, ms in r["cpu_ms_per_call"].items():
        print(f"  {name:26s} {ms:6.2f}")
    print("overhead (gateway median - in-process median; above the floor: minus the no-op gateway's median too):")
    for name, ms in r["overhead_ms"].items():
        print(f"  {name:40s} {ms:6.1f} ms")
    for name, st in r["steps"].items():
        print(f"where a warm {name} goes (medians, ms):")
        for label, d in st.items():
            print(f"  {label:66s} {d['median_ms']:6.1f}")


if __name__ == "__main__":
    main()
