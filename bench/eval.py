"""Recall quality on question sets made four different ways, tuning and held-out halves apart (a
benchmark, not a test).

    python bench/eval.py --model-path /tmp/minilm.onnx                 # held-out halves (what to report)
    python bench/eval.py --model-path /tmp/minilm.onnx --half tuning   # the halves to tune on
    python bench/eval.py ... --sets templated,noanswer --json /tmp/eval.json --code /work/main   # another checkout
    python bench/eval.py --base-url http://127.0.0.1:18767/v1 --model e5 --query-prefix "query: " \\
        --document-prefix "passage: " --cache /tmp/eval-e5     # an endpoint (bench/e5_server.py); one --cache per model

Sets (`--sets`, all by default; nine, made five different ways):
- locomo: LoCoMo dev (../shared/bench, five conversations), one workspace per conversation; its
  categories, with adversarial reported for its false-positive rate too.
- paraphrase: bench/paraphrase (hand-written pairs whose answer shares no content word, and exact tokens;
  EN/PT/ES/ZH) over its workspace and 300 generated daily logs.
- templated: bench/evalsets/templated.py (notes and questions from different templates and synonyms;
  reworded / entity / exact) over its notes and 300 generated daily logs.
- templated-ml: the same method in Portuguese and Spanish (templated.generate_ml: their own templates and
  synonym pairs), over its notes and 300 generated daily logs.
- templated-zh: the same method in Chinese (templated.ML_ZH), over its notes and 300 generated daily logs;
  written after the fusion was tuned (session 14), so both its halves are unseen.
- graph: bench/evalsets/graph.py, questions that cross a relation ("Where does Amara's sister live?": a fact
  about the person at the other end of `R @Bruno sister_of @Amara`), people with the same kinds of Retain fact,
  over its notes and 300 generated daily logs; written in session 19 with the two-hop rule it measures.
- noanswer: bench/evalsets/noanswer.txt, questions about things no note mentions, asked of the paraphrase
  and the templated workspaces (EN/PT/ES/ZH).
- small: bench/paraphrase's notes split into small workspaces of SMALL_FILES files each and no distractors (a
  new user's first notes: fewer windows than the null sample needs, fusion.NULL_MIN), each asked the paraphrase
  questions its notes answer and, in turn, the noanswer questions (category noanswer/LANG); written in session 24.
- noanswer-tpl: questions no note answers made the templated way (templated.generate_noanswer: the reworded
  questions' templates with relatives and things no note names), asked of the same two workspaces (EN/PT/ES/ZH;
  the Chinese ones also of templated-zh's, whose notes have their shape).

Every set is split by bench/halves.py (sha1 of "set:question id", of the question id alone for LoCoMo as
quality.py --split does; first byte even: tuning, odd: held-out), the same split on every run.
Workspaces, indexes and vectors are built once under --cache and reused; query vectors are cached too,
so a re-run costs only the recalls (~1,700 questions x 3 modes).

Metrics (recall in-process with --k 10, the workspace's configured fusion; a hit counts when its cited
lines path#Lstart-Lend hold an answer line, as an agent reads them):
- R@5: the share of a question's answer lines cited by its first 5 hits; hit@1: the first hit cites one.
- bR@10: budget recall, the share of answer lines within the first 10 cited lines (hits in order).
- lines: lines cited by the (up to) 10 hits.
- FP@5: no-answer questions (and LoCoMo adversarial ones) given at least one hit in the first 5.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

from halves import half

HERE = Path(__file__).resolve().parent
SHARED = next((p / "shared" / "bench" for p in HERE.parents if (p / "shared" / "bench" / "score.py").exists()),
              Path("../shared/bench"))
MODES = ("bm25", "vector", "hybrid")
FEATURES = False  # --features: each hybrid hit's --explain fields in the JSON (for calibrating the floor)
READ_FIRST = False  # --read-first: hybrid's first hits read token by token ([recall] rerank = "embedding")
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}


def commit_all(out: Path) -> None:
    env = {**os.environ, **GIT_ENV}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "evaluation workspace"]):
        subprocess.run(["git", "-C", str(out), *cmd], check=True, env=env)


DISTRACTORS = 300  # --distractors: generated daily logs beside each synthetic set's notes
SMALL_FILES = 8  # files of bench/paraphrase per workspace of the "small" set


def with_distractors(out: Path, files: dict[str, str] | None = None, copy_from: Path | None = None) -> None:
    sys.path.insert(0, str(HERE))
    from make_synthetic import make_workspace
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    if copy_from:
        shutil.copytree(copy_from, tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    for path, text in (files or {}).items():
        (tmp / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp / path).write_text(text, encoding="utf-8")
    if DISTRACTORS:
        gen = out.with_name(out.name + ".gen")
        shutil.rmtree(gen, ignore_errors=True)
        make_workspace(gen, DISTRACTORS, seed=0, git=False)
        shutil.copytree(gen / "memory", tmp / "memory", dirs_exist_ok=True)
        shutil.rmtree(gen)
    commit_all(tmp)
    tmp.rename(out)


def other_language_set(cache: Path, name: str) -> tuple[Path, list[dict]]:
    """(workspace, questions) of templated-ml (Portuguese, Spanish) or templated-zh (Chinese); the workspace is
    built under cache when missing."""
    from evalsets.templated import ML_ZH, generate_ml
    files, questions = generate_ml() if name == "templated-ml" else generate_ml(28, ML_ZH, "zh")
    ws = cache / name
    if not ws.exists():
        with_distractors(ws, files=files)
    return ws, questions


def load_sets(cache: Path, names: list[str]) -> list[dict]:
    """Questions as {set, id, category, question, workspace (a directory), gold [(path, line)], lang}; builds
    the workspaces they need under cache when missing."""
    qs: list[dict] = []
    if "locomo" in names:
        root = cache / "locomo"
        if not (root / "questions.jsonl").exists():
            subprocess.run([sys.executable, str(SHARED / "make_workspace.py"), "--data", str(SHARED / "locomo-dev.json"),
                            "--out", str(root)], check=True, stdout=subprocess.DEVNULL)
        for line in open(root / "questions.jsonl", encoding="utf-8"):
            q = json.loads(line)
            qs.append({"set": "locomo", "id": q["id"], "category": q["category_name"], "question": q["question"],
                       "workspace": root / q["workspace"], "gold": [(e["path"], e["line"]) for e in q["evidence"]],
                       "adversarial": q["category_name"] == "adversarial"})
    para_ws = cache / "paraphrase"
    asked_of_both = "noanswer" in names or "noanswer-tpl" in names
    if ("paraphrase" in names or asked_of_both) and not para_ws.exists():
        with_distractors(para_ws, copy_from=HERE / "paraphrase" / "workspace")
    tpl_ws = cache / "templated"
    sys.path.insert(0, str(HERE))
    from evalsets.templated import generate
    files, tpl = generate()
    if ("templated" in names or asked_of_both) and not tpl_ws.exists():
        with_distractors(tpl_ws, files=files)
    if "paraphrase" in names:
        sys.path.insert(0, str(HERE / "paraphrase"))
        from run import load_questions
        for q in load_questions():
            qs.append({"set": "paraphrase", "id": q["id"], "category": f"{q['set']}/{q['lang']}",
                       "question": q["question"], "workspace": para_ws, "gold": [(q["path"], q["line"])]})
    for name in ("templated-ml", "templated-zh"):
        if name not in names:
            continue
        ml_ws, ml = other_language_set(cache, name)
        for q in ml:
            qs.append({"set": name, "id": q["id"], "category": q["category"], "question": q["question"],
                       "workspace": ml_ws, "gold": [(q["path"], q["line"])]})
    if "graph" in names:
        from evalsets.graph import generate as generate_graph
        files, graph = generate_graph()
        graph_ws = cache / "graph"
        if not graph_ws.exists():
            with_distractors(graph_ws, files=files)
        for q in graph:
            qs.append({"set": "graph", "id": q["id"], "category": q["category"], "question": q["question"],
                       "workspace": graph_ws, "gold": [(q["path"], q["line"])]})
    if "templated" in names:
        for q in tpl:
            qs.append({"set": "templated", "id": q["id"], "category": q["category"], "question": q["question"],
                       "workspace": tpl_ws, "gold": [(q["path"], q["line"])]})
    if "noanswer" in names:
        for n, (lang, question) in enumerate(noanswer_questions(), 1):
            for where, ws in (("paraphrase", para_ws), ("templated", tpl_ws)):
                qs.append({"set": "noanswer", "id": f"na{n:03d}", "category": f"{where}/{lang}", "question": question,
                           "workspace": ws, "gold": []})
    if "small" in names:
        qs += small_set(cache)
    if "noanswer-tpl" in names:
        from evalsets.templated import generate_noanswer
        zh_ws = other_language_set(cache, "templated-zh")[0]
        for q in generate_noanswer():
            also = (("templated-zh", zh_ws),) if q["lang"] == "zh" else ()
            for where, ws in (("paraphrase", para_ws), ("templated", tpl_ws), *also):
                qs.append({"set": "noanswer-tpl", "id": q["id"], "category": f"{where}/{q['lang']}",
                           "question": q["question"], "workspace": ws, "gold": []})
    return qs


def small_set(cache: Path) -> list[dict]:
    """The "small" set: bench/paraphrase's files dealt into workspaces of SMALL_FILES (MEMORY.md, pages and daily
    logs mixed), built under cache when missing; the paraphrase questions of each workspace's notes, and the noanswer
    questions dealt out in turn (category noanswer/LANG)."""
    sys.path.insert(0, str(HERE / "paraphrase"))
    from run import load_questions
    src = HERE / "paraphrase" / "workspace"
    files = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.md"))
    n = -(-len(files) // SMALL_FILES)
    spaces = [cache / "small" / f"ws{i}" for i in range(n)]
    for i, ws in enumerate(spaces):
        if not ws.exists():
            tmp = ws.with_name(ws.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            for rel in files[i::n]:
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(src / rel, tmp / rel)
            commit_all(tmp)
            tmp.rename(ws)
    where = {rel: spaces[i % n] for i, rel in enumerate(files)}
    qs = [{"set": "small", "id": q["id"], "category": f"{q['set']}/{q['lang']}", "question": q["question"],
           "workspace": where[q["path"]], "gold": [(q["path"], q["line"])]} for q in load_questions()]
    qs += [{"set": "small", "id": f"na{i + 1:03d}", "category": f"noanswer/{lang}", "question": question,
            "workspace": spaces[i % n], "gold": []} for i, (lang, question) in enumerate(noanswer_questions())]
    return qs


def noanswer_questions() -> list[tuple[str, str]]:
    """(language, question) of bench/evalsets/noanswer.txt, in order."""
    lines = (HERE / "evalsets" / "noanswer.txt").read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("|", 1)) for line in lines if line.strip() and not line.startswith("#")]


def configure(cache: Path, args) -> None:
    """One user config for every run (the workspaces' indexes follow it, so it must not change between runs:
    one --cache per model)."""
    home = cache / "config"
    (home / "zmem").mkdir(parents=True, exist_ok=True)
    text = ""
    if args.base_url:  # an OpenAI-compatible endpoint (bench/e5_server.py for multilingual-e5-small)
        text = f'[embeddings]\nprovider = "openai"\nbase_url = "{args.base_url}"\nmodel = "{args.model}"\n'
    elif args.model_path:
        text = f'[embeddings]\nprovider = "onnx"\nmodel_path = "{Path(args.model_path).expanduser()}"\nthreads = 2\n'
    if args.query_prefix or args.document_prefix:
        text += f'query_prefix = {json.dumps(args.query_prefix)}\ndocument_prefix = {json.dumps(args.document_prefix)}\n'
    (home / "zmem" / "config.toml").write_text(text)
    os.environ["XDG_CONFIG_HOME"] = str(home)


def score(hits: list[tuple[str, int, int]], gold: list[tuple[str, int]], scores: list[float] | None = None) -> dict:
    def covered(hs):
        return {g for g in gold if any(p == g[0] and a <= g[1] <= b for p, a, b in hs)}
    out = {"n_hits5": len(hits[:5]), "lines": sum(b - a + 1 for _, a, b in hits[:10])}
    if scores is not None:  # for calibrating a floor offline: each hit's score, lines and answer lines cited
        out["hits"] = [[s, b - a + 1, [i for i, g in enumerate(gold) if p == g[0] and a <= g[1] <= b]]
                       for s, (p, a, b) in zip(scores, hits)]
    if not gold:
        return out
    budget, left = [], 10
    for p, a, b in hits:
        if left <= 0:
            break
        budget.append((p, a, min(b, a + left - 1)))
        left -= b - a + 1
    out["r5"] = len(covered(hits[:5])) / len(gold)
    out["hit1"] = float(bool(covered(hits[:1])))
    out["br10"] = len(covered(budget)) / len(gold)
    return out


def run(qs: list[dict], modes: list[str], cache: Path, k: int = 10, verbose: bool = False) -> dict:
    """{(set, id, category-key...): {mode: score}} for every question, recall in-process."""
    import inspect

    from zmem.index.catchup import catch_up, open_index
    from zmem.index.embedding import providers, run_embed_job
    from zmem.memory import _query_vector
    from zmem.query.search import recall
    # which of an entity's relations a question's word names, as Memory.recall gives it (--code: an older
    # checkout's recall may not take it)
    relations = "similar" in inspect.signature(recall).parameters
    if relations:
        from zmem.index.queryvector import word_similarity
    # --read-first: the first hits read token by token ([recall] rerank = "embedding")
    covers = READ_FIRST and "cover" in inspect.signature(recall).parameters
    if covers:
        from zmem.index.queryvector import token_cover
    from zmem.store.vectors import VectorStore
    from zmem.workspace.core import find_workspace
    qcache_path = cache / "query-vectors.pickle"
    qcache = pickle.loads(qcache_path.read_bytes()) if qcache_path.exists() else {}
    by_ws: dict[Path, list[dict]] = {}
    for q in qs:
        by_ws.setdefault(q["workspace"], []).append(q)
    results: dict = {}
    latency: dict = {m: [] for m in modes}
    for path, group in by_ws.items():
        ws = find_workspace(path)
        t = time.perf_counter()
        catch_up(ws, lock_timeout=600)
        vectors = any(m != "bm25" for m in modes)
        if vectors:
            run_embed_job(ws)
        conn = open_index(ws)
        provs = providers(ws)
        fp = None
        if vectors and covers:  # queries come from the cache: the model is loaded for token_cover, as a recall's is
            embedder = provs.for_fingerprint(VectorStore(conn).fingerprint())
            if embedder is not None and embedder.in_process:
                embedder.load()
        if verbose:
            print(f"{path.name}: ready in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        for q in group:
            qvec = store = None
            if vectors:
                store = VectorStore(conn)
                fp = fp or store.fingerprint()
                key = (fp, q["question"])
                qvec = qcache.get(key)
                if qvec is None:
                    qvec, store, _ = _query_vector(ws, conn, q["question"], 30, False, lambda: provs)
                    qcache[key] = qvec
            scores = {}
            for mode in modes:
                t = time.perf_counter()
                res = recall(conn, q["question"], k=k, mode=mode, query_vector=qvec, store=store,
                             fusion=ws.config.fusion, vector_weight=ws.config.vector_weight,
                             text_weight=ws.config.text_weight, multiplier=ws.config.candidate_multiplier,
                             explain=FEATURES and mode == "hybrid",
                             **({"similar": word_similarity(ws, store, lambda: provs, 30) if qvec and mode != "bm25"
                                 else None} if relations else {}),
                             **({"cover": token_cover(ws, store, lambda: provs, 30) if qvec else None} if covers else {}))
                latency[mode].append(time.perf_counter() - t)
                scores[mode] = score([(h.path, h.start_line, h.end_line) for h in res.results], q["gold"],
                                     [h.score for h in res.results])
                if FEATURES and mode == "hybrid" and res.results:
                    scores[mode]["explain"] = [h.explain for h in res.results]
            results[(q["set"], q["id"], q["category"], str(q["workspace"]))] = scores
        conn.close()
    qcache_path.write_bytes(pickle.dumps(qcache))
    return {"results": results, "latency": latency}


def groups(qs: list[dict]) -> list[tuple[tuple[str, str], list[tuple]]]:
    """((set, category), result keys) per category and per set ("all"), in the table's order."""
    out: dict = {}
    for q in qs:
        key = (q["set"], q["id"], q["category"], str(q["workspace"]))
        out.setdefault((q["set"], q["category"]), []).append(key)
        out.setdefault((q["set"], "all"), []).append(key)
    return sorted(out.items(), key=lambda x: (x[0][0], x[0][1] == "all", x[0][1]))


def table(qs: list[dict], results: dict, modes: list[str]) -> list[str]:
    rows = ["| set | category | n | " + " | ".join(f"{m} R@5 / hit@1 / bR@10 / lines / FP@5" for m in modes) + " |",
            "|---|---|---|" + "---|" * len(modes)]
    for (s, cat), keys in groups(qs):
        cells = []
        for m in modes:
            got = [results[key][m] for key in keys]
            with_gold = [g for g in got if "r5" in g]
            fp_rows = [g for g, key in zip(got, keys)
                       if s.startswith("noanswer") or cat == "adversarial" or key[2].startswith("noanswer/")]
            parts = []
            if with_gold:
                parts += [f"{sum(g[x] for g in with_gold) / len(with_gold):.2f}" for x in ("r5", "hit1", "br10")]
            else:
                parts += ["–"] * 3
            parts.append(f"{sum(g['lines'] for g in got) / len(got):.1f}")
            parts.append(f"{sum(g['n_hits5'] > 0 for g in fp_rows) / len(fp_rows):.2f}" if fp_rows else "–")
            cells.append(" / ".join(parts))
        rows.append(f"| {s} | {cat} | {len(keys)} | " + " | ".join(cells) + " |")
    return rows


def promise(qs: list[dict], results: dict, slack: float = 0.02) -> list[str]:
    """Issue 25's promise, per category: hybrid R@5 and hit@1 at least the better of bm25 and vector
    alone minus `slack`. The cells where it fails, or a line saying it holds."""
    broken = []
    for (s, cat), keys in groups(qs):
        got = [results[key] for key in keys if "r5" in results[key].get("hybrid", {})]
        if cat == "all" or not got or not all(m in g for g in got for m in ("bm25", "vector")):
            continue
        for metric in ("r5", "hit1"):
            mean = {m: sum(g[m][metric] for g in got) / len(got) for m in ("bm25", "vector", "hybrid")}
            best = max(("bm25", "vector"), key=lambda m: mean[m])
            if mean["hybrid"] < mean[best] - slack:
                broken.append(f"- {s} / {cat} (n={len(got)}) {metric}: hybrid {mean['hybrid']:.2f} < {best} "
                              f"{mean[best]:.2f} - {slack}")
    head = f"hybrid >= the better of bm25 and vector alone - {slack} (R@5, hit@1), per category:"
    return [head + (" holds in every category" if not broken else f" fails in {len(broken)}"), *broken]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-path", help="the onnx model directory (zmem model import ... --format onnx)")
    ap.add_argument("--base-url", help="an OpenAI-compatible embeddings endpoint instead of --model-path")
    ap.add_argument("--model", default="e5", help="the endpoint's model name (with --base-url)")
    ap.add_argument("--query-prefix", default="", help='e.g. "query: " for e5 (embeddings.query_prefix)')
    ap.add_argument("--document-prefix", default="", help='e.g. "passage: " for e5 (embeddings.document_prefix)')
    ap.add_argument("--sets", default="locomo,paraphrase,templated,templated-ml,templated-zh,graph,noanswer,noanswer-tpl,small")
    ap.add_argument("--half", choices=["heldout", "tuning", "all"], default="heldout")
    ap.add_argument("--modes", default=",".join(MODES), help="hybrid alone when tuning: bm25 and vector do not change")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/zmem-eval"), help="workspaces, indexes, query vectors")
    ap.add_argument("--code", type=Path, help="import zmem from this checkout instead (A/B against another version)")
    ap.add_argument("--json", type=Path, help="write every question's scores here")
    ap.add_argument("--limit", type=int, default=0, help="at most N questions per set (a quick look)")
    ap.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                    help="tuning: set a constant of zmem.query first, e.g. fusion.FLOOR=0.2 (repeatable)")
    ap.add_argument("--distractors", type=int, default=300,
                    help="daily logs beside each synthetic set's notes (fewer: a slow endpoint; one --cache per count)")
    ap.add_argument("--features", action="store_true", help="write each hybrid hit's --explain fields (--json)")
    ap.add_argument("--read-first", action="store_true",
                    help='hybrid\'s first hits read token by token by the model, as [recall] rerank = "embedding" does')
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.code:
        sys.path.insert(0, str(args.code.resolve()))
    import importlib
    import zmem
    for spec in args.set:
        name, value = spec.split("=", 1)
        module, attr = name.rsplit(".", 1)
        mod = importlib.import_module(f"zmem.query.{module}")
        setattr(mod, attr, type(getattr(mod, attr))(float(value)))  # an int stays an int (a depth, a count)
    global FEATURES, DISTRACTORS, READ_FIRST
    FEATURES, DISTRACTORS, READ_FIRST = args.features, args.distractors, args.read_first
    args.cache.mkdir(parents=True, exist_ok=True)
    configure(args.cache, args)
    names = [s for s in args.sets.split(",") if s]
    modes = [m for m in args.modes.split(",") if m] if args.model_path or args.base_url else ["bm25"]
    qs = [q for q in load_sets(args.cache, names) if args.half == "all" or half(q["set"], q["id"]) == args.half]
    if args.limit:
        per: dict = {}
        qs = [q for q in qs if per.setdefault(q["set"], []).append(q) or len(per[q["set"]]) <= args.limit]
    t = time.perf_counter()
    out = run(qs, modes, args.cache, verbose=args.verbose)
    lat = {m: sorted(v)[len(v) // 2] * 1000 for m, v in out["latency"].items() if v}
    print(f"# {' '.join(args.set)} {args.half} halves, {len(qs)} questions, zmem from {Path(zmem.__file__).parent.parent}, "
          f"model {args.model_path or args.base_url or 'none'}, {args.distractors} distractor logs, {time.perf_counter() - t:.0f} s; median recall "
          + ", ".join(f"{m} {v:.1f} ms" for m, v in lat.items()))
    print("\n".join(table(qs, out["results"], modes)))
    if {"bm25", "vector", "hybrid"} <= set(modes):
        print("\n" + "\n".join(promise(qs, out["results"])))
    if args.json:
        args.json.write_text(json.dumps({" ".join(k[:2]) + " " + k[2]: v for k, v in out["results"].items()}, indent=0))


if __name__ == "__main__":
    main()
