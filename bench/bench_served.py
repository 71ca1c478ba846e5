"""What a fresh `zmem recall` costs with nothing running, with `zmem watch` running, and with `zmem mcp`
running and never called (both serve fresh processes over .zmem/fsmonitor.sock: zmem.index.fsmonitor).

    python bench/bench_served.py --ws /tmp/ws [--runs 9] [--rounds 3] [--query "gateway backup Mac Studio"]

The workspace must be indexed already. Per round, each condition in turn: its server started (and for
`zmem mcp`, the MCP initialize handshake sent on its stdin: the time to its reply is printed beside the
time until it vouches for the index, which it does from its start, before any tool call), one warm-up
recall, then --runs recalls through the `zmem` console script next to this interpreter. Prints, per
condition, the median (min–max) of the recall's wall time and CPU (user + sys), the server's CPU per
recall (what serving it costs the long-lived process), whether the server vouched, and the 1-minute
load average after the condition's runs.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from bench_startup import fmt  # bench/ is on sys.path: scripts run from there

ZMEM = str(Path(sys.executable).parent / "zmem")
CONDITIONS = ("nothing", "zmem watch", "zmem mcp")
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}


def vouched(ws: Path) -> bool:
    """Whether a server vouches for the index's snapshot now (the question a fresh process asks)."""
    conn = sqlite3.connect(ws / ".zmem" / "index.sqlite")
    try:
        snapshot = conn.execute("SELECT value FROM meta WHERE key = 'snapshot_ns'").fetchone()[0]
    finally:
        conn.close()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            s.connect(str(ws / ".zmem" / "fsmonitor.sock"))
            s.sendall(f"vouch {snapshot}\n".encode())
            return s.recv(16) == b"yes\n"
    except OSError:
        return False


def cpu_of(pid: int) -> float:
    """A process's CPU so far (user + sys, seconds), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(condition: str, ws: Path) -> tuple[subprocess.Popen | None, str]:
    """The condition's server, serving; and a note on its start."""
    if condition == "nothing":
        return None, ""
    t0 = time.perf_counter()
    if condition == "zmem watch":
        proc = subprocess.Popen([ZMEM, "-C", str(ws), "watch", "--json"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        note = ""
    else:
        proc = subprocess.Popen([ZMEM, "-C", str(ws), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        proc.stdin.write(json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply.get("id") == 1 and "result" in reply, reply
        note = f"initialize answered after {(time.perf_counter() - t0) * 1000:.0f} ms; "
    deadline = time.monotonic() + 120
    while not vouched(ws):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit(f"{condition} never vouched")
        time.sleep(0.02)
    return proc, note + f"vouching after {(time.perf_counter() - t0) * 1000:.0f} ms"


def recall(ws: Path, query: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([ZMEM, "-C", str(ws), "recall", query], capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"recall failed: {proc.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ws", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--query", default="gateway backup Mac Studio")
    args = ap.parse_args()
    wall = {c: [] for c in CONDITIONS}
    cpu = {c: [] for c in CONDITIONS}
    served = {c: [] for c in CONDITIONS}
    vouching = {c: True for c in CONDITIONS}
    loads = {c: [] for c in CONDITIONS}
    print(f"load before: {os.getloadavg()[0]:.2f}; {args.rounds} rounds of {args.runs} recalls of {args.query!r}")
    for n in range(args.rounds):
        for condition in CONDITIONS:
            proc, note = start(condition, args.ws)
            try:
                recall(args.ws, args.query)  # warm: page cache, bytecode, the server's lists
                server_before = cpu_of(proc.pid) if proc else 0.0
                for _ in range(args.runs):
                    w, c = recall(args.ws, args.query)
                    wall[condition].append(w)
                    cpu[condition].append(c)
                if proc:
                    served[condition].append((cpu_of(proc.pid) - server_before) / args.runs)
                    vouching[condition] = vouching[condition] and vouched(args.ws)
            finally:
                if proc:
                    proc.terminate()
                    proc.wait()
            loads[condition].append(os.getloadavg()[0])
            if note:
                print(f"  round {n + 1}, {condition}: {note}")
    print(f"{'fresh recall with':18} {'wall ms':>18} {'CPU ms':>18} {'server CPU/recall':>18} {'vouched':>8} {'load':>10}")
    for c in CONDITIONS:
        server = fmt(served[c]) if served[c] else "-"
        print(f"{c:18} {fmt(wall[c]):>18} {fmt(cpu[c]):>18} {server:>18} {str(vouching[c]) if served[c] else '-':>8}"
              f" {min(loads[c]):4.2f}-{max(loads[c]):4.2f}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
