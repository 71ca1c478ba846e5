"""memory_search and memory_get through a real OpenClaw gateway (not a test): integrations/openclaw/
as the memory slot of openclaw@2026.9.6, called over POST /tools/invoke on loopback (what an agent's
tool call costs from the gateway's side: session, tool list, policy, hooks, the plugin, JSON-RPC to the
long-lived `zmem mcp`, recall), beside zmem's own in-process recall on the same workspace.

    python bench/bench_openclaw.py --out /tmp/zmem-oc --files 10000 [--calls 40]

Cold: the first call after the gateway says it is ready (/readyz), and the first memory_get. Warm:
medians over --calls calls (queries cycled). The overhead line is the gateway's warm median minus the
in-process median. Machine load (1-minute average) is printed before and after: the machines are
shared, so read medians and the difference, not single numbers. Needs the cache of
.ci/install_openclaw.sh (ZMEM_OPENCLAW_CACHE, default ~/.cache/zmem-ci/openclaw).
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
from helpers.openclaw_gateway import Gateway, missing  # noqa: E402

QUERIES = ["gateway backup Mac Studio", "Peter Lisbon", "aniversário Marrakech", "北京 出差", "deploy script database",
           "who prefers meetings in the morning", "TLS certificate renewal", "rate limiter 429 retries"]
ZMEM = str(Path(sys.executable).with_name("zmem"))


def med(samples: list[float]) -> dict:
    ms = sorted(s * 1000 for s in samples)
    return {"median_ms": round(statistics.median(ms), 1), "min_ms": round(ms[0], 1), "max_ms": round(ms[-1], 1), "n": len(ms)}


def fmt(d: dict) -> str:
    return f"median {d['median_ms']:7.1f} ms  (min {d['min_ms']:.1f}, max {d['max_ms']:.1f}, n={d['n']})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    why = missing()
    if why:
        sys.exit(f"bench_openclaw: {why}")
    env = {**os.environ, "ZMEM_WATCH_AUTO": "0", "OLLAMA_HOST": "127.0.0.1:9"}
    ws = args.out / f"ws-{args.files}"
    if not (ws / ".git").exists():
        t = time.perf_counter()
        make_workspace(ws, args.files)
        print(f"workspace: {args.files} files in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    t = time.perf_counter()
    subprocess.run([ZMEM, "-C", str(ws), "index"], check=True, env=env, capture_output=True)
    print(f"index: {time.perf_counter() - t:.1f} s", file=sys.stderr)
    load = {"before": os.getloadavg()[0], "cpus": os.cpu_count()}

    # zmem's own in-process recall and get, warm
    os.environ.update({"ZMEM_WATCH_AUTO": "0", "OLLAMA_HOST": "127.0.0.1:9"})
    from zmem import Memory
    memory = Memory(str(ws))
    first = memory.recall(QUERIES[0]).results[0]
    for q in QUERIES:
        memory.recall(q)
    rec, get = [], []
    for i in range(args.calls):
        t = time.perf_counter()
        memory.recall(QUERIES[i % len(QUERIES)])
        rec.append(time.perf_counter() - t)
        t = time.perf_counter()
        memory.get(first.citation)
        get.append(time.perf_counter() - t)
    memory.close()
    inproc = {"recall": med(rec), "get": med(get)}

    # the same through the gateway
    config = {"agents": {"defaults": {"workspace": str(ws), "skipBootstrap": True}}}
    gw = Gateway(config, {"command": ZMEM}, env={"ZMEM_WATCH_AUTO": "0", "OLLAMA_HOST": "127.0.0.1:9"})
    try:
        gw.start()
        t = time.perf_counter()
        res = gw.invoke("memory_search", {"query": QUERIES[0]})
        cold_search = time.perf_counter() - t
        assert res.get("ok"), res
        cold_debug = Gateway.payload(res).get("debug", {})
        hit = Gateway.payload(res)["results"][0]
        get_args = {"path": hit["path"], "from": hit["startLine"], "lines": hit["endLine"] - hit["startLine"] + 1}
        t = time.perf_counter()
        assert gw.invoke("memory_get", get_args).get("ok")
        cold_get = time.perf_counter() - t
        for q in QUERIES:
            gw.invoke("memory_search", {"query": q})
        gs, gg, zs = [], [], []
        for i in range(args.calls):
            t = time.perf_counter()
            r = gw.invoke("memory_search", {"query": QUERIES[i % len(QUERIES)]})
            gs.append(time.perf_counter() - t)
            assert r.get("ok"), r
            zs.append(Gateway.payload(r)["debug"]["zmemMs"] / 1000)
            t = time.perf_counter()
            r = gw.invoke("memory_get", get_args)
            gg.append(time.perf_counter() - t)
            assert r.get("ok"), r
        gateway = {"ready_ms": round(gw.started_ms), "search_cold_ms": round(cold_search * 1000, 1),
                   "get_cold_ms": round(cold_get * 1000, 1), "search_warm": med(gs), "get_warm": med(gg),
                   "search_cold_plugin": cold_debug, "search_warm_plugin_zmem": med(zs)}
    finally:
        gw.close()
    load["after"] = os.getloadavg()[0]
    out = {"files": args.files, "calls": args.calls, "in_process": inproc, "gateway": gateway, "load_1min": load,
           "overhead_search_ms": round(gateway["search_warm"]["median_ms"] - inproc["recall"]["median_ms"], 1),
           "overhead_get_ms": round(gateway["get_warm"]["median_ms"] - inproc["get"]["median_ms"], 1)}
    print(f"{args.files} files, {args.calls} calls, load {load['before']:.2f} -> {load['after']:.2f} on {load['cpus']} CPUs")
    print(f"gateway ready (readyz)          {gateway['ready_ms']} ms")
    print(f"memory_search, first call        {gateway['search_cold_ms']} ms")
    print(f"  of which in the plugin: waiting for zmem to start {cold_debug.get('processMs')} ms, the call {cold_debug.get('zmemMs')} ms")
    print(f"memory_get, first call           {gateway['get_cold_ms']} ms")
    print(f"memory_search via gateway, warm  {fmt(gateway['search_warm'])}")
    print(f"  of which the plugin's call to zmem mcp {fmt(gateway['search_warm_plugin_zmem'])}")
    print(f"zmem recall in-process, warm     {fmt(inproc['recall'])}")
    print(f"memory_get via gateway, warm     {fmt(gateway['get_warm'])}")
    print(f"zmem get in-process, warm        {fmt(inproc['get'])}")
    print(f"overhead: search {out['overhead_search_ms']} ms, get {out['overhead_get_ms']} ms (gateway median - in-process median)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
