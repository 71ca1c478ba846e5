"""Sharing memory through a git hub (not tests): N clones x M appends each through a local bare
repository, and one large-memory figure.

    python bench/bench_sync.py --out /tmp/zmem-sync [--clones 2,5,10] [--appends 5] [--runs 5] [--chunks 200000]
                               [--skip e2e,across,catchup,large] [--reuse]

- end to end: N agents at once, each `zmem append` then `zmem sync` M times (real processes), then
  one more sync each until all converge: notes per second, failed syncs and conflict-marker
  commits (both expected 0), pushes that had to be retried;
- a note's way across: `append` on one clone, `sync` there, `sync` on another, the first `recall`
  hit there (median of --runs);
- index catch-up per pulled commit: K commits fetched and merged with hooks off, then `catch_up`
  in-process (what the post-merge hook or the next command pays);
- large memory: a generated workspace of --chunks chunks: full index (wall, peak RSS), index size
  on disk, recall in-process and as a fresh process (medians), peak RSS of a recall.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import ENV, QUERIES, ZMEM, sh, stats  # noqa: E402
from make_synthetic import make_workspace  # noqa: E402


def zmem(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh(*ZMEM, "-C", str(root), *args, check=check)


def make_hub(base: Path, n: int) -> list[Path]:
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    hub = base / "hub.git"
    sh("git", "init", "-q", "--bare", str(hub))
    clones = []
    for i in range(n):
        root = base / f"clone{i}"
        sh("git", "clone", "-q", str(hub), str(root))
        sh(*ZMEM, "init", str(root))
        if i == 0:
            zmem(root, "sync")
        clones.append(root)
    return clones


def conflict_marker_commits(root: Path) -> int:
    patch = sh("git", "log", "-p", "--all", "--format=commit %H", cwd=root).stdout
    commits, bad = None, set()
    for line in patch.splitlines():
        if line.startswith("commit "):
            commits = line
        elif line.startswith(("+<<<<<<<", "+>>>>>>>")):
            bad.add(commits)
    return len(bad)


def bench_end_to_end(base: Path, n: int, m: int) -> None:
    clones = make_hub(base / f"e2e-{n}", n)
    failed: list[str] = []
    attempts: list[int] = []

    def agent(i: int, root: Path) -> None:
        for j in range(m):
            zmem(root, "append", f"note {j} from agent {i} token{i}x{j}")
            proc = zmem(root, "sync", "--json", check=False)
            if proc.returncode:
                failed.append(proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else str(proc.returncode))
            else:
                attempts.append(json.loads(proc.stdout)["push_attempts"])
    t = time.perf_counter()
    threads = [threading.Thread(target=agent, args=(i, r)) for i, r in enumerate(clones)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for _ in range(2):  # everyone's last notes reach everyone
        for root in clones:
            proc = zmem(root, "sync", check=False)
            if proc.returncode:
                failed.append(proc.stderr.strip())
    wall = time.perf_counter() - t
    heads = {sh("git", "rev-parse", "HEAD", cwd=r).stdout.strip() for r in clones}
    log = next((clones[0] / "memory").glob("2*.md")).read_text(encoding="utf-8")
    missing = sum(1 for i in range(n) for j in range(m) if log.count(f"token{i}x{j}") != 1)
    markers = sum(conflict_marker_commits(r) for r in clones)
    retried = sum(1 for a in attempts if a > 1)
    print(f"  {n:2d} clones x {m} appends: {n * m} notes in {wall:.1f} s = {n * m / wall:.2f} notes/s end to end; "
          f"failed syncs {len(failed)}, conflict-marker commits {markers}, notes missing or doubled {missing}, "
          f"converged {len(heads) == 1}, pushes retried {retried}/{len(attempts)}")
    for f in failed[:3]:
        print(f"     failed: {f}")


def bench_note_across(base: Path, runs: int) -> None:
    a, b = make_hub(base / "across", 2)
    total, steps = [], {"append": [], "sync A": [], "sync B": [], "recall B": []}
    for r in range(runs):
        word = f"kumquat{r}zz"
        t0 = time.perf_counter()
        for name, root, args in (("append", a, ("append", f"note with {word}")), ("sync A", a, ("sync",)),
                                 ("sync B", b, ("sync",))):
            t = time.perf_counter()
            zmem(root, *args)
            steps[name].append(time.perf_counter() - t)
        t = time.perf_counter()
        out = json.loads(zmem(b, "recall", word, "--json").stdout)
        steps["recall B"].append(time.perf_counter() - t)
        assert out["results"] and word in out["results"][0]["snippet"], out
        total.append(time.perf_counter() - t0)
    print(f"  append on A -> first recall hit on B:  {stats(total)}")
    for name, samples in steps.items():
        print(f"     {name:9s} {stats(samples)}")


def bench_catch_up_per_commit(base: Path, runs: int) -> None:
    from zmem.index.catchup import catch_up
    from zmem.workspace.core import find_workspace
    a, b = make_hub(base / "catchup", 2)
    zmem(b, "index")
    ws = find_workspace(b)
    for k in (1, 10, 50):
        samples = []
        for r in range(runs):
            for j in range(k):
                day = f"2025-{1 + j % 12:02d}-{1 + (r * 7 + j) % 28:02d}"
                path = a / "memory" / f"{day}.md"
                with path.open("a", encoding="utf-8") as f:
                    f.write(f"- pulled note {k}.{r}.{j}: the {day} backup ran twice\n")
                sh("git", "-c", "core.hooksPath=/dev/null", "add", "-A", cwd=a)
                sh("git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", f"note {j}", cwd=a)
            sh("git", "-c", "core.hooksPath=/dev/null", "push", "-q", "origin", "HEAD", cwd=a)
            sh("git", "-c", "core.hooksPath=/dev/null", "pull", "-q", "--ff-only", cwd=b)
            t = time.perf_counter()
            catch_up(ws)
            samples.append((time.perf_counter() - t) / k)
        print(f"  catch-up per pulled commit, {k:2d} commits at once: {stats(samples)}")


def bench_large(base: Path, chunks: int, runs: int, reuse: bool = False) -> None:
    from zmem.index.catchup import catch_up, open_index
    from zmem.query.search import recall
    from zmem.workspace.core import find_workspace
    root = base / f"large-{chunks}"
    files = max(1000, chunks // 20)
    if not (reuse and (root / ".zmem" / "index.sqlite").exists()):
        shutil.rmtree(root, ignore_errors=True)
        # ~950 bytes of generated note per chunk (measured: 1,450 gave 305k chunks for 200k)
        make_workspace(root, files=files, commits=50, seed=4, bytes_per_file=chunks * 950 // files)
        time.sleep(2.1)  # past the 2 s window in which a file's mtime cannot be trusted yet
        t = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", *ZMEM, "-C", str(root), "index", "--full", "--json"],
                              capture_output=True, text=True, env=ENV)
        wall = time.perf_counter() - t
        index_rss = int(proc.stderr.strip().splitlines()[-1]) / 1024
        print(f"  full index {wall:.0f} s wall, peak RSS of its largest process {index_rss:.0f} MB")
    ws = find_workspace(root)
    conn = open_index(ws)
    n = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    size = sum(p.stat().st_size for p in (root / ".zmem").glob("index.sqlite*")) / 1e6
    print(f"  {n} chunks from {files} files: index on disk {size:.0f} MB ({size * 1e6 / n:.0f} bytes per chunk)")
    catch_up(ws, lock_timeout=600)
    samples = []
    for _ in range(runs):
        for q in QUERIES:
            t = time.perf_counter()
            recall(conn, q, k=6)
            samples.append(time.perf_counter() - t)
    print(f"  recall in-process:                 {stats(samples)}")
    conn.close()
    samples, rss = [], []
    for _ in range(max(1, runs // 2)):
        for q in QUERIES:
            t = time.perf_counter()
            proc = subprocess.run(["/usr/bin/time", "-f", "%M", *ZMEM, "-C", str(root), "recall", q, "--json"],
                                  capture_output=True, text=True, env=ENV)
            samples.append(time.perf_counter() - t)
            rss.append(int(proc.stderr.strip().splitlines()[-1]) / 1024)
    print(f"  recall as a fresh process:         {stats(samples)}")
    print(f"  peak RSS of a recall process: median {statistics.median(rss):.0f} MB (max {max(rss):.0f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp/zmem-sync"))
    ap.add_argument("--clones", default="2,5,10")
    ap.add_argument("--appends", type=int, default=5, help="appends per clone")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chunks", type=int, default=200_000, help="chunks of the large workspace (0: skip)")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: e2e,across,catchup,large")
    ap.add_argument("--reuse", action="store_true", help="large: measure the index a previous run built")
    args = ap.parse_args()
    skip = set(args.skip.split(","))
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}")
    if "e2e" not in skip:
        for n in [int(s) for s in args.clones.split(",") if s]:
            bench_end_to_end(args.out, n, args.appends)
    if "across" not in skip:
        bench_note_across(args.out, args.runs)
    if "catchup" not in skip:
        bench_catch_up_per_commit(args.out, args.runs)
    if args.chunks and "large" not in skip:
        bench_large(args.out, args.chunks, args.runs, args.reuse)
    print(f"load average at end: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
