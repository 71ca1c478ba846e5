"""What a burst of commits costs the machine through zmem's post-commit hook: an agent appending in a
loop commits several times a second, and each commit's hook starts a detached catch-up process.

    python bench/bench_hook_burst.py [--commits 100] [--a DIR --b DIR] [--rounds 2]

A workspace with 200 notes and zmem's hooks is made in a temporary directory; then COMMITS commits
of one line each, as fast as git makes them. Measured from the first commit until no hook process
of that workspace is left: wall time, the CPU seconds the whole machine spent (/proc/stat, so a quiet
machine matters: the load average is printed), and the most hook processes seen alive at once.
With --a/--b, the hooks of each round run the zmem of that checkout (PYTHONPATH), alternating, each
in a workspace of its own; without them, the zmem this Python imports.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GIT = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost", "GIT_COMMITTER_NAME": "bench",
       "GIT_COMMITTER_EMAIL": "bench@localhost", "ZMEM_WATCH_AUTO": "0"}


def cpu_seconds() -> float:
    """Busy CPU seconds of the whole machine so far (user, nice, system, irq, softirq, steal)."""
    fields = open("/proc/stat").readline().split()[1:]
    ticks = sum(int(fields[i]) for i in (0, 1, 2, 5, 6, 7))
    return ticks / os.sysconf("SC_CLK_TCK")


def hook_processes(ws: Path) -> int:
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if b"zmem.hookrun" in open(f"/proc/{pid}/cmdline", "rb").read() and os.readlink(f"/proc/{pid}/cwd") == str(ws):
                n += 1
        except OSError:
            pass
    return n


def burst(env: dict, ws: Path, commits: int) -> tuple[float, float, int]:
    log = ws / "memory" / "2025-05-05.md"
    t0, c0, peak = time.perf_counter(), cpu_seconds(), 0
    for i in range(commits):
        with open(log, "a") as f:
            f.write(f"- burst note {i}\n")
        subprocess.run(["git", "commit", "-q", "-m", f"burst {i}", "--", str(log)], cwd=ws, env=env, check=True)
        if i % 5 == 0:
            peak = max(peak, hook_processes(ws))
    while (n := hook_processes(ws)):
        peak = max(peak, n)
        time.sleep(0.05)
    return time.perf_counter() - t0, cpu_seconds() - c0, peak


def workspace(env: dict, root: Path) -> Path:
    ws = root / "ws"
    (ws / "memory").mkdir(parents=True)
    for i in range(200):
        (ws / "memory" / f"2025-01-{i % 28 + 1:02d}-n{i}.md").write_text("".join(f"- line {k} of note {i}\n" for k in range(30)))
    (ws / "memory" / "2025-05-05.md").write_text("# 2025-05-05\n\n")
    subprocess.run(["git", "init", "-q", str(ws)], env=env, check=True)  # init commits nothing: this does
    subprocess.run([sys.executable, "-m", "zmem", "init", str(ws)], env=env, check=True, capture_output=True)
    subprocess.run(["git", "add", "-A"], cwd=ws, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "base"], cwd=ws, env=env, check=True)
    while hook_processes(ws):
        time.sleep(0.1)
    return ws


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--a", help="a checkout whose zmem the hooks run (A)")
    ap.add_argument("--b", help="another checkout (B)")
    args = ap.parse_args()
    sides = {"A": args.a, "B": args.b} if args.a and args.b else {"this": None}
    rows: dict[str, list[tuple[float, float, int]]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(prefix="zmem-hook-burst-") as tmp:
        for r in range(args.rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for name in order:
                env = {**os.environ, **GIT, "HOME": tmp}
                if sides[name]:
                    env["PYTHONPATH"] = sides[name]
                ws = workspace(env, Path(tmp) / f"{name}{r}")
                rows[name].append(burst(env, ws, args.commits))
    for name, runs in rows.items():
        wall, cpu, peak = (statistics.median(x[i] for x in runs) for i in range(3))
        print(f"{name}: {args.commits} commits, median of {len(runs)}: wall {wall:.1f} s, machine CPU {cpu:.1f} s, "
              f"hook processes at once (peak) {peak:.0f}")
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
