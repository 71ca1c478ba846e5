"""The optional rerank stage of recall: a cross-encoder (a BERT reading the query and a passage
together, e.g. cross-encoder/ms-marco-MiniLM-L-6-v2) scores the lines each of the top fused hits
would cite, and the hits are ordered by that score, each cited at its best-scoring lines.

Run by ONNX Runtime and Hugging Face `tokenizers` (the `semantic` extra), imported only when a
recall reranks. A model is a directory in the onnx provider's layout (`model.onnx` or an `onnx/`
export, `tokenizer.json`, `config.json` whose architectures say BertForSequenceClassification), as
`zmem model import DIR --format onnx` writes one from safetensors weights."""
from __future__ import annotations

import math
import os
import threading
from pathlib import Path

from zmem.errors import ZmemError

DEFAULT_MODEL = "ms-marco-MiniLM-L6-v2"  # `recall --rerank` without recall.rerank: the catalog's reranker (`zmem model pull ms-marco-MiniLM-L6-v2`)
# The cost is the tokens scored (bench/bench_rerank.py): ~40 passages of ~60 tokens per recall
DEPTH = 30  # fused candidates reranked; the rest follow in fused order
PAIRS = 40  # passages scored per recall: each candidate's best, then second-best ones from the top down
WINDOW_CHARS = 240  # a passage: whole lines of one paragraph or list, at most this long (one longer line: cut)
MAX_TOKENS = 512  # BERT position tables
BATCH = 16
LINE_WEIGHT = 1000.0  # snippet weight of the reranker's lines: above term, vector-window and fact weights
_HINT = (f"install one: `zmem model pull {DEFAULT_MODEL}` (or `zmem model import DIR --format onnx` of a "
         "cross-encoder) and set [recall] rerank to its name or directory")


class RerankError(ZmemError):
    """The reranker cannot run: recall goes on in fused order with this as a warning."""


def not_reranked(e: RerankError) -> str:
    """The warning a recall gives when its reranker cannot run."""
    return f"not reranked, results in fused order: {e.message}; {e.hint}"


def model_dir(spec: str) -> Path:
    """The model directory `spec` names: a path (with a `/`, or starting with `~` or `.`), or a name in
    zmem's model cache (~/.cache/zmem/models/NAME, or NAME.onnx as `zmem model import` names them)."""
    from zmem.workspace.config import user_cache_dir
    if is_path(spec):
        path = Path(spec).expanduser()
        if not path.is_dir():
            raise RerankError(f"no reranker model directory at {spec}", hint=_HINT)
        return path
    models = user_cache_dir() / "models"
    for path in (models / spec, models / f"{spec}.onnx"):
        if path.is_dir():
            return path
    raise RerankError(f"the reranker {spec} is not installed (looked in {models})", hint=_HINT)


def is_path(spec: str) -> bool:
    """Whether recall.rerank names a directory rather than a model in zmem's cache."""
    return "/" in spec or os.sep in spec or spec.startswith(("~", "."))


class CrossEncoder:
    """Scores (query, passage) pairs: one logit each, higher is more relevant. Pairs are encoded as
    the tokenizer's pair template ([CLS] query [SEP] passage [SEP], token types 0 then 1), cut to the
    model's limit, batched by length; threads capped at the cores."""

    def __init__(self, directory: Path, *, threads: int | None = None):
        from zmem.embedders.onnx import _model_dir, default_threads, find_model
        from zmem.embedders.base import EmbeddingError
        try:
            self.model_file = find_model(Path(directory))
        except EmbeddingError as e:
            raise RerankError(e.message.replace("ONNX model", "reranker model"), hint=_HINT) from None
        self.directory = _model_dir(self.model_file)
        self.name = self.directory.name
        config = _json(self.directory / "config.json")
        archs = config.get("architectures") or []
        if not any(str(a).endswith("ForSequenceClassification") for a in archs):
            raise RerankError(f"{self.directory} is not a cross-encoder (config.json architectures: "
                              f"{', '.join(map(str, archs)) or 'none'})",
                              hint="a reranker is a BertForSequenceClassification model such as "
                                   "cross-encoder/ms-marco-MiniLM-L-6-v2; " + _HINT)
        if not (self.directory / "tokenizer.json").is_file():
            raise RerankError(f"{self.directory} has no tokenizer.json", hint=_HINT)
        limits = [config.get("max_position_embeddings"), _json(self.directory / "tokenizer_config.json")
                  .get("model_max_length"), MAX_TOKENS]
        self.max_tokens = min(v for v in limits if isinstance(v, int) and v > 0)
        cores = os.cpu_count() or 1
        self.threads = min(threads, cores) if threads and threads > 0 else default_threads()
        self._session = self._tokenizer = None
        self._lock = threading.Lock()

    def _load(self):
        if self._session is not None:
            return self._session, self._tokenizer
        from zmem.embedders.onnx import load_session
        self._session, self._tokenizer, self._inputs = load_session(
            self.directory, self.model_file, threads=self.threads, max_tokens=self.max_tokens,
            error=RerankError, needs="the reranker", hint=_HINT, what="a text model",
            # busy-waiting pool threads burned a third of the stage's CPU (bench/README.md), more on a busy machine
            spinning=False)
        return self._session, self._tokenizer

    def warm(self) -> None:
        """Load the session and tokenizer now rather than at the first score()."""
        with self._lock:
            self._load()

    def score(self, query: str, passages: list[str]) -> list[float]:
        """One relevance logit per passage, in the passages' order."""
        import numpy as np
        if not passages:
            return []
        with self._lock:
            session, tokenizer = self._load()
            encodings = tokenizer.encode_batch([(query, p) for p in passages])
            # batches of similar length: little padding to compute
            order = sorted(range(len(passages)), key=lambda i: len(encodings[i].ids))
            scores = [0.0] * len(passages)
            for at in range(0, len(order), BATCH):
                rows = order[at:at + BATCH]
                width = max(len(encodings[i].ids) for i in rows)
                feed = {name: np.zeros((len(rows), width), dtype=np.int64)
                        for name in ("input_ids", "attention_mask", "token_type_ids")}
                for r, i in enumerate(rows):
                    e = encodings[i]
                    n = len(e.ids)
                    feed["input_ids"][r, :n], feed["attention_mask"][r, :n] = e.ids, e.attention_mask
                    feed["token_type_ids"][r, :n] = e.type_ids
                try:
                    logits = session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
                except Exception as e:  # noqa: BLE001
                    raise RerankError(f"onnxruntime failed to score with {self.model_file.name}: {e}",
                                      hint=_HINT) from None
                if logits.ndim != 2 or logits.shape[1] != 1:
                    raise RerankError(f"{self.model_file.name} returns {list(logits.shape)}, not one score per pair",
                                      hint="a reranker is a one-label cross-encoder; " + _HINT)
                for r, i in enumerate(rows):
                    scores[i] = float(logits[r, 0])
        return scores


def _json(path: Path) -> dict:
    from zmem.embedders.onnx import read_json_object
    return read_json_object(path, RerankError, _HINT)


_loaded: dict[tuple, CrossEncoder] = {}


def load(spec: str) -> CrossEncoder:
    """The cross-encoder `spec` names (recall.rerank: a directory or a name in the model cache), kept
    for the process's life (the MCP server loads it once) until its model file changes."""
    directory = model_dir(spec)
    key = (str(directory.resolve()), _stamp(directory))
    if key not in _loaded:
        _loaded.clear()  # one reranker at a time
        _loaded[key] = CrossEncoder(directory)
    return _loaded[key]


def _stamp(directory: Path) -> tuple:
    stamps = []
    for name in ("model.onnx", "onnx/model.onnx", "model_quantized.onnx", "tokenizer.json"):
        try:
            st = (directory / name).stat()
            stamps.append((name, st.st_mtime_ns, st.st_size))
        except OSError:
            pass
    return tuple(stamps)


# ----------------------------------------------------------------------------- the stage


def windows(text: str, start_line: int) -> list[tuple[int, int]]:
    """The passages a chunk's hit could cite, as (first, last) line numbers: runs of consecutive
    lines within one paragraph or list (a heading starts a new one), each at most WINDOW_CHARS
    unless it is one longer line. Blank and heading-only lines make no passage of their own."""
    from zmem.text.markdown import ATX
    lines = text.split("\n")
    out: list[tuple[int, int]] = []
    first, size = None, 0
    for i, line in enumerate(lines + [""]):
        starts_block = not line.strip() or ATX.match(line)
        if first is not None and (starts_block or size + 1 + len(line) > WINDOW_CHARS):
            out.append((first, i - 1))
            first = None
        if not line.strip() or (ATX.match(line) and not _followed(lines, i)):
            continue
        if first is None:
            first, size = i, len(line)
        else:
            size += 1 + len(line)
    if not out and lines:  # only headings: the chunk as it is
        out.append((0, len(lines) - 1))
    return [(start_line + a, start_line + b) for a, b in out]


def _followed(lines: list[str], i: int) -> bool:
    """Whether heading i has text under it in this chunk (then it joins that text's first passage)."""
    return i + 1 < len(lines) and bool(lines[i + 1].strip())


def stage(encoder: CrossEncoder, out, query: str, ranked: list[tuple[int, float]], rows: dict[int, tuple],
          bonus: dict[int, dict[int, float]], why: dict[int, dict]) -> list[tuple[int, float]]:
    """search.recall's rerank step (it calls this after fusion, as `rerank`): `ranked` reranked, and
    out.rerank set to the model's name; when the model cannot run, `ranked` as it was and a warning."""
    try:
        ranked = rerank(encoder, query, ranked, rows, bonus, why)
    except RerankError as e:
        out.warnings.append(not_reranked(e))
        return ranked
    out.rerank = encoder.name
    return ranked


def rerank(encoder: CrossEncoder, query: str, ranked: list[tuple[int, float]], rows: dict[int, tuple],
           bonus: dict[int, dict[int, float]], why: dict[int, dict], *, depth: int = DEPTH) -> list[tuple[int, float]]:
    """The top `depth` candidates ordered by the cross-encoder's score of their best passage, then the
    rest in fused order. A candidate's passages (windows()) are ranked by the lines' query-term and
    vector-window weights (what make_snippet would centre on first); each candidate's best is scored,
    and its second-best too while PAIRS allows, top candidates first. A passage shared by overlapping
    chunks is scored once. The chosen passage's lines get LINE_WEIGHT in `bonus` (and `rows` hide what
    follows their paragraph), so the hit cites them, with the rest of their paragraph as the snippet's
    room allows; `why` (--explain) gets the logit as "rerank". A hit's score becomes sigmoid(logit),
    in (0, 1). Raises RerankError when the model cannot run."""
    from zmem.query.search import _block, _line_weights, _r
    top = ranked[:depth]
    candidates: dict[int, list[tuple[int, int]]] = {}
    for cid, _ in top:
        _, _, start, _, _, _, text = rows[cid]
        lines = text.split("\n")
        weights = _line_weights(lines, query)
        extra = bonus.get(cid, {})
        best_line = max(range(len(lines)), key=lambda i: (weights[i] + extra.get(start + i, 0.0), -i))

        def weight(w: tuple[int, int]) -> tuple:
            inside = range(w[0] - start, w[1] - start + 1)
            return (max(weights[i] + extra.get(start + i, 0.0) for i in inside),
                    -min(abs(i - best_line) for i in inside))
        candidates[cid] = sorted(windows(text, start), key=weight, reverse=True)
    chosen = {cid: found[:1] for cid, found in candidates.items()}
    spare = PAIRS - len(top)
    for cid, _ in top:
        if spare <= 0:
            break
        if len(candidates[cid]) > 1:
            chosen[cid].append(candidates[cid][1])
            spare -= 1
    passages: dict[tuple[str, int, int], str] = {}
    for cid, picked in chosen.items():
        _, path, start, _, _, _, text = rows[cid]
        lines = text.split("\n")
        for a, b in picked:
            passages.setdefault((path, a, b), "\n".join(lines[a - start:b - start + 1]))
    keys = list(passages)
    logits = dict(zip(keys, encoder.score(query, [passages[key] for key in keys])))
    scored = []
    for pos, (cid, _) in enumerate(top):
        path = rows[cid][1]
        a, b = max(chosen[cid], key=lambda w: logits[(path, *w)])
        logit = logits[(path, a, b)]
        scored.append((-logit, pos, cid, a, b))
        if why:
            why[cid]["rerank"] = _r(logit)
    scored.sort()
    out = []
    for neg, _, cid, a, b in scored:
        bonus[cid] = {**bonus.get(cid, {}), **{ln: LINE_WEIGHT for ln in range(a, b + 1)}}
        # the lines after the passage's paragraph blanked: make_snippet lets the next paragraph follow a
        # best line that ends its own (an answer after its question); the reranker chose these lines
        row = rows[cid]
        lines = row[6].split("\n")
        end = _block(lines, b - row[2])[1] + 1
        rows[cid] = (*row[:6], "\n".join(lines[:end] + [""] * (len(lines) - end)))
        out.append((cid, _sigmoid(-neg)))
    floor = min((s for _, s in out), default=1.0)
    return out + [(cid, min(s, floor)) for cid, s in ranked[depth:]]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
