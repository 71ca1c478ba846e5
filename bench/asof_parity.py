"""`recall --as-of HEAD` against `recall` on LoCoMo dev (a benchmark, not a test): how many questions get the
same ten citations (path and lines), turn R@10 of each by the gold lines, and the median time of each through
zmem.Memory (each mode as configured: the workspaces' embedding model for hybrid and vector).

    python3 ../shared/bench/make_workspace.py --data ../shared/bench/locomo-dev.json --out /tmp/locomo-ws
    XDG_CONFIG_HOME=... python bench/asof_parity.py /tmp/locomo-ws --modes bm25,hybrid,vector

The workspaces must be indexed (and embedded) first, e.g. by bench/quality.py or bench/eval.py's cache.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from zmem.memory import Memory


def cited(result) -> list[tuple[str, int, int]]:
    return [(h.path, h.start_line, h.end_line) for h in result.results]


def turn_recall(hits: list[tuple[str, int, int]], gold: list[tuple[str, int]]) -> float:
    return sum(any(p == path and a <= line <= b for p, a, b in hits[:10]) for path, line in gold) / len(gold)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path, help="make_workspace.py's output (questions.jsonl and one workspace each)")
    ap.add_argument("--modes", default="bm25,hybrid,vector")
    args = ap.parse_args()
    questions = [json.loads(line) for line in open(args.root / "questions.jsonl", encoding="utf-8")]
    for mode in args.modes.split(","):
        same = 0
        now_r, then_r, now_t, then_t = [], [], [], []
        for name in dict.fromkeys(q["workspace"] for q in questions):
            memory = Memory(args.root / name)
            for q in (q for q in questions if q["workspace"] == name):
                t = time.perf_counter()
                now = cited(memory.recall(q["question"], k=10, mode=mode, background_embed=False))
                now_t.append(time.perf_counter() - t)
                t = time.perf_counter()
                then = cited(memory.recall(q["question"], k=10, mode=mode, as_of="HEAD", background_embed=False))
                then_t.append(time.perf_counter() - t)
                same += now == then
                gold = [(e["path"], e["line"]) for e in q["evidence"]]
                if gold:
                    now_r.append(turn_recall(now, gold))
                    then_r.append(turn_recall(then, gold))
        print(f"{mode}: the same ten citations for {same} of {len(questions)} questions; turn R@10 now "
              f"{statistics.mean(now_r):.3f}, as-of HEAD {statistics.mean(then_r):.3f}; median ms now "
              f"{statistics.median(now_t) * 1000:.1f}, as-of HEAD {statistics.median(then_t) * 1000:.1f}")


if __name__ == "__main__":
    main()
