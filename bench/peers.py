"""zmem and QMD side by side on the same generated workspaces: full index, no-op update, fresh search.

    mkdir /tmp/qmd && (cd /tmp/qmd && npm install bun @tobilu/qmd@2.8.3)   # outside the repository
    python bench/peers.py --qmd /tmp/qmd --out /tmp/peers --sizes 2000,10000 [--runs 5]

QMD 2.8.3 runs on Bun (it segfaults under Node 20). Each size gets one workspace from make_synthetic.py
(200 commits); QMD indexes the same folder (`qmd collection add`, its index under a private
XDG_CACHE_HOME; `--mask '**/*.md'`), zmem the git workspace. Every command is a fresh process, measured
with /usr/bin/time (wall, user+sys CPU, peak RSS); medians over --runs, with the load average beside
each row, and zmem's recalls once more while `zmem watch` runs (zmem.index.fsmonitor). `qmd search` requires
every query word; `zmem recall` ranks chunks holding any of them.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUERIES = ["gateway backup Mac Studio", "Peter Lisbon", "retry backoff"]
# no automatic watcher (zmem.index.autowatch): the rows without one measure the per-file check; with one:
# bench/bench_served.py's "auto"
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "ZMEM_WATCH_AUTO": "0"}


def timed(argv: list[str], cwd: Path, env: dict) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one process."""
    proc = subprocess.run(["/usr/bin/time", "-f", "TIME %e %U %S %M", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True)
    line = [x for x in proc.stderr.splitlines() if x.startswith("TIME ")]
    if proc.returncode or not line:
        raise SystemExit(f"{argv} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    _, wall, user, system, rss = line[-1].split()
    return float(wall), float(user) + float(system), int(rss) / 1024


def row(name: str, samples: list[tuple[float, float, float]]) -> str:
    wall, cpu, rss = (statistics.median(s[i] for s in samples) for i in range(3))
    return f"| {name} | {wall * 1000:,.0f} ms | {cpu * 1000:,.0f} ms | {rss:.0f} MB | {os.getloadavg()[0]:.1f} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qmd", type=Path, required=True, help="folder where `npm install bun @tobilu/qmd@2.8.3` ran")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sizes", default="2000,10000")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    bun = args.qmd / "node_modules" / ".bin" / "bun"
    qmd_js = args.qmd / "node_modules" / "@tobilu" / "qmd" / "dist" / "cli" / "qmd.js"
    script = Path(sys.executable).parent / "zmem"  # what agents run; `python -m zmem` also pays runpy's imports
    zmem = [str(script)] if script.exists() else [sys.executable, "-m", "zmem"]
    print("| size: command | wall | CPU | peak RSS | load |\n|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        ws = args.out / f"ws{size}"
        if not ws.exists():
            subprocess.run([sys.executable, str(HERE / "make_synthetic.py"), "--out", str(ws), "--files", str(size),
                            "--commits", "200", "--seed", "1"], check=True, capture_output=True)
        cache = args.out / f"qmd-cache{size}"
        qenv = {**ENV, "XDG_CACHE_HOME": str(cache), "XDG_CONFIG_HOME": str(cache / "config"), "HOME": str(cache)}
        cache.mkdir(parents=True, exist_ok=True)
        qmd = [str(bun), str(qmd_js)]
        rows = []
        if not (cache / "qmd" / "index.sqlite").exists():
            rows.append(row(f"{size}: QMD full index (`collection add`)",
                            [timed([*qmd, "collection", "add", str(ws), "--name", "ws", "--mask", "**/*.md"], ws, qenv)]))
        if not (ws / ".zmem" / "index.sqlite").exists():
            rows.append(row(f"{size}: zmem full index (`index`)", [timed([*zmem, "index", "-q"], ws, ENV)]))
        rows.append(row(f"{size}: QMD no-op `update`", [timed([*qmd, "update"], ws, qenv) for _ in range(args.runs)]))
        rows.append(row(f"{size}: zmem no-op `index -q`", [timed([*zmem, "index", "-q"], ws, ENV) for _ in range(args.runs)]))
        for q in QUERIES:
            qs, zs = [], []
            for _ in range(args.runs):  # alternating
                qs.append(timed([*qmd, "search", q], ws, qenv))
                zs.append(timed([*zmem, "recall", q], ws, ENV))
            rows += [row(f"{size}: QMD `search {q}`", qs), row(f"{size}: zmem `recall {q}`", zs)]
        with watching(zmem, ws):  # zmem.index.fsmonitor: a fresh recall asks the watcher instead of the stat sweep
            for q in QUERIES:
                rows.append(row(f"{size}: zmem `recall {q}`, `zmem watch` running",
                                [timed([*zmem, "recall", q], ws, ENV) for _ in range(args.runs)]))
        print("\n".join(rows), flush=True)


@contextlib.contextmanager
def watching(zmem: list[str], ws: Path):
    watcher = subprocess.Popen([*zmem, "watch", "--json"], cwd=ws, env=ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        for line in watcher.stdout:  # ready: watches in place, index caught up
            if '"watching"' in line:
                break
        yield
    finally:
        watcher.terminate()
        watcher.wait()


if __name__ == "__main__":
    main()
