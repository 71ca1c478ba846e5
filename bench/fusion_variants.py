"""Run a benchmark script with adaptive-fusion variants side by side (an experiment, not recall's code):
each `adaptive:NAME` in --fusion runs adaptive fusion changed as NAME says, `adaptive` is the default.

    python bench/fusion_variants.py bench/paraphrase/run.py --model-path /tmp/minilm.onnx --out WS \\
        --fusion adaptive,adaptive:nolead,adaptive:lead=0.04 --level chunk
    python bench/vec_variants.py notes0 bench/fusion_variants.py bench/quality.py ROOT ... --fusion ...

NAME: parts joined by `+`: `nolead` (no clear-vector-first rule), `lead=X` (fusion.VECTOR_LEAD = X),
`leadE=X` (the rule only when the keyword evidence is below X), and text weights below fusion.WEAK
(evidence E): `zero=X` (0 when E < X), `scale=X` (X * E), `pow=X` (WEAK * (E / WEAK) ** X).
"""
import runpy
import sys

from zmem.query import fusion, search

variant: dict[str, float] = {}
default_weights, default_fuse, default_recall = fusion.query_weights, fusion.adaptive_fuse, search.recall


def query_weights(rarity, texts, text_weight, vector_weight):
    w = default_weights(rarity, texts, text_weight, vector_weight)
    e = w.evidence
    if "zero" in variant and e < variant["zero"]:
        w.text = 0.0
    if "scale" in variant and e < fusion.WEAK:
        w.text = variant["scale"] * e
    if "pow" in variant and e < fusion.WEAK:
        w.text = fusion.WEAK * (e / fusion.WEAK) ** variant["pow"]
    w.vector = 1.0 - w.text
    return w


def adaptive_fuse(bm25, vec, weights):
    lead = fusion.VECTOR_LEAD
    fusion.VECTOR_LEAD = variant.get("lead", lead)
    if "nolead" in variant or weights.evidence >= variant.get("leadE", 2.0):
        fusion.VECTOR_LEAD = float("inf")
    try:
        return default_fuse(bm25, vec, weights)
    finally:
        fusion.VECTOR_LEAD = lead


def recall(*args, fusion=None, **kwargs):
    if fusion and fusion.startswith("adaptive"):
        name = fusion.partition(":")[2]
        variant.clear()
        variant.update((k, float(v or 1)) for k, _, v in (part.partition("=") for part in name.split("+") if part))
        fusion = "adaptive"
    return default_recall(*args, fusion=fusion, **kwargs)


fusion.query_weights, fusion.adaptive_fuse, search.recall = query_weights, adaptive_fuse, recall
sys.argv = sys.argv[1:]
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0])
runpy.run_path(sys.argv[0], run_name="__main__")
