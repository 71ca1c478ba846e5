"""A/B of what fresh zmem processes cost (startup included), two versions of zmem's code on one workspace.

    python bench/bench_startup.py --ws /tmp/ws --a /path/to/old --b /path/to/new [--runs 9]

--a and --b are PYTHONPATH entries holding a `zmem` package (e.g. `git archive main zmem | tar -x -C
/tmp/old`, and a worktree). Runs alternate A, B, A, B … per command, so load drifts hit both alike;
prints the median (min–max) of wall time and of the child's CPU (user + sys), then each side's
`-X importtime` self-time total (5 runs each, alternating). The workspace must be indexed already (the index
is at HEAD, so `index -q` has nothing to do); bytecode caching is on, as users have it.
--commands picks some of them (e.g. `recall,doctor`; doctor is not in the default set: seconds on older
code; `everyday` is every command issue 14 names). `append` commits a line to today's log each run, so it
runs in a copy of the workspace (made once, next to it), which keeps the workspace as it was. --watch runs
`zmem watch` from B's code meanwhile, so a version that asks it (zmem.index.fsmonitor) skips the stat sweep.
Each row ends with the 1-minute load average when its command's runs ended. --ws-b gives B its own copy
of the workspace (same notes, its own index): needed when B adds a schema step, since A's code refuses an
index a newer zmem migrated.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["ZMEM_WATCH_AUTO"] = "0"  # no automatic watcher: A and B both do their own freshness check (bench_served measures it)


def command_lines(ws: Path) -> dict[str, list[str]]:
    note = sorted((ws / "memory").rglob("*.md"))[0].relative_to(ws).as_posix()
    return {"recall (bm25)": ["recall", "gateway backup Mac Studio"],
            "recall, non-ASCII query": ["recall", "aniversário Marrakech"],
            "get": ["get", f"{note}#L1-L5"],
            "status": ["status"],
            "index -q (no-op)": ["index", "-q"],
            "facts": ["facts", "--entity", "Peter", "--limit", "20"],
            "entity": ["entity", "Peter"],
            "log": ["log", "@Peter", "--since", "30d"],
            "blame": ["blame", "bank/entities/Peter.md#L3"],
            "diff": ["diff", "HEAD~5", "HEAD", "--entity", "Peter"],
            "doctor": ["doctor"],
            "append": ["append", "Checked the backup job"]}
DEFAULT = "recall,recall-nonascii,get,status,index"
KEYS = {"recall": "recall (bm25)", "recall-nonascii": "recall, non-ASCII query", "get": "get", "status": "status",
        "index": "index -q (no-op)", "facts": "facts", "entity": "entity", "log": "log", "blame": "blame",
        "diff": "diff", "doctor": "doctor", "append": "append"}
EVERYDAY = "get,status,facts,entity,log,blame,diff,index,doctor,append"


def once(pythonpath: str, ws: Path, args: list[str], importtime: bool = False) -> tuple[float, float, str]:
    """(wall s, child CPU s, stderr) of one `python -m zmem ARGS` in the workspace."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "zmem", *args],
                          cwd=ws, capture_output=True, text=True, env={**ENV, "PYTHONPATH": pythonpath})
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"{args} failed with {pythonpath}: {proc.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.stderr


def import_ms(stderr: str) -> float:
    return sum(int(line.split("|")[0].split(":")[1]) for line in stderr.splitlines()
               if line.startswith("import time:") and line.split("|")[0].split(":")[1].strip().isdigit()) / 1000


def fmt(samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return f"{statistics.median(ms):6.1f} ({min(ms):.0f}–{max(ms):.0f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ws", type=Path, required=True)
    ap.add_argument("--ws-b", type=Path, default=None, help="B's own copy of --ws (default: --ws)")
    ap.add_argument("--a", required=True, help="PYTHONPATH of version A (the baseline)")
    ap.add_argument("--b", required=True, help="PYTHONPATH of version B")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--commands", default=DEFAULT, help=f"comma-separated, of {', '.join(KEYS)}; or everyday")
    ap.add_argument("--watch", action="store_true", help="run `zmem watch` (B's code) during the runs")
    args = ap.parse_args()
    sides = {"A": args.a, "B": args.b}
    workspaces = {"A": args.ws, "B": args.ws_b or args.ws}
    watcher = None
    if args.watch:
        watcher = subprocess.Popen([sys.executable, "-m", "zmem", "watch", "--json"], cwd=workspaces["B"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                   env={**ENV, "PYTHONPATH": args.b})
        for line in watcher.stdout:  # ready once the watches are in place and the index is caught up
            if '"watching"' in line:
                break
    try:
        run_all(args, sides, workspaces)
    finally:
        if watcher is not None:
            watcher.terminate()
            watcher.wait()


def run_all(args, sides: dict[str, str], workspaces: dict[str, Path]) -> None:
    print(f"load before: {os.getloadavg()[0]:.2f}  (A = {args.a}, B = {args.b}; ms, median (min–max) of {args.runs})")
    print(f"{'command':26} {'side':4} {'wall':>18} {'CPU user+sys':>18} {'importtime self':>18} {'load':>6}")
    lines = command_lines(args.ws)
    keys = EVERYDAY.split(",") if args.commands == "everyday" else args.commands.split(",")
    for name, cmd in ((KEYS[key], lines[KEYS[key]]) for key in keys):
        ws = dict(workspaces)
        if name == "append":
            for side in sides:
                ws[side] = Path(tempfile.mkdtemp(prefix="append-", dir=workspaces[side].parent)) / workspaces[side].name
                # (not a watcher's socket and cookies: a copy is nobody's to serve)
                shutil.copytree(workspaces[side], ws[side], symlinks=True,
                                ignore=shutil.ignore_patterns("fsmonitor.sock", "fsmonitor"))
        for side, path in sides.items():  # warm the bytecode caches and the page cache
            once(path, ws[side], cmd)
        wall = {s: [] for s in sides}
        cpu = {s: [] for s in sides}
        for _ in range(args.runs):
            for side, path in sides.items():
                w, c, _ = once(path, ws[side], cmd)
                wall[side].append(w)
                cpu[side].append(c)
        imports = {s: [] for s in sides}
        for _ in range(5):  # alternating too
            for side, path in sides.items():
                imports[side].append(import_ms(once(path, ws[side], cmd, importtime=True)[2]) / 1000)
        for side in sides:
            print(f"{name:26} {side:4} {fmt(wall[side]):>18} {fmt(cpu[side]):>18} {fmt(imports[side]):>18}"
                  f" {os.getloadavg()[0]:6.2f}")
        for side in sides:
            if ws[side] != workspaces[side]:
                shutil.rmtree(ws[side].parent)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
