"""History benchmark: backfill, blame and as-of recall on a deep repository.

    python bench/bench_history.py [--files 500] [--commits 2000] [--out DIR] [--runs 15]

Builds a repository of N daily logs and M commits (1-3 files appended to or edited per commit, via
git fast-import, so every file has many versions), then times, in-process:
- `zmem index --history`: the backfill of every version along the first-parent chain (target ≤ 30 s),
- blame of one cited range: cold (git blame of that file) and warm (cached by blob) (target ≤ 150 ms warm),
- recall --as-of a mid-history commit vs a current-view recall on the same queries (target ≤ 2×),
  BM25, and with --hybrid also hybrid: vectors from a loopback OpenAI-compatible server (the tests'
  deterministic one, 384 dimensions) with every past version's windows in the embedding cache, as
  if each had been embedded while it was current,
and the same as fresh processes (`zmem blame`, `zmem recall --as-of`) for what a shell user sees.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
QUERIES = ["gateway crash", "Peter Lisbon", "backup failed", "Mac Studio host", "reunião", "北京出差",
           "rate limiter 429", "deploy rolled back"]


def median_ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1000:7.1f} ms (min {min(samples) * 1000:.1f}, max {max(samples) * 1000:.1f})"


def make_deep_repo(root: Path, files: int, commits: int, seed: int = 0) -> None:
    """files daily logs; each commit appends a note (sometimes a Retain fact, sometimes an edit of an
    earlier line) to 1-3 of them, so every file has many versions. Written with git fast-import."""
    import random
    sys.path.insert(0, str(HERE))
    from make_synthetic import EN, PEOPLE, PLACES, PROJECTS, THINGS
    rng = random.Random(seed)
    subprocess.run([sys.executable, "-m", "zmem", "init", "--no-hooks", str(root)], check=True, capture_output=True)
    names = [f"memory/{2020 + i // 365}-{(i % 365) // 28 % 12 + 1:02d}-{(i % 28) + 1:02d}-{i}.md" for i in range(files)]
    content = {n: [f"# {n[7:17]}", "", "## Notes", ""] for n in names}
    retain = {n: [] for n in names}
    out = ["reset refs/heads/main"]
    t = 1_600_000_000
    for c in range(commits):
        touched = rng.sample(names, rng.choice((1, 1, 2, 3)))
        for n in touched:
            text = rng.choice(EN).format(p=rng.choice(PEOPLE), p2=rng.choice(PEOPLE), l=rng.choice(PLACES),
                                         t=rng.choice(THINGS), pr=rng.choice(PROJECTS))
            if rng.random() < 0.3:
                retain[n].append(f"- {rng.choice('WBS')} @{rng.choice(PEOPLE)}: {text}")
            elif rng.random() < 0.2 and len(content[n]) > 4:
                content[n][rng.randrange(4, len(content[n]))] = f"- (edited in commit {c}) {text}"
            else:
                content[n].append(f"- {text}")
        t += rng.randrange(60, 7200)
        out += [f"commit refs/heads/main", f"committer bench <b@x> {t} +0000", f"data <<EOM\ncommit {c}\nEOM"]
        for n in touched:
            body = "\n".join(content[n] + (["", "## Retain", *retain[n]] if retain[n] else [])) + "\n"
            data = body.encode()
            out.append(f"M 100644 inline {n}")
            out.append(f"data {len(data)}\n{body}")
    stream = ("\n".join(out) + "\n").encode()
    subprocess.run(["git", "fast-import", "--quiet", "--force"], cwd=root, input=stream, check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True)


def compare_recall(ws, mid: str, runs: int, mode: str) -> None:
    from zmem.memory import Memory
    memory = Memory(ws.root, watch=True)  # providers built once, as a long-running caller (the MCP server) does
    for q in QUERIES:  # warm both paths once
        memory.recall(q, mode=mode)
        memory.recall(q, as_of=mid, mode=mode)
    cur, past = [], []
    for _ in range(runs):
        for q in QUERIES:
            t0 = time.perf_counter()
            now = memory.recall(q, mode=mode)
            cur.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            then = memory.recall(q, as_of=mid, mode=mode)
            past.append(time.perf_counter() - t0)
    memory.close()
    assert now.mode == then.mode == mode, (now.mode, then.mode, now.warnings, then.warnings)
    ratio = statistics.median(past) / statistics.median(cur)
    print(f"{mode} recall (current view):  {median_ms(cur)}")
    print(f"{mode} recall --as-of mid:     {median_ms(past)}  ratio {ratio:.2f}× (target ≤ 2×)")


def embed_history(ws) -> tuple:
    """Vectors for the current files, and every past version's windows in the embedding cache."""
    import os
    sys.path.insert(0, str(HERE.parent / "tests"))
    from helpers.embed_server import EmbeddingServer
    from zmem.history import asof as history
    from zmem.text.chunking import chunk_windows, text_hash
    from zmem.index.embedding import providers, run_embed_job, vector_fingerprint
    from zmem.index.catchup import open_index
    from zmem.store.vectors import pack
    from zmem.workspace.core import find_workspace
    server = EmbeddingServer(dims=384).__enter__()
    home = Path(tempfile.mkdtemp(prefix="zmem-bench-config-"))
    (home / "zmem").mkdir()
    (home / "zmem" / "config.toml").write_text(
        f'[embeddings]\nprovider = "openai"\nmodel = "bench"\nbase_url = "{server.base_url}"\n'
        f'api_key_env = "ZMEM_BENCH_KEY"\n[cache]\nmax_entries = 1000000\n')
    os.environ.update(XDG_CONFIG_HOME=str(home), ZMEM_BENCH_KEY="sk-bench")
    ws = find_workspace(str(ws.root))  # with that configuration
    t0 = time.perf_counter()
    run_embed_job(ws)
    conn = open_index(ws)
    history._ensure_windows(conn)
    embedder = providers(ws).primary
    fp = vector_fingerprint(embedder)
    texts = {}
    for row in conn.execute("SELECT id, text, heading, start_line FROM hist_chunks"):
        for *_, t in chunk_windows(*row):
            texts[text_hash(t)] = t
    have = {h for h, in conn.execute("SELECT hash FROM embedding_cache WHERE fingerprint = ?", (fp,))}
    todo = [(h, t) for h, t in texts.items() if h not in have]
    for i in range(0, len(todo), 256):
        part = todo[i:i + 256]
        vecs = embedder.embed([t for _, t in part], "document")
        conn.executemany("INSERT OR REPLACE INTO embedding_cache(fingerprint, hash, vector, last_used) VALUES(?,?,?,0)",
                         [(fp, h, pack(v)) for (h, _), v in zip(part, vecs)])
        conn.commit()
    windows = conn.execute("SELECT count(*) FROM hist_windows").fetchone()[0]
    conn.close()
    print(f"hybrid: {len(texts)} distinct window texts over the history ({windows} windows), "
          f"embedded and cached in {time.perf_counter() - t0:.1f} s")
    return ws, server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--hybrid", action="store_true", help="also time hybrid recall, current and as-of")
    a = ap.parse_args()
    from zmem.history import asof as history
    from zmem.history.blame import blame
    from zmem.index.catchup import catch_up, open_index
    from zmem.workspace.core import find_workspace

    root = (a.out or Path(tempfile.mkdtemp(prefix="zmem-bench-history-"))) / "ws"
    t0 = time.perf_counter()
    make_deep_repo(root, a.files, a.commits)
    print(f"repository: {a.files} files, {a.commits} commits (written in {time.perf_counter() - t0:.1f} s)")
    ws = find_workspace(str(root))
    catch_up(ws)
    conn = open_index(ws)
    t0 = time.perf_counter()
    up = history.ensure_history(ws, conn)
    backfill = time.perf_counter() - t0
    versions = conn.execute("SELECT count(*) FROM hist_versions").fetchone()[0]
    print(f"backfill: {up.commits} commits, {up.blobs} distinct file versions parsed, {versions} intervals "
          f"in {backfill:.2f} s (target ≤ 30 s)")

    # blame one cited range: a fact line of a file with a deep history
    path, line = conn.execute("SELECT v.path, f.start_line FROM hist_versions v JOIN facts f ON f.path = v.path "
                              "GROUP BY v.path ORDER BY count(*) DESC LIMIT 1").fetchone()
    target = f"{path}#L{line}-L{line + 2}"
    t0 = time.perf_counter()
    blame(ws, conn, target)
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        blame(ws, conn, target)
        warm.append(time.perf_counter() - t0)
    n_versions = conn.execute("SELECT count(*) FROM hist_versions WHERE path = ?", (path,)).fetchone()[0]
    print(f"blame {target} ({n_versions} versions): cold {cold * 1000:.0f} ms; warm {median_ms(warm)} (target ≤ 150 ms)")
    mid = conn.execute("SELECT sha FROM hist_commits ORDER BY seq LIMIT 1 OFFSET ?",
                       (up.commits // 2,)).fetchone()[0]
    conn.close()

    compare_recall(ws, mid, a.runs, "bm25")

    exe = Path(sys.executable).parent / "zmem"
    for label, args in (("zmem blame (process, warm cache)", ["blame", target]),
                        ("zmem recall (process)", ["recall", QUERIES[0]]),
                        ("zmem recall --as-of (process)", ["recall", QUERIES[0], "--as-of", mid])):
        times = []
        for _ in range(max(5, a.runs // 3)):
            t0 = time.perf_counter()
            subprocess.run([str(exe), "-C", str(root), *args], check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
        print(f"{label:34} {median_ms(times)}")
    if a.hybrid:
        ws, server = embed_history(ws)
        compare_recall(ws, mid, a.runs, "hybrid")
        server.__exit__(None, None, None)
    return ws, mid


if __name__ == "__main__":
    main()
