"""memory_search round trip over MCP (not a test): a real `zmem mcp` stdio subprocess driven by the
SDK's own client, at N chunks, server warm; the median over --calls calls (queries cycled).

    python bench/bench_mcp.py --out /tmp/zmem-mcp --chunks 10000 [--calls 60] [--model PATH.gguf]

Each call is what an agent's memory_search costs: JSON-RPC over the pipes, the catch-up freshness
check (stats every memory file), recall and snippets, JSON back. Also printed: the same search
in-process (the server's own code path without the protocol), to show the protocol's share.

BM25 always; hybrid too when a GGUF model is given (default ~/.cache/zmem/models/all-MiniLM-L6-v2.f16.gguf)
and llama-cpp-python is installed: the query is embedded by the real model, while the stored window
vectors are random unit vectors under the model's fingerprint (search cost does not depend on what
they mean, and embedding 27k windows for real would take half an hour on 2 cores).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_synthetic import make_workspace  # noqa: E402

QUERIES = ["gateway backup Mac Studio", "Peter Lisbon", "aniversário Marrakech", "北京 出差", "deploy script database",
           "who prefers meetings in the morning", "TLS certificate renewal", "rate limiter 429 retries"]
DEFAULT_MODEL = Path.home() / ".cache" / "zmem" / "models" / "all-MiniLM-L6-v2.f16.gguf"


def stats(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    return f"median {statistics.median(ms):6.1f} ms  (min {ms[0]:.1f}, p90 {p90:.1f}, max {ms[-1]:.1f}, n={len(ms)})"


async def over_mcp(root: Path, calls: int, warmup: int, env: dict) -> tuple[list[float], dict]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    params = StdioServerParameters(command=sys.executable, args=["-m", "zmem", "-C", str(root), "mcp"], env=env)
    samples, last = [], {}
    with tempfile.TemporaryFile("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for i in range(warmup + calls):
                    t = time.perf_counter()
                    res = await session.call_tool("memory_search", {"query": QUERIES[i % len(QUERIES)]})
                    dt = time.perf_counter() - t
                    if res.is_error:
                        raise SystemExit(f"memory_search failed: {res.content[0].text}")
                    if i >= warmup:
                        samples.append(dt)
                    last = json.loads(res.content[0].text)
    return samples, last


def in_process(root: Path, calls: int, warmup: int) -> list[float]:
    from zmem.mcp.server import search
    from zmem.memory import Memory
    memory = Memory(root, query_timeout=5.0, watch=True)  # as the server keeps it
    samples = []
    for i in range(warmup + calls):
        t = time.perf_counter()
        search(memory, QUERIES[i % len(QUERIES)], max_results=6, min_score=0.0)
        if i >= warmup:
            samples.append(time.perf_counter() - t)
    memory.close()
    return samples


def random_vectors(root: Path) -> str:
    """Random unit vectors for every window, stored under the configured model's fingerprint."""
    import numpy as np
    from zmem.text.chunking import chunk_windows
    from zmem.index.embedding import providers, vector_fingerprint
    from zmem.index.catchup import open_index
    from zmem.store.vectors import VectorStore
    from zmem.workspace.core import find_workspace
    ws = find_workspace(root)
    embedder = providers(ws).primary
    dims = len(embedder.embed(["dimension probe"], "query")[0])
    conn = open_index(ws)
    store = VectorStore(conn)
    rows = conn.execute("SELECT id, text, heading, start_line FROM chunks").fetchall()
    wins = [w for r in rows for w in chunk_windows(*r)]
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(len(wins), dims)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    conn.execute("BEGIN")
    store.reset(vector_fingerprint(embedder))
    store.add([(cid, a, b, v.tolist()) for (cid, a, b, _), v in zip(wins, vecs)])
    conn.execute("COMMIT")
    detail = f"{len(wins)} windows x {dims} dims, vector store: {store.detail}"
    conn.close()
    return detail


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp/zmem-mcp"))
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    args = ap.parse_args()

    # A private user config (no ambient embedding settings), bytecode caching as users have it.
    cfg_home = Path(tempfile.mkdtemp(prefix="zmem-mcp-cfg-"))
    os.environ["XDG_CONFIG_HOME"] = str(cfg_home)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for k in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        os.environ.setdefault(k, "bench")
    for k in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        os.environ.setdefault(k, "bench@example.org")
    env = dict(os.environ)

    from zmem.index.catchup import catch_up, open_index
    from zmem.workspace.core import find_workspace
    shutil.rmtree(args.out, ignore_errors=True)
    make_workspace(args.out, files=max(1, args.chunks * 10 // 28), commits=20, seed=3)
    ws = find_workspace(args.out)
    catch_up(ws, lock_timeout=600)
    conn = open_index(ws)
    chunks, files = (conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("chunks", "files"))
    conn.close()
    time.sleep(2.1)  # files written within 2 s of a check are re-read until their mtime can be trusted
    catch_up(ws)
    print(f"{chunks} chunks in {files} files; {args.calls} calls after {args.warmup} warm-up calls")

    samples, last = asyncio.run(over_mcp(args.out, args.calls, args.warmup, env))
    print(f"  bm25    memory_search over MCP (stdio): {stats(samples)}  [mode {last['mode']}, "
          f"{len(last['results'])} results]")
    print(f"  bm25    same search in-process:         {stats(in_process(args.out, args.calls, args.warmup))}")

    try:
        import llama_cpp  # noqa: F401
        have_llama = True
    except ImportError:
        have_llama = False
    if not (args.model.is_file() and have_llama):
        print(f"  hybrid: skipped ({'no model at ' + str(args.model) if not args.model.is_file() else 'no llama-cpp-python'})")
    else:
        (cfg_home / "zmem").mkdir(parents=True, exist_ok=True)
        (cfg_home / "zmem" / "config.toml").write_text(
            f'[embeddings]\nprovider = "local"\nmodel_path = "{args.model}"\n', encoding="utf-8")
        print(f"  hybrid: {args.model.name}; {random_vectors(args.out)}")
        samples, last = asyncio.run(over_mcp(args.out, args.calls, args.warmup, env))
        print(f"  hybrid  memory_search over MCP (stdio): {stats(samples)}  [mode {last['mode']}, "
              f"provider {last['provider']}]")
        if last["warnings"]:
            print(f"          warnings: {last['warnings']}")
        print(f"  hybrid  same search in-process:         {stats(in_process(args.out, args.calls, args.warmup))}")
    shutil.rmtree(cfg_home, ignore_errors=True)


if __name__ == "__main__":
    main()
