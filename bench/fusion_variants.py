"""Run a benchmark script with adaptive-fusion variants side by side (an experiment, not recall's code):
each `adaptive:NAME` in --fusion runs adaptive fusion changed as NAME says, `adaptive` is the default.

    python bench/fusion_variants.py bench/paraphrase/run.py --model-path /tmp/minilm.onnx --out WS \\
        --fusion adaptive,adaptive:nolead,adaptive:lead=2,adaptive:abs=0.06 --level chunk
    python bench/vec_variants.py notes0 bench/fusion_variants.py bench/quality.py ROOT ... --fusion ...

NAME: parts joined by `+`: `nolead` (no clear-vector-first rule), `lead=X` (fusion.VECTOR_LEAD = X
standard deviations), `leadE=X` (the rule only when the keyword evidence is below X), other leads instead of
fusion's: `abs=X` (the closest candidate ranks first when its cosine leads the second's by X, the rule
before 2026-11-26's e5 measurements), `rel=X` (by X times the gap between the first and the `relk`-th,
default 10th), and text weights below fusion.WEAK (evidence E): `zero=X`
(0 when E < X), `scale=X` (X * E), `pow=X` (WEAK * (E / WEAK) ** X). `lonenum`: a lone one- or two-digit number
of the query counts as an identifier again (fusion.LONE_NUMBER matching nothing: the rule before 2026-11-26's
"Small numbers are not identifiers"). `prf=B` (pseudo-relevance feedback in vector space, Rocchio: the query
vector plus B x the mean of the best windows' vectors of the top `prfm` candidates, default 3, normalised, and
recall again with it; `prfsrc=1` takes the candidates from the hybrid answer, else from the vectors alone).
`vnorm=1`: the candidates' cosines min-max normalised to [0, 1] before the weighted sum (`vnorm=2`: from the
median up, the lower half 0), so a model whose cosines crowd together weighs as much as one whose spread.
`vspread=X`: fusion.VECTOR_SPREAD = X (0: cosines never stretched, the rule before 2026-11-26's "Crowded cosines").
FUSION_LOG=FILE writes, per query, the candidates' cosines best first (the default variant's), as JSON.
"""
import json
import os
import re
import runpy
import sys

from zmem.query import fusion, search

variant: dict[str, float] = {}
default_weights, default_fuse, default_recall = fusion.query_weights, fusion.adaptive_fuse, search.recall
default_lone = fusion.LONE_NUMBER


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


cosines: dict[str, list[float]] = {}  # FUSION_LOG: query -> its candidates' cosines, best first
asked = {"query": None, "depth": 0}


def relative_lead(vec, share: float, kth: int):
    """The closest candidate when its lead over the second is at least share x (first - kth-closest)."""
    top = sorted(vec, key=lambda x: -x[1])[:kth]
    if len(top) < 2:
        return None
    spread = top[0][1] - top[-1][1]
    return top[0][0] if spread > 0 and top[0][1] - top[1][1] >= share * spread else None


def absolute_lead(vec, lead: float):
    """The closest candidate when its cosine leads the second's by at least `lead`."""
    top = sorted(vec, key=lambda x: -x[1])[:2]
    return top[0][0] if len(top) == 2 and top[0][1] - top[1][1] >= lead else None


def adaptive_fuse(bm25, vec, weights):
    if not variant and asked["query"] is not None:
        cosines[asked["query"]] = [round(s, 5) for _, s in sorted(vec, key=lambda x: -x[1])]
    lead = fusion.VECTOR_LEAD
    fusion.VECTOR_LEAD = variant.get("lead", lead)
    if "nolead" in variant or "rel" in variant or "abs" in variant or weights.evidence >= variant.get("leadE", 2.0):
        fusion.VECTOR_LEAD = float("inf")
    if variant.get("vnorm") and len(vec) > 1:
        sims = sorted(s for _, s in vec)
        low = sims[len(sims) // 2] if variant["vnorm"] == 2 else sims[0]
        span = (sims[-1] - low) or 1.0
        vec = [(cid, max(0.0, (s - low) / span)) for cid, s in vec]
    spread = fusion.VECTOR_SPREAD
    fusion.VECTOR_SPREAD = variant.get("vspread", spread)
    try:
        ranked = default_fuse(bm25, vec, weights)
    finally:
        fusion.VECTOR_LEAD, fusion.VECTOR_SPREAD = lead, spread
    if ("rel" in variant or "abs" in variant) and weights.evidence < fusion.STRONG:
        first = weights.lead = (relative_lead(vec, variant["rel"], int(variant.get("relk", 10))) if "rel" in variant
                                else absolute_lead(vec, variant["abs"]))
        ranked.sort(key=lambda x: (x[0] not in weights.exact, x[0] != first))  # stable: the fused order otherwise
    return ranked


def recall(*args, fusion=None, **kwargs):
    """search.recall with the variant its fusion names; recall's own deeper search (and feedback's first
    recall) keep the variant of the call they serve."""
    if asked["depth"]:
        return default_recall(*args, fusion=fusion, **kwargs)
    asked["query"] = args[1] if len(args) > 1 else kwargs.get("query")
    if fusion and fusion.startswith("adaptive"):
        name = fusion.partition(":")[2]
        variant.clear()
        variant.update((k, float(v or 1)) for k, _, v in (part.partition("=") for part in name.split("+") if part))
        fusion = "adaptive"
    globals()["fusion"].LONE_NUMBER = re.compile(r"(?!)") if "lonenum" in variant else default_lone
    asked["depth"] += 1
    try:
        if "prf" in variant and kwargs.get("query_vector") is not None:
            kwargs["query_vector"] = feedback(args[0], kwargs, fusion)
        return default_recall(*args, fusion=fusion, **kwargs)
    finally:
        asked["depth"] -= 1


def feedback(conn, kwargs, fusion_name):
    """Rocchio in vector space: q + prf x mean(best window vectors of the top prfm candidates), normalised."""
    import numpy as np
    from zmem.store.vectors import unpack
    q, store, m = kwargs["query_vector"], kwargs["store"], int(variant.get("prfm", 3))
    if variant.get("prfsrc"):
        res = default_recall(conn, asked["query"], **{**kwargs, "k": m, "fusion": fusion_name})
        ids = [conn.execute("SELECT id FROM chunks WHERE path = ? AND start_line = ?",
                            (h.path, h.chunk_start_line)).fetchone()[0] for h in res.results[:m]]
    else:
        ids = [cid for cid, *_ in store.search(q, m)]
    vecs = []
    for cid, wins in store.windows_of(ids, q).items():
        a, b, _ = max(wins, key=lambda w: w[2])
        row = conn.execute("SELECT vector FROM chunk_vectors WHERE chunk_id = ? AND start_line = ? AND end_line = ?",
                           (cid, a, b)).fetchone()
        vecs.append(unpack(row[0]))
    if not vecs:
        return q
    out = np.asarray(q, dtype=np.float64) + variant["prf"] * np.mean(np.asarray(vecs, dtype=np.float64), axis=0)
    return [float(x) for x in out / np.linalg.norm(out)]


fusion.query_weights, fusion.adaptive_fuse, search.recall = query_weights, adaptive_fuse, recall
sys.argv = sys.argv[1:]
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0])
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    if os.environ.get("FUSION_LOG"):
        with open(os.environ["FUSION_LOG"], "w", encoding="utf-8") as f:
            json.dump(cosines, f, ensure_ascii=False)
