"""What a fresh `zmem recall` costs with nothing running, with `zmem watch` running, with `zmem mcp`
running and never called (both serve fresh processes over .zmem/fsmonitor.sock: zmem.index.fsmonitor),
and with the automatic watcher a recall starts (zmem.index.autowatch); beside `qmd search` when --qmd is given.

    python bench/bench_served.py --ws /tmp/ws [--runs 9] [--rounds 3] [--query "gateway backup Mac Studio"]
        [--qmd /tmp/qmd --qmd-cache /tmp/peers/qmd-cache10000] [--auto-min-files N] [--only auto,qmd search]

The workspace must be indexed already. Per round, each condition in turn: its server started (and for
`zmem mcp`, the MCP initialize handshake sent on its stdin: the time to its reply is printed beside the
time until it vouches for the index, which it does from its start, before any tool call), one warm-up
recall, then --runs recalls through the `zmem` console script next to this interpreter. Prints, per
condition, the median (min–max) of the recall's wall time and CPU (user + sys), the server's CPU per
recall (what serving it costs the long-lived process), whether the server vouched, and the 1-minute
load average after the condition's runs. Every condition but "auto" runs with ZMEM_WATCH_AUTO=0.

"auto": no server; the first recall starts `zmem watch --auto` (its own cost is printed apart, as
"auto: first recall"), then the runs once the watcher vouches; it is stopped with `zmem watch --stop`.
--auto-min-files sets `watch.auto_min_files` (a temporary user config) for a workspace under the default
5,000. "qmd search": `qmd search QUERY` through Bun with the QMD cache at --qmd-cache (bench/peers.py makes
one); QMD requires every query word, zmem ranks chunks holding any of them.
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
CONDITIONS = ("nothing", "zmem watch", "zmem mcp", "auto")
NO_AUTO = {**os.environ, "ZMEM_WATCH_AUTO": "0"}
AUTO = {k: v for k, v in os.environ.items() if k != "ZMEM_WATCH_AUTO"}
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


def serving_pid(ws: Path) -> int | None:
    """The pid of the process serving the workspace's socket (SO_PEERCRED), or None."""
    import struct
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            s.connect(str(ws / ".zmem" / "fsmonitor.sock"))
            return struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[0]
    except OSError:
        return None


def rss_of(pid: int) -> float:
    """A process's resident memory now (MB), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_of(pid: int) -> float:
    """A process's CPU so far (user + sys, seconds), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Auto:
    """The automatic watcher a recall started: its pid (found through the socket), stopped by `zmem watch --stop`."""

    def __init__(self, pid: int):
        self.pid = pid

    def terminate(self) -> None:
        subprocess.run([ZMEM, "-C", str(ARGS.ws), "watch", "--stop"], env=NO_AUTO, capture_output=True)

    def wait(self) -> None:
        pass


def start(condition: str, ws: Path, query: str) -> tuple[subprocess.Popen | Auto | None, str]:
    """The condition's server, serving; and a note on its start."""
    if condition in ("nothing", "qmd search"):
        return None, ""
    t0 = time.perf_counter()
    if condition == "auto":
        (ws / ".zmem" / "watch-auto").unlink(missing_ok=True)  # no attempt within the last minute
        w, c = recall(ws, query, AUTO)
        FIRST["wall"].append(w)
        FIRST["cpu"].append(c)
        deadline = time.monotonic() + 120
        while not (vouched(ws) and serving_pid(ws)):
            if time.monotonic() > deadline:
                raise SystemExit("the automatic watcher never vouched (see .zmem/watch.log)")
            time.sleep(0.02)
        return Auto(serving_pid(ws)), f"vouching {(time.perf_counter() - t0) * 1000:.0f} ms after the first recall started"
    if condition == "zmem watch":
        proc = subprocess.Popen([ZMEM, "-C", str(ws), "watch", "--json"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=NO_AUTO)
        note = ""
    else:
        proc = subprocess.Popen([ZMEM, "-C", str(ws), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=NO_AUTO)
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


def recall(ws: Path, query: str, env: dict = NO_AUTO) -> tuple[float, float]:
    """(wall, CPU) of one fresh recall; only the recall's own CPU (a watcher it starts is not waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    if QMD and env is None:  # qmd search
        proc = subprocess.run([*QMD, "search", query], capture_output=True, text=True, env=QMD_ENV, cwd=ws)
    else:
        proc = subprocess.run([ZMEM, "-C", str(ws), "recall", query], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"recall failed: {proc.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


FIRST: dict[str, list[float]] = {"wall": [], "cpu": []}  # the recalls that started the automatic watcher
QMD: list[str] = []
QMD_ENV: dict = {}
ARGS = argparse.Namespace()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ws", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--query", default="gateway backup Mac Studio")
    ap.add_argument("--qmd", type=Path, help="folder where `npm install bun @tobilu/qmd@2.8.3` ran")
    ap.add_argument("--qmd-cache", type=Path, help="QMD's cache holding this workspace's collection (bench/peers.py)")
    ap.add_argument("--auto-min-files", type=int, help="watch.auto_min_files for the auto condition")
    ap.add_argument("--only", help="these conditions, comma-separated (e.g. auto,qmd search)")
    args = ap.parse_args()
    ARGS.ws = args.ws
    conditions = CONDITIONS
    if args.qmd:
        QMD[:] = [str(args.qmd / "node_modules" / ".bin" / "bun"),
                  str(args.qmd / "node_modules" / "@tobilu" / "qmd" / "dist" / "cli" / "qmd.js")]
        QMD_ENV.update({**NO_AUTO, "XDG_CACHE_HOME": str(args.qmd_cache),
                        "XDG_CONFIG_HOME": str(args.qmd_cache / "config"), "HOME": str(args.qmd_cache)})
        conditions = (*CONDITIONS, "qmd search")
    if args.only:
        conditions = tuple(c for c in conditions if c in args.only.split(","))
    if args.auto_min_files is not None:
        import tempfile
        config = Path(tempfile.mkdtemp()) / "zmem" / "config.toml"
        config.parent.mkdir()
        config.write_text(f"[watch]\nauto_min_files = {args.auto_min_files}\n")
        AUTO["XDG_CONFIG_HOME"] = str(config.parent.parent)
    wall = {c: [] for c in conditions}
    cpu = {c: [] for c in conditions}
    served = {c: [] for c in conditions}
    rss = {c: [] for c in conditions}
    vouching = {c: True for c in conditions}
    loads = {c: [] for c in conditions}
    print(f"load before: {os.getloadavg()[0]:.2f}; {args.rounds} rounds of {args.runs} recalls of {args.query!r}")
    for n in range(args.rounds):
        for condition in conditions:
            env = None if condition == "qmd search" else AUTO if condition == "auto" else NO_AUTO
            proc, note = start(condition, args.ws, args.query)
            try:
                recall(args.ws, args.query, env)  # warm: page cache, bytecode, the server's lists
                server_before = cpu_of(proc.pid) if proc else 0.0
                for _ in range(args.runs):
                    w, c = recall(args.ws, args.query, env)
                    wall[condition].append(w)
                    cpu[condition].append(c)
                if proc:
                    served[condition].append((cpu_of(proc.pid) - server_before) / args.runs)
                    rss[condition].append(rss_of(proc.pid))
                    vouching[condition] = vouching[condition] and vouched(args.ws)
            finally:
                if proc:
                    proc.terminate()
                    proc.wait()
            loads[condition].append(os.getloadavg()[0])
            if note:
                print(f"  round {n + 1}, {condition}: {note}")
    print(f"{'fresh recall with':18} {'wall ms':>18} {'CPU ms':>18} {'server CPU/recall':>18} {'server RSS MB':>14} "
          f"{'vouched':>8} {'load':>10}")
    for c in conditions:
        server = fmt(served[c]) if served[c] else "-"
        mb = f"{min(rss[c]):.0f}-{max(rss[c]):.0f}" if rss[c] else "-"
        print(f"{c:18} {fmt(wall[c]):>18} {fmt(cpu[c]):>18} {server:>18} {mb:>14} "
              f"{str(vouching[c]) if served[c] else '-':>8} {min(loads[c]):4.2f}-{max(loads[c]):4.2f}")
    if FIRST["wall"]:
        print(f"{'auto: first recall':18} {fmt(FIRST['wall']):>18} {fmt(FIRST['cpu']):>18}   (it starts the watcher)")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
