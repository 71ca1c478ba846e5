"""Core timings (not tests): catch-up, hook overhead, recall latency, full index, recall RSS.

    python bench/bench_core.py --out /tmp/zmem-bench [--sizes 1000,10000] [--chunks 100000] [--runs 7]

Prints medians (and min/max) for each measurement; the machines are shared and noisy, so compare
medians and ratios, never single runs. Workspaces come from bench/make_synthetic.py.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_synthetic import make_workspace  # noqa: E402

ZMEM = [sys.executable, "-m", "zmem"]
QUERIES = ["gateway backup Mac Studio", "Peter Lisbon", "aniversário Marrakech", "北京 出差", "deploy script database"]
# Bytecode caching as users have it (this environment sets PYTHONDONTWRITEBYTECODE, which makes
# every process recompile zmem's modules).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["ZMEM_WATCH_AUTO"] = "0"  # no automatic watcher: every fresh process does its own freshness check
ENV = {**ENV, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}


def sh(*args, cwd=None, check=True):
    proc = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, env=ENV)
    if check and proc.returncode:
        raise SystemExit(f"{args} failed: {proc.stderr}")
    return proc


def stats(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    return f"median {statistics.median(ms):8.1f} ms  (min {ms[0]:.1f}, max {ms[-1]:.1f}, n={len(ms)})"


def touch_one_and_commit(root: Path, i: int, hooks: bool) -> float:
    """Append a line to one daily log and commit; returns git commit wall time."""
    f = sorted((root / "memory").rglob("*.md"))[i * 7 % 50]
    with f.open("a") as fh:
        fh.write(f"- bench edit {i} {time.time()}\n")
    sh("git", "add", "-A", cwd=root)
    t = time.perf_counter()  # the commit's wall time, including any post-commit hook
    no_hooks = [] if hooks else ["-c", "core.hooksPath=/dev/null"]
    sh("git", *no_hooks, "commit", "-q", "-m", f"edit {i}", cwd=root)
    return time.perf_counter() - t


def bench_catch_up(root: Path, runs: int) -> None:
    from zmem.index.catchup import catch_up
    from zmem.workspace.core import find_workspace
    ws = find_workspace(root)
    catch_up(ws, lock_timeout=600)
    # Files written less than 2 s before a check are re-read (their mtime cannot be trusted yet);
    # a workspace is not normally rewritten all at once, so let the generated files age first.
    time.sleep(2.5)
    catch_up(ws)
    samples = []
    for i in range(runs):
        touch_one_and_commit(root, i, hooks=False)
        t = time.perf_counter()
        r = catch_up(ws)
        samples.append(time.perf_counter() - t)
        assert r.updated, "catch-up found nothing to do"
    print(f"  catch-up after a one-file commit (in-process): {stats(samples)}")
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        catch_up(ws)
        samples.append(time.perf_counter() - t)
    print(f"  catch-up with nothing to do (in-process):      {stats(samples)}")


def bench_hook(root: Path, runs: int) -> None:
    sh(*ZMEM, "-C", str(root), "hooks", "install")
    sh(*ZMEM, "-C", str(root), "index", "--quiet")
    with_hooks, without = [], []
    for i in range(runs):
        without.append(touch_one_and_commit(root, 100 + i, hooks=False))
        sh(*ZMEM, "-C", str(root), "index", "--quiet")
        with_hooks.append(touch_one_and_commit(root, 200 + i, hooks=True))
    sh(*ZMEM, "-C", str(root), "hooks", "uninstall")
    added = statistics.median(with_hooks) - statistics.median(without)
    print(f"  git commit without hooks: {stats(without)}")
    print(f"  git commit with hooks:    {stats(with_hooks)}")
    print(f"  added by the hook (difference of medians): {added * 1000:.1f} ms")


def bench_recall(root: Path, runs: int) -> None:
    from zmem.index.catchup import catch_up, open_index
    from zmem.query.search import recall
    from zmem.workspace.core import find_workspace
    ws = find_workspace(root)
    catch_up(ws, lock_timeout=600)
    samples = []
    for _ in range(runs):
        for q in QUERIES:
            t = time.perf_counter()
            sh(*ZMEM, "-C", str(root), "recall", q, "--json")
            samples.append(time.perf_counter() - t)
    print(f"  recall as a fresh process (incl. catch-up):  {stats(samples)}")
    conn = open_index(ws)
    samples = []
    for _ in range(runs):
        for q in QUERIES:
            t = time.perf_counter()
            recall(conn, q, k=6)
            samples.append(time.perf_counter() - t)
    print(f"  recall in-process (search + snippets):       {stats(samples)}")
    samples = []
    for _ in range(runs):
        for q in QUERIES:
            t = time.perf_counter()
            catch_up(ws)
            recall(conn, q, k=6)
            samples.append(time.perf_counter() - t)
    print(f"  recall in-process incl. freshness check:     {stats(samples)}")
    conn.close()
    rss = []
    for q in QUERIES:
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", *ZMEM, "-C", str(root), "recall", q, "--json"],
                              capture_output=True, text=True, env=ENV)
        rss.append(int(proc.stderr.strip().splitlines()[-1]) / 1024)
    print(f"  peak RSS of a recall process: median {statistics.median(rss):.1f} MB (max {max(rss):.1f})")


def bench_full(root: Path) -> None:
    t = time.perf_counter()
    proc = sh(*ZMEM, "-C", str(root), "index", "--full", "--json")
    wall = time.perf_counter() - t
    out = json.loads(proc.stdout)
    from zmem.index.catchup import open_index
    from zmem.workspace.core import find_workspace
    conn = open_index(find_workspace(root))
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    conn.close()
    size = (root / ".zmem" / "index.sqlite").stat().st_size / 1e6
    print(f"  full index: {chunks} chunks from {len(out['updated'])} files in {wall:.1f} s wall "
          f"({out['seconds']:.1f} s in zmem), index {size:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp/zmem-bench"))
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--chunks", type=int, default=100_000, help="chunks for the full-index run (0: skip)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    for n in [int(s) for s in args.sizes.split(",") if s]:
        root = args.out / f"ws-{n}"
        shutil.rmtree(root, ignore_errors=True)
        t = time.perf_counter()
        make_workspace(root, files=n, commits=min(n, 200), seed=1)
        print(f"workspace of {n} files (generated in {time.perf_counter() - t:.1f} s)")
        bench_catch_up(root, args.runs)
        bench_hook(root, args.runs)
        bench_recall(root, args.runs)
    if args.chunks:
        root = args.out / "ws-full"
        shutil.rmtree(root, ignore_errors=True)
        files = 10_000
        make_workspace(root, files=files, commits=50, seed=2, bytes_per_file=args.chunks * 1450 // files)
        print(f"workspace for the full index ({files} files, target {args.chunks} chunks)")
        bench_full(root)
    print(f"(ru_maxrss of this driver: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)")


if __name__ == "__main__":
    main()
