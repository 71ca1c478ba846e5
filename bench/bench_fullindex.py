"""Full index as a fresh process: wall, CPU, peak RSS, chunks/s; A/B of two versions of zmem's code.

    python bench/bench_fullindex.py --sizes 2000,10000,40000 --runs 3,3,1 [--out /tmp/fi] \
        [--a /path/to/old] --b /path/to/new [--full] [--check]

Workspaces come from bench/make_synthetic.py (`--seed 1`, made under --out as fi-N if missing).
Each run deletes the workspace's .zmem and runs `python -m zmem index --json` (keyword index only:
a scratch XDG_CONFIG_HOME says `provider = "none"`); with --full it first builds the index, then
times `zmem index --full` (a rebuild into a temporary file swapped in over the live one).
--a and --b are PYTHONPATH entries holding a `zmem` package (e.g. `git archive main zmem | tar -x
-C /tmp/old`, and a worktree); runs alternate A, B, A, B … so load drifts hit both alike. CPU is the
child's user + sys including its worker processes; peak RSS is the largest of the process and its
workers (wait4's ru_maxrss). --check compares a dump of the index content (files, chunks, facts,
entities, relations, and full-text answers to a few queries) between A and B at every size.
Each row ends with the 1-minute load average when its runs ended.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_synthetic import make_workspace  # noqa: E402

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
QUERIES = ["gateway backup", "Peter Lisbon", "aniversário Marrakech", "北京 出差", "retry backoff", "rolled back deploy"]


def run_index(pythonpath: str, ws: Path, env: dict, args: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one `python -m zmem index ARGS` in the workspace."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "zmem", "index", *args], cwd=ws, env={**env, "PYTHONPATH": pythonpath},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode:
        raise SystemExit(f"zmem index {' '.join(args)} failed with {pythonpath}: {err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def once(pythonpath: str, ws: Path, env: dict, full: bool) -> tuple[float, float, float]:
    shutil.rmtree(ws / ".zmem", ignore_errors=True)
    if full:
        run_index(pythonpath, ws, env, ["-q"])
        return run_index(pythonpath, ws, env, ["--full", "-q"])
    return run_index(pythonpath, ws, env, ["-q"])


def connect(ws: Path):
    try:
        import pysqlite3.dbapi2 as sqlite
    except ImportError:
        import sqlite3 as sqlite
    return sqlite.connect(f"file:{ws / '.zmem' / 'index.sqlite'}?mode=ro", uri=True)


def chunk_count(ws: Path) -> int:
    conn = connect(ws)
    try:
        return conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        conn.close()


def content_digest(ws: Path) -> dict[str, str]:
    """A digest per table of what the index holds (not stat columns or timestamps), and of the
    full-text answers (rowids and bm25 scores) to QUERIES."""
    conn = connect(ws)
    out = {}
    tables = {"files": "SELECT path, blob, size, day, chunks, lines, warning FROM files ORDER BY path",
              "chunks": "SELECT * FROM chunks ORDER BY id",
              "facts": "SELECT * FROM facts ORDER BY id",
              "fact_entities": "SELECT * FROM fact_entities ORDER BY entity, fact_id",
              "relations": "SELECT * FROM relations ORDER BY fact_id, subject, predicate, object",
              "sqlite_sequence": "SELECT * FROM sqlite_sequence ORDER BY name"}
    try:
        for name, sql in tables.items():
            h = hashlib.sha256()
            for row in conn.execute(sql):
                h.update(repr(row).encode())
            out[name] = h.hexdigest()[:16]
        for table in ("chunks_fts", "facts_fts"):
            h = hashlib.sha256()
            for q in QUERIES:
                match = " OR ".join(f'"{w}"' for w in q.split())
                for row in conn.execute(f"SELECT rowid, round(rank, 6) FROM {table} WHERE {table} MATCH ? "
                                        "ORDER BY rank, rowid", (match,)):
                    h.update(repr(row).encode())
            out[table] = h.hexdigest()[:16]
    finally:
        conn.close()
    return out


def fmt(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
    v = [x * scale for x in values]
    med = statistics.median(v)
    return f"{med:.{digits}f}" if len(v) == 1 else f"{med:.{digits}f} ({min(v):.{digits}f}–{max(v):.{digits}f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp"))
    ap.add_argument("--sizes", default="2000,10000,40000")
    ap.add_argument("--runs", default="3", help="runs per side and size; one number or one per size (3,3,1)")
    ap.add_argument("--a", help="PYTHONPATH of version A (the baseline); omitted: only B runs")
    ap.add_argument("--b", required=True, help="PYTHONPATH of version B")
    ap.add_argument("--full", action="store_true", help="time `zmem index --full` over a built index")
    ap.add_argument("--check", action="store_true", help="compare the index content of A and B")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    runs = [int(r) for r in args.runs.split(",")]
    runs = runs * len(sizes) if len(runs) == 1 else runs
    sides = {"A": args.a, "B": args.b} if args.a else {"B": args.b}
    config = Path(tempfile.mkdtemp(prefix="zmem-fi-config-"))
    (config / "zmem").mkdir()
    (config / "zmem" / "config.toml").write_text('[embeddings]\nprovider = "none"\n')
    env = {**ENV, "XDG_CONFIG_HOME": str(config)}
    print(f"{'files':>6} {'side':4} {'chunks':>7} {'wall s':>18} {'CPU s':>18} {'peak RSS MB':>18} {'chunks/s':>7} load")
    for n, k in zip(sizes, runs):
        ws = args.out / f"fi-{n}"
        if not (ws / ".git").exists():
            info = make_workspace(ws, files=n, seed=1)
            print(f"made {ws}: {info['files']} files, {info['bytes'] / 1e6:.1f} MB")
        samples: dict[str, list[tuple[float, float, float]]] = {s: [] for s in sides}
        digests = {}
        chunks = {}
        for _ in range(k):
            for side, path in sides.items():
                samples[side].append(once(path, ws, env, args.full))
                chunks[side] = chunk_count(ws)
                if args.check and side not in digests:
                    digests[side] = content_digest(ws)
        load = open("/proc/loadavg").read().split()[0]
        for side in sides:
            wall, cpu, rss = zip(*samples[side])
            rate = chunks[side] / statistics.median(wall)
            print(f"{n:>6} {side:4} {chunks[side]:>7} {fmt(wall):>18} {fmt(cpu):>18} {fmt(rss, digits=0):>18} "
                  f"{rate:>7.0f} {load}")
        if args.check and len(digests) == 2:
            diff = [t for t in digests["A"] if digests["A"][t] != digests["B"][t]]
            print(f"       content A vs B: {'identical' if not diff else 'DIFFERENT: ' + ', '.join(diff)}")
    shutil.rmtree(config)


if __name__ == "__main__":
    main()
