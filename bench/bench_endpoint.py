"""Fresh-process hybrid recall through an OpenAI-compatible endpoint: CPU (user+sys) and wall per
`zmem recall --mode hybrid` process, against `--mode bm25` in the same workspace, with the loopback
server of the tests (tests/helpers/embed_server.py) as the endpoint. `--baseline DIR` runs the same processes
with another checkout's zmem first on PYTHONPATH (an A/B in one sitting, same server and workspace).

    python bench/bench_endpoint.py --runs 9 --baseline /work/main
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's zmem, and the tests' loopback server
QUERY = "which computer runs the relay"


def timed(cmd, env) -> tuple[float, float, str]:
    """(CPU seconds user+sys, wall seconds, output) of one child process: the difference in
    RUSAGE_CHILDREN around it (it is the only child running)."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    # not from the checkout: `python -m` puts the current directory first on sys.path
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, proc.stdout


def workspace(tmp: Path, files: int, env) -> Path:
    ws = tmp / "ws"
    subprocess.run([sys.executable, "-m", "zmem", "init", "--no-hooks", str(ws)], env=env, check=True,
                   capture_output=True)
    for i in range(files):
        day = f"2025-{1 + i // 28 % 12:02d}-{1 + i % 28:02d}"
        (ws / "memory" / f"{day}-{i}.md").write_text(
            f"# {day}\n\n## Notes\n\n- Meeting {i} about the budget and the roadmap.\n"
            f"- The gateway {i} lives on the Mac Studio in office {i % 7}.\n- Ana drinks espresso on day {i}.\n")
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "notes"], cwd=ws, check=True, env=env)
    return ws


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--baseline", type=Path, help="another checkout to compare with (its zmem/ is imported)")
    args = ap.parse_args()
    from helpers.embed_server import EmbeddingServer

    tmp = Path(tempfile.mkdtemp(prefix="zmem-endpoint-"))
    env = {**os.environ, "HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp / "config"), "ZMEM_BENCH_KEY": "sk-bench", "ZMEM_WATCH_AUTO": "0",
           "PYTHONPATH": str(ROOT), "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # every process would recompile zmem otherwise
    with EmbeddingServer() as server:
        (tmp / "config" / "zmem").mkdir(parents=True)
        (tmp / "config" / "zmem" / "config.toml").write_text(
            f'[embeddings]\nprovider = "openai"\nmodel = "fake-embed"\nbase_url = "{server.base_url}"\n'
            'api_key_env = "ZMEM_BENCH_KEY"\n')
        ws = workspace(tmp, args.files, env)
        timed([sys.executable, "-m", "zmem", "-C", str(ws), "index", "-q"], env)
        timed([sys.executable, "-m", "zmem", "-C", str(ws), "embed", "-q"], env)

        from zmem.embedders import jsonhttp
        own = []
        for _ in range(args.runs):  # the endpoint's own time: one query's POST from a warm process
            t = time.perf_counter()
            jsonhttp.post_json(server.base_url + "/embeddings", {"model": "fake-embed", "input": [QUERY]}, timeout=30)
            own.append(time.perf_counter() - t)
        print(f"workspace: {args.files} files; endpoint's own time per query (warm, loopback): "
              f"{statistics.median(own) * 1000:.1f} ms; load {os.getloadavg()[0]:.2f}")

        checkouts = [("this", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
        results = {}
        for name, src in checkouts:
            for mode in ("bm25", "hybrid"):
                results[name, mode] = []
        for i in range(args.runs):  # interleaved, so load drifts hit every column alike
            for name, src in checkouts:
                for mode in ("bm25", "hybrid"):
                    e = {**env, "PYTHONPATH": str(src)}
                    query = f"{QUERY} {name}{i}"  # a new text each time: recall caches query vectors
                    calls = len(server.embedding_calls())
                    cpu, wall, out = timed([sys.executable, "-m", "zmem", "-C", str(ws), "recall", query,
                                            "--mode", mode, "--json"], e)
                    if mode == "hybrid" and len(server.embedding_calls()) == calls:
                        sys.exit(f"{name}: the query was not embedded through the endpoint")
                    got = json.loads(out)["mode"]
                    if got != mode:
                        sys.exit(f"{name}: asked for {mode}, recall answered {got}")
                    results[name, mode].append((cpu, wall))
        print(f"{'checkout':10} {'mode':7} {'CPU median (min-max) ms':28} {'wall median ms':>14}")
        for (name, mode), rows in results.items():
            cpu = sorted(r[0] * 1000 for r in rows)
            wall = statistics.median(r[1] * 1000 for r in rows)
            print(f"{name:10} {mode:7} {statistics.median(cpu):6.0f} ({cpu[0]:.0f}-{cpu[-1]:.0f}){'':14} {wall:12.0f}")
        for name, _ in checkouts:
            extra = statistics.median(r[0] for r in results[name, "hybrid"]) - statistics.median(
                r[0] for r in results[name, "bm25"])
            print(f"{name}: hybrid costs {extra * 1000:.0f} ms CPU more than bm25 (median)")
        print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
