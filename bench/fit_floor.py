"""Fit and trace the "nothing matches" floor (zmem/query/floor.py) from bench/eval.py's per-question features.

    python bench/eval.py --model-path M --half tuning --modes hybrid --features --set floor.MIN_ANSWER=0 \\
        --json /tmp/tune.json                                        # every list as if there were no floor
    python bench/fit_floor.py fit /tmp/tune.json                     # coefficients for floor.py
    python bench/eval.py --model-path M --features --set floor.MIN_ANSWER=0 --json /tmp/heldout.json
    python bench/fit_floor.py curve /tmp/heldout.json [--at 0.04,0.06]   # the trade-off at floor.py's coefficients
    python bench/fit_floor.py fit /tmp/minilm.json /tmp/e5.json --half tuning   # two models' --half all runs together
    python bench/eval.py ... --distractors 0 --cache /tmp/eval-0 --features --set floor.MIN_ANSWER=0 --json /tmp/0.json
    python bench/fit_floor.py fit /tmp/300.json /tmp/0.json --half tuning     # two workspace compositions together
    python bench/fit_floor.py select /tmp/300.json /tmp/0.json --half tuning  # the threshold (all modes in the JSONs)

A question's features are its first hybrid hit's `floor_signals` (--explain). fit: a logistic regression
(Newton's method, a small L2 penalty, classes weighed equally) of "the question has an answer that hybrid
lists in its first five" against "no note answers it" (the noanswer and noanswer-tpl sets), on the JSONs
given (the tuning halves; with several, one per model or per kind of workspace, each one's two classes weigh
alike). curve: for thresholds on the probability, the FP@5 of each no-answer set and per set and category the
R@5, hit@1 and budget R@10 hybrid keeps (an emptied list scores 0), next to bm25 and vector alone when the
JSON has them. select: the highest threshold at which, in every JSON, no category loses more than SLACK of R@5
or hit@1 against no floor, nor falls under the better of bm25 and vector alone minus SLACK where it was not
already; a list holding WEAK of the question's rarity is never emptied (fusion.nothing_matches).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(1, str(Path(__file__).resolve().parent))
from zmem.query import floor, fusion  # noqa: E402


def rows(paths: list[Path], which: str = "all") -> list[dict]:
    """Every question of the JSONs (one per model: fitted together) in the half asked for."""
    from halves import half
    out = []
    for source, key, modes in ((i, k, m) for i, p in enumerate(paths) for k, m in json.loads(p.read_text()).items()):
        set_name, qid, category = key.split(" ", 2)
        if which != "all" and half(set_name, qid) != which:
            continue
        h = modes.get("hybrid", {})
        sig = (h.get("explain") or [{}])[0].get("floor_signals")
        out.append({"source": source, "set": set_name, "id": qid, "category": category, "modes": modes, "signals": sig,
                    "noanswer": set_name.startswith("noanswer") or category.startswith("noanswer/"),
                    "adversarial": category == "adversarial"})
    return out


def matrix(rs: list[dict], names: list[str]):
    import numpy as np
    return np.array([[r["signals"][n] for n in names] for r in rs], dtype=float)


def fit(rs: list[dict], names: list[str], l2: float = 1.0):
    import numpy as np
    use = [r for r in rs if r["signals"] and not r["adversarial"] and (r["noanswer"] or r["modes"]["hybrid"].get("r5", 0) > 0)]
    x = matrix(use, names)
    y = np.array([0.0 if r["noanswer"] else 1.0 for r in use])
    mean, std = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / std])
    # the two classes weigh the same, and so does each JSON (model) within a class
    src = np.array([r["source"] for r in use])
    sources = set(src.tolist())
    w = np.zeros(len(use))
    for s in sources:
        for c in (0.0, 1.0):
            cell = (src == s) & (y == c)
            w[cell] = len(use) / (2 * len(sources) * max(cell.sum(), 1))
    beta = np.zeros(z.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-z @ beta))
        grad = z.T @ (w * (p - y)) + l2 * np.r_[0, beta[1:]]
        hess = (z * (w * p * (1 - p))[:, None]).T @ z + l2 * np.diag(np.r_[0, np.ones(len(names))])
        beta -= np.linalg.solve(hess, grad)
    coef = beta[1:] / std
    return float(beta[0] - (coef * mean).sum()), dict(zip(names, coef.tolist())), len(use), int(y.sum())


SLACK = 0.02


def emptied(r: dict, threshold: float) -> bool:
    """Whether the floor at this threshold empties the question's hybrid list (fusion.nothing_matches: a list
    holding WEAK of the question's rarity, or an identifier of it, is kept whatever the probability)."""
    p = probability(r)
    return p is not None and p < threshold and r["signals"]["evidence"] < fusion.WEAK


def false_positives(noanswer: list[dict], threshold: float) -> float:
    """FP@5 of no-answer questions at this threshold: the share whose hybrid list keeps a hit in its first five."""
    kept = sum(not emptied(r, threshold) and r["modes"]["hybrid"]["n_hits5"] > 0 for r in noanswer)
    return kept / max(1, len(noanswer))


def probability(r: dict) -> float | None:
    """floor.py's probability for a question's signals (None: hybrid listed nothing to read them from)."""
    if not r["signals"]:
        return None
    return floor.answer_probability(floor.Signals(**{f.name: r["signals"].get(f.name) for f in fields(floor.Signals)}))


def curve(rs: list[dict], thresholds: list[float]) -> list[str]:
    lines = []
    groups: dict = {}
    for r in rs:
        groups.setdefault((r["set"], r["category"]), []).append(r)
        groups.setdefault((r["set"], "all"), []).append(r)
    for t in thresholds:
        def kept(r, mode):
            return r["modes"][mode], mode == "hybrid" and emptied(r, t)
        fps = []
        for name in sorted({r["set"] for r in rs if r["noanswer"]}):
            na = [r for r in rs if r["set"] == name and r["noanswer"]]
            fps.append(f"{name} {false_positives(na, t):.2f} (n={len(na)})")
        lines.append(f"## threshold {t:.2f}: FP@5 " + ", ".join(fps))
        lines.append("| set | category | n | hybrid R@5 / hit@1 / bR@10 | emptied | bm25 R@5 / hit@1 | vector R@5 / hit@1 |")
        lines.append("|---|---|---|---|---|---|---|")
        for (s, cat), grp in sorted(groups.items()):
            if s.startswith("noanswer"):
                continue
            gold = [r for r in grp if "r5" in r["modes"]["hybrid"]]
            if not gold:
                continue
            def avg(mode, metric, floor_on):
                total = 0.0
                for r in gold:
                    m, gone = kept(r, mode)
                    total += 0.0 if (gone and floor_on) else m[metric]
                return total / len(gold)
            gone = sum(kept(r, "hybrid")[1] for r in gold)
            alone = [" / ".join(f"{avg(m, x, False):.2f}" for x in ("r5", "hit1")) if all(m in r["modes"] for r in gold)
                     else "–" for m in ("bm25", "vector")]
            lines.append(f"| {s} | {cat} | {len(gold)} | " + " / ".join(f"{avg('hybrid', x, True):.2f}" for x in ("r5", "hit1", "br10"))
                         + f" | {gone} | " + " | ".join(alone) + " |")
    return lines


def holds(rs: list[dict], threshold: float) -> bool:
    """select's rule for one JSON's questions at one threshold."""
    groups: dict = {}
    for r in rs:
        if not r["noanswer"] and "r5" in r["modes"]["hybrid"]:
            groups.setdefault((r["set"], r["category"]), []).append(r)
    for grp in groups.values():
        for metric in ("r5", "hit1"):
            free = sum(r["modes"]["hybrid"][metric] for r in grp) / len(grp)
            kept = sum(0.0 if emptied(r, threshold) else r["modes"]["hybrid"][metric] for r in grp) / len(grp)
            alone = [sum(r["modes"][m][metric] for r in grp) / len(grp) for m in ("bm25", "vector")
                     if all(m in r["modes"] for r in grp)]
            best = max(alone, default=0.0)
            if kept < free - SLACK or (kept < best - SLACK <= free):
                return False
    return True


def select(sources: list[list[dict]]) -> list[str]:
    """The highest threshold (steps of 0.005 up to 0.5) at which `holds` on every source, and its FP@5."""
    chosen = None
    for step in range(1, 101):
        t = step * 0.005
        if all(holds(rs, t) for rs in sources):
            chosen = t
    if chosen is None:
        return ["no threshold holds"]
    out = [f"MIN_ANSWER = {chosen:.3f}"]
    for i, rs in enumerate(sources):
        na = [r for r in rs if r["noanswer"]]
        out.append(f"# JSON {i + 1}: no-answer FP@5 {false_positives(na, chosen):.2f} (n={len(na)})")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["fit", "curve", "select"])
    ap.add_argument("json", type=Path, nargs="+", help="eval.py --features JSONs (one per model)")
    ap.add_argument("--half", choices=["heldout", "tuning", "all"], default="all",
                    help="only this half's questions (eval.py --half all writes both)")
    ap.add_argument("--features", default=",".join(floor.COEFFICIENTS) or "best_cosine,outlier,lead,evidence,keyword_cosine,known,agree,terms")
    ap.add_argument("--at", default="", help="thresholds (comma-separated), default floor.MIN_ANSWER and either side")
    ap.add_argument("--l2", type=float, default=1.0)
    args = ap.parse_args()
    rs = rows(args.json, args.half)
    if args.what == "select":
        print("\n".join(select([[r for r in rs if r["source"] == i] for i in range(len(args.json))])))
        return
    if args.what == "fit":
        intercept, coef, n, pos = fit(rs, args.features.split(","), args.l2)
        print(f"# {n} questions, {pos} answered in the first five, {n - pos} without an answer")
        print(f"INTERCEPT = {intercept:.3f}")
        print("COEFFICIENTS = {" + ", ".join(f'"{k}": {v:.3f}' for k, v in coef.items()) + "}")
        return
    at = [float(x) for x in args.at.split(",")] if args.at else [floor.MIN_ANSWER - 0.1, floor.MIN_ANSWER, floor.MIN_ANSWER + 0.1]
    print("\n".join(curve(rs, at)))


if __name__ == "__main__":
    main()
