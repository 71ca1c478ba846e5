"""Retrieval quality on LoCoMo dev (a benchmark, not a test): bm25, vector and hybrid recall.

    python3 ../shared/bench/make_workspace.py --data ../shared/bench/locomo-dev.json --out /tmp/locomo-ws
    python bench/quality.py /tmp/locomo-ws --modes bm25,vector,hybrid --fusion adaptive,weighted,rrf \\
        [--model-path ~/.cache/zmem/models/all-MiniLM-L6-v2.f16.gguf | --provider onnx --model-path DIR] [--k 10] \\
        [--rerank MODEL_DIR] [--against /tmp/zmem-quality-main]   # the other run's --out, question by question
    python bench/quality.py /tmp/locomo-ws --base-url http://127.0.0.1:18766/v1 --model e5 \\
        --query-prefix "query: " --document-prefix "passage: "     # an endpoint: bench/e5_server.py

Indexes each conversation workspace (embedding with the local GGUF model, or the onnx provider's
model directory, when --model-path is given), runs recall in-process for every question, writes results per mode and prints the shared
scorer's table for each (turn/day recall@k, nDCG@10, lines cited@10, budget R@N), and the budget R@10
the same hits would reach in the best order (the ceiling of reordering them). Also prints the median
in-process recall latency per mode.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from halves import half

# ../shared/bench next to the checkout; from a git worktree (/work/wt/NAME) the checkout's parent's
SHARED = next((p / "shared" / "bench" for p in Path(__file__).resolve().parents[1:4]
               if (p / "shared" / "bench" / "score.py").exists()), Path("../shared/bench"))


def configure(args) -> None:
    """A private user config selecting the local provider and chunk size (the workspaces' files
    stay untouched; their indexes follow the settings)."""
    home = Path(tempfile.mkdtemp(prefix="zmem-quality-"))
    os.environ["XDG_CONFIG_HOME"] = str(home)
    (home / "zmem").mkdir(parents=True)
    text = f"[index]\nchunk_tokens = {args.chunk_tokens}\nchunk_overlap = {args.chunk_overlap}\n"
    if args.base_url:  # an OpenAI-compatible endpoint (bench/e5_server.py for multilingual-e5-small)
        text += f'[embeddings]\nprovider = "openai"\nbase_url = "{args.base_url}"\nmodel = "{args.model}"\n'
    elif args.model_path:
        text += (f'[embeddings]\nprovider = "{args.provider}"\nmodel_path = "{Path(args.model_path).expanduser()}"\n'
                 f'threads = {args.threads}\n')
    if args.base_url or args.model_path:
        text += f'query_prefix = {json.dumps(args.query_prefix)}\ndocument_prefix = {json.dumps(args.document_prefix)}\n'
    (home / "zmem" / "config.toml").write_text(text)


def budgets(qfile: Path, results: Path, turns: Path, best_order: bool = False) -> dict[str, float]:
    """Each scored question's budget R@10 (question id -> value); best_order: of the same hits in the best
    order (those citing an evidence turn first, shorter first), what ordering alone could reach."""
    sys.path.insert(0, str(SHARED))
    import score
    turn_lines: dict = {}
    for t in score.load_jsonl(turns):
        turn_lines.setdefault(t["workspace"], set()).add((t["path"], int(t["line"])))
    got = {r["id"]: r["results"] for r in score.load_jsonl(results)}
    out = {}
    for q in score.load_jsonl(qfile):
        if not q["evidence"]:
            continue
        hits = got.get(q["id"], [])
        if best_order:
            evidence = {(e["path"], int(e["line"])) for e in q["evidence"]}
            hits = sorted(hits, key=lambda r: (not evidence & set(score.result_lines(r)), r["end_line"] - r["start_line"]))
        out[q["id"]] = score.score_question(q, hits, turn_lines.get(q["workspace"], set()))["budget_R@10"]
    return out


def paired(base: dict[str, float], new: dict[str, float]) -> str:
    """The per-question difference new - base: its mean, how many questions gained and lost, and a 95% bootstrap
    interval of the mean (a half of LoCoMo holds ~500 questions; a change moves ~20 of them)."""
    import random
    diff = [new[q] - base[q] for q in new if q in base]
    rng = random.Random(0)
    means = sorted(sum(rng.choice(diff) for _ in diff) / len(diff) for _ in range(1000))
    return (f"{sum(diff) / len(diff):+.4f} ({sum(d > 0 for d in diff)} questions gained, {sum(d < 0 for d in diff)} lost; "
            f"95% bootstrap interval {means[25]:+.4f} to {means[975]:+.4f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path, help="output of make_workspace.py")
    ap.add_argument("--modes", default="bm25,vector,hybrid")
    ap.add_argument("--fusion", default="adaptive,weighted", help="fusion methods to try for hybrid")
    ap.add_argument("--model-path", help="embedding model: a GGUF (local provider) or an onnx model directory")
    ap.add_argument("--base-url", help="an OpenAI-compatible embeddings endpoint instead of --model-path")
    ap.add_argument("--model", default="e5", help="the endpoint's model name (with --base-url)")
    ap.add_argument("--provider", default="local", help="embeddings.provider for --model-path: local or onnx")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--query-prefix", default="", help='e.g. "search_query: " for nomic-embed-text')
    ap.add_argument("--document-prefix", default="", help='e.g. "search_document: " for nomic-embed-text')
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--chunk-tokens", type=int, default=400, help="index.chunk_tokens (re-chunks the workspaces' indexes)")
    ap.add_argument("--chunk-overlap", type=int, default=80, help="index.chunk_overlap")
    ap.add_argument("--text-weight", type=float, default=0.7, help="weighted fusion: BM25 weight (vector: 1 - this)")
    ap.add_argument("--snippet-chars", type=int, default=700, help="snippet length (cited lines grow with it)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions")
    ap.add_argument("--split", choices=("all", "tune", "heldout"), default="all",
                    help="a deterministic half of the questions (bench/halves.py, the same as eval.py's): tune on "
                         "`tune`, report `heldout`")
    ap.add_argument("--out", type=Path, default=Path("/tmp/zmem-quality"))
    ap.add_argument("--rerank", help="a reranker model directory (a cross-encoder, zmem.query.rerank) for every run")
    ap.add_argument("--read-first", action="store_true",
                    help='hybrid\'s first hits read token by token by the model, as [recall] rerank = "embedding" does')
    ap.add_argument("--against", type=Path, help="another run's --out: each mode's budget R@10 compared question by "
                                                "question (gained, lost, a bootstrap interval)")
    args = ap.parse_args()
    configure(args)
    args.model_path = args.model_path or args.base_url
    stage = None
    if args.rerank:
        from functools import partial
        from zmem.query import rerank
        stage = partial(rerank.stage, rerank.load(args.rerank))

    from zmem.index.embedding import providers, run_embed_job
    from zmem.memory import _query_vector
    from zmem.index.catchup import catch_up, open_index
    from zmem.query.search import recall
    from zmem.workspace.core import find_workspace
    # --read-first: the first hits read token by token, as Memory.recall does with [recall] rerank = "embedding"
    # (an older checkout's recall may not take it)
    covers = args.read_first and "cover" in inspect.signature(recall).parameters
    if covers:
        from zmem.index.queryvector import token_cover

    questions = [json.loads(line) for line in open(args.root / "questions.jsonl", encoding="utf-8") if line.strip()]
    if args.split != "all":
        want = "tuning" if args.split == "tune" else "heldout"
        questions = [q for q in questions if half("locomo", q["id"]) == want]
    if args.limit:
        questions = questions[:args.limit]
    args.out.mkdir(parents=True, exist_ok=True)
    qfile = args.out / "questions.jsonl"  # the questions scored (a half, with --split)
    qfile.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    modes = [m for m in args.modes.split(",") if m]
    if not args.model_path:
        modes = ["bm25"]
    runs = [(m, f) for m in modes for f in (args.fusion.split(",") if m == "hybrid" else ["-"])]
    args.out.mkdir(parents=True, exist_ok=True)
    outputs = {run: open(args.out / f"results-{run[0]}-{run[1]}.jsonl", "w") for run in runs}
    latency: dict = {run: [] for run in runs}
    by_ws: dict[str, list] = {}
    for q in questions:
        by_ws.setdefault(q["workspace"], []).append(q)
    for name, qs in by_ws.items():
        ws = find_workspace(args.root / name)
        t = time.perf_counter()
        catch_up(ws, lock_timeout=600)
        report = run_embed_job(ws) if args.model_path else None
        conn = open_index(ws)
        provs = providers(ws)
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        print(f"{name}: {chunks} chunks indexed in {time.perf_counter() - t:.1f} s"
              + (f" ({report.embedded} embedded, {report.from_cache} cached)" if report else ""), file=sys.stderr)
        for q in qs:
            qvec = store = None
            if args.model_path:  # one provider for all questions: an onnx session loads its model once
                qvec, store, notes = _query_vector(ws, conn, q["question"], 30, False, lambda: provs)
            for mode, fusion in runs:
                t = time.perf_counter()
                res = recall(conn, q["question"], k=args.k, mode=mode, query_vector=qvec, store=store,
                             fusion=fusion if fusion != "-" else "rrf", text_weight=args.text_weight,
                             vector_weight=1 - args.text_weight, multiplier=ws.config.candidate_multiplier, snippet_chars=args.snippet_chars,
                             rerank=stage, **({"cover": token_cover(ws, store, lambda: provs, 30) if qvec else None}
                                              if covers else {}))
                latency[(mode, fusion)].append(time.perf_counter() - t)
                hits = [{"path": h.path, "start_line": h.start_line, "end_line": h.end_line,
                         "chunk": [h.chunk_start_line, h.chunk_end_line]} for h in res.results]
                outputs[(mode, fusion)].write(json.dumps({"id": q["id"], "results": hits}) + "\n")
        conn.close()
    for f in outputs.values():
        f.close()
    for mode, fusion in runs:
        label = mode if fusion == "-" else f"{mode} ({fusion})"
        print(f"\n=== {label}: median in-process recall {statistics.median(latency[(mode, fusion)]) * 1000:.1f} ms")
        subprocess.run([sys.executable, str(SHARED / "score.py"), str(qfile),
                        str(args.out / f"results-{mode}-{fusion}.jsonl"), "--turns", str(args.root / "turns.jsonl"),
                        "--json", str(args.out / f"score-{mode}-{fusion}.json")], check=True)
        results, turns = args.out / f"results-{mode}-{fusion}.jsonl", args.root / "turns.jsonl"
        now = budgets(qfile, results, turns)
        best = budgets(qfile, results, turns, best_order=True)
        print(f"budget R@10 {sum(now.values()) / len(now):.3f}; the same hits in the best order (evidence first): "
              f"{sum(best.values()) / len(best):.3f}")
        if args.against:
            print(f"budget R@10 against {args.against}: "
                  f"{paired(budgets(qfile, args.against / results.name, turns), now)}")


if __name__ == "__main__":
    main()
