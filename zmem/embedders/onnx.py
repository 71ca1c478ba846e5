"""The `onnx` provider: a sentence-embedding model run by ONNX Runtime, tokenized by Hugging Face
`tokenizers` (the optional extra `zmem[semantic]`: wheels on every platform, nothing to compile).
The only module that imports onnxruntime or tokenizers, and only when a text is first embedded.

A model is a directory: `model.onnx` (or `model_quantized.onnx`, `model_int8.onnx`, also inside an
`onnx/` folder as Hugging Face exports lay them out), `tokenizer.json`, and the sentence-transformers
files that say how to pool (`1_Pooling/config.json`), how long a text may be
(`sentence_bert_config.json`) and which prefixes queries and documents take
(`config_sentence_transformers.json` "prompts", e.g. e5's "query: " / "passage: ").
`zmem model import DIR --format onnx` writes one from safetensors weights. The graph returns the
last hidden state; pooling (mean over the attention mask, or CLS) happens here."""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path

from zmem.embedders.base import Embedder, EmbeddingError, hash_file_ends
from zmem.install import pip_install
from zmem.workspace.config import user_cache_dir

TYPE_CHECKING = False  # as typing's, without importing typing
if TYPE_CHECKING:
    from zmem.embedders.base import Kind

# in order of preference when model_path is a directory
MODEL_FILES = ("model.onnx", "model_quantized.onnx", "model_int8.onnx", "model_qint8_avx512_vnni.onnx")
MAX_TOKENS = 512  # BERT-family position tables; zmem's chunks are far shorter
_HINT = "write one with `zmem model import DIR --format onnx`, and point [embeddings] model_path at its directory"


def load_session(directory: Path, model_file: Path, *, threads: int, max_tokens: int, error: type[Exception],
                 needs: str, hint: str, what: str, spinning: bool = False, prepack: bool = True,
                 tokenize: bool = True):
    """(ONNX Runtime session, tokenizer, input names) for a model directory in zmem's onnx layout, for the
    embedding provider and the reranker alike; every failure is `error` with a message and hint.
    Idle pool threads sleep rather than spin (busy-wait) for the next operator's work: spinning cost a
    watcher ~40 ms of CPU after each query it embedded, and batches were no faster on 2 shared cores
    (spinning=True lets them spin). prepack=False keeps the weights as they are instead of copying the
    matrices into the layout batches multiply fastest (~40 ms CPU for MiniLM): for a process that embeds
    one query. tokenize=False: no tokenizer yet (None; load_tokenizer)."""
    try:
        ort, _ = _import_runtime()
    except ImportError as e:
        raise error(f"{needs} needs {e.name}", hint=pip_install("semantic")) from None
    tokenizer = load_tokenizer(directory, max_tokens, error, hint) if tokenize else None
    ort.set_default_logger_severity(3)  # errors only: agents read stderr

    def options():
        o = ort.SessionOptions()
        o.intra_op_num_threads = threads
        o.inter_op_num_threads = 1
        if not spinning:
            o.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if not prepack:
            o.add_session_config_entry("session.disable_prepacking", "1")
        return o
    try:
        session = _session(ort, model_file, options)
    except Exception as e:  # noqa: BLE001 - onnxruntime's errors have no common base class
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise error(f"onnxruntime cannot load {model_file}: {first}", hint=hint) from None
    inputs = {i.name for i in session.get_inputs()}
    if "input_ids" not in inputs:
        raise error(f"{model_file.name} takes no input_ids: not {what}", hint=hint)
    return session, tokenizer, inputs


def load_tokenizer(directory: Path, max_tokens: int, error: type[Exception], hint: str):
    """directory's tokenizer.json, as load_session's callers encode with it."""
    _, Tokenizer = _import_runtime()
    try:
        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    except Exception as e:  # noqa: BLE001 - tokenizers raises plain Exceptions on a bad file
        raise error(f"cannot load {directory / 'tokenizer.json'}: {e}", hint=hint) from None
    return _for_zmem(tokenizer, max_tokens)


def _for_zmem(tokenizer, max_tokens: int):
    """tokenizer set up as zmem encodes: no padding, truncated to max_tokens."""
    tokenizer.no_padding()  # padding is done by the caller, per batch, to its longest text
    tokenizer.enable_truncation(max_length=max_tokens, strategy="longest_first")  # a pair: the longer side first
    return tokenizer


def _import_runtime():
    """(onnxruntime, tokenizers.Tokenizer), numpy first. numpy's OpenBLAS starts a thread per core as it
    is imported (~30 ms CPU, more wall on a busy machine); zmem does no large matrix work with it (ONNX
    Runtime has its own kernels), so a process whose first numpy import is this one starts a single thread."""
    import sys
    if "numpy" not in sys.modules and "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        try:
            import numpy  # noqa: F401
        finally:
            del os.environ["OPENBLAS_NUM_THREADS"]  # read once at import: child processes get the user's
    import numpy  # noqa: F401,F811 - outputs are numpy arrays
    import onnxruntime
    from tokenizers import Tokenizer
    return onnxruntime, Tokenizer


GRAPHS = "onnx-graphs"  # under zmem's cache directory: each model's optimised graph, weights in a file to map
GRAPH_FORMAT = 1  # bump when what is written there changes
STALE_GRAPH = 30  # days


# A tokenizer.json this large takes long to build: multilingual-e5-small's 250,002-piece Unigram vocabulary ~0.8 s
# of a fresh recall's ~1.4 s (bench/README.md, "One query's pieces"), and it holds ~280 MB. One text at a time (a
# fresh recall's query, a watcher's queries) is tokenized by a tokenizer of only the pieces it can use (PieceEncoder).
BIG_TOKENIZER = 4_000_000  # bytes (all-MiniLM-L6-v2's WordPiece: 0.7 MB, 25 ms)
VOCAB_FORMAT = 2  # bump when what _unigram_vocab caches changes
# at most this many texts, and characters, are encoded by their pieces in one call (a question's words, a question
# and its first hits' lines); more builds the whole tokenizer, as notes to index do (OnnxEmbedder.embed)
PIECE_TEXTS = 32
PIECE_CHARS = 4000


def piece_encoder(directory: Path, max_tokens: int) -> PieceEncoder | None:
    """An encoder of a few texts by the pieces they can use, for directory's tokenizer.json when that is a large
    Unigram vocabulary (BIG_TOKENIZER) laid out as it can keep (_unigram_vocab); else None."""
    got = _unigram_vocab(directory / "tokenizer.json")
    if got is None:
        return None
    _, Tokenizer = _import_runtime()
    vocab, find = got
    rest = vocab["rest"]
    try:  # the normaliser and pre-tokenizer, with the special pieces alone
        plain = Tokenizer.from_str(json.dumps({**rest, "model": {**rest["model"], "vocab": vocab["head"]}}))
    except Exception:  # noqa: BLE001 - tokenizers raises plain Exceptions: the whole tokenizer says what is wrong
        return None
    return PieceEncoder(vocab, find, plain, Tokenizer, max_tokens)


class PieceEncoder:
    """Encodes a few texts as a large Unigram tokenizer.json does, by a tokenizer of the pieces they can use
    (every substring of their pre-tokenized words the vocabulary holds, and the piece of the lowest score, which
    sets the unknown piece's): a Unigram model splits each pre-token by the scores of the pieces it holds, so it
    splits the same. Building the whole tokenizer is slow (multilingual-e5-small's 250,002 pieces: ~0.8 s) and
    it holds ~280 MB; this one holds the vocabulary's settings and looks pieces up in its cached copy (~2 ms a
    question), so questions and the readings of first hits never need the whole one."""

    def __init__(self, vocab: dict, find, plain, tokenizer_class, max_tokens: int):
        self.vocab, self.find, self.plain = vocab, find, plain
        self.tokenizer_class, self.max_tokens = tokenizer_class, max_tokens

    def encode_batch(self, texts: list[str], add_special_tokens: bool = True) -> list | None:
        """The texts' encodings (ids, attention_mask, type_ids, tokens, offsets, special_tokens_mask), by one
        tokenizer of the pieces any of them can use (a piece another text brings is no substring of this one's
        words, so it splits each the same); None when this cannot stand in for the whole tokenizer (a special token
        past the leading ones in a text, a tokenizer error): the whole one then."""
        vocab, plain = self.vocab, self.plain
        if any(a in text for text in texts for a in vocab["added"]):
            return None
        rest, head, keep, longest = vocab["rest"], vocab["head"], vocab["keep"], vocab["longest"]
        try:
            normal = [plain.normalizer.normalize_str(t) if plain.normalizer else t for t in texts]
            words = [w for n in normal for w, _ in plain.pre_tokenizer.pre_tokenize_str(n)] if plain.pre_tokenizer \
                else normal
            pieces = self.find({w[a:b] for w in words for a in range(len(w))
                                for b in range(a + 1, min(len(w), a + longest) + 1)})
            lowest, at, score = vocab["lowest"]
            if at >= keep:  # the unknown piece's score is the lowest one's
                pieces.setdefault(lowest, (at, score))
            used = sorted(pieces, key=lambda p: pieces[p][0])
            local = head + [[p, pieces[p][1]] for p in used]
            tokenizer = self.tokenizer_class.from_str(json.dumps({**rest, "model": {**rest["model"], "vocab": local}}))
            encodings = _for_zmem(tokenizer, self.max_tokens).encode_batch(texts, add_special_tokens=add_special_tokens)
        except Exception:  # noqa: BLE001 - tokenizers raises plain Exceptions: the whole tokenizer says what is wrong
            return None
        to_global = list(range(keep)) + [pieces[p][0] for p in used]
        from types import SimpleNamespace
        return [SimpleNamespace(ids=[to_global[i] if i < len(to_global) else i for i in e.ids],
                                attention_mask=e.attention_mask, type_ids=e.type_ids, tokens=e.tokens,
                                offsets=e.offsets, special_tokens_mask=e.special_tokens_mask) for e in encodings]


def _unigram_vocab(path: Path):
    """(what PieceEncoder needs of a large Unigram tokenizer.json: the leading special pieces kept at their
    ids (`head` as [piece, score], `keep` of them), the other special tokens, the longest piece, the lowest-scored
    one as (piece, id, score), the rest of the file; and find(strings) -> {piece: (id, score)} for those of the
    strings that are pieces past the head), or None for a small file, another model type, or a layout whose ids it
    cannot keep (the special tokens not first). The pieces are cached in an SQLite table in zmem's cache, keyed by
    the file's path, size, mtime, ctime and inode: building it reads the JSON once (~0.5 s for e5's 17 MB), a
    query then looks up its few hundred substrings (~5 ms; a marshal copy of e5's pieces took ~0.15 s to load). A
    file it cannot serve is remembered as such there too."""
    try:
        st = path.stat()
    except OSError:
        return None
    if st.st_size < BIG_TOKENIZER:
        return None
    import functools
    from zmem.errors import IndexUnusable
    from zmem.store import db
    source = str(path.resolve())
    stamp = hashlib.sha256(json.dumps([*_stamp(st), VOCAB_FORMAT]).encode())
    name = f"vocab-{hashlib.sha256(source.encode()).hexdigest()[:16]}-"
    cache = user_cache_dir() / GRAPHS / f"{name}{stamp.hexdigest()[:16]}.sqlite"
    if cache.is_file():
        try:
            conn = db.connect(cache, readonly=True)
            try:
                vocab = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'vocab'").fetchone()[0])
            finally:
                conn.close()
            return None if vocab is None else (vocab, functools.partial(_cached_pieces, cache))
        except (db.Error, IndexUnusable, TypeError, ValueError):
            pass  # half-gone or from elsewhere: built again below
    vocab = _read_unigram(path)  # None (a large BPE or WordPiece vocabulary...) is cached too: read once
    pieces = vocab.pop("pieces") if vocab is not None else {}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        for old in cache.parent.glob(f"{name}*"):  # another version of this file (or a marshal copy before these)
            if not old.name.endswith(".tmp"):
                _remove(old)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        conn = db.sqlite.connect(str(tmp))
        try:
            conn.execute("PRAGMA journal_mode = OFF")  # a file of its own, renamed into place when whole
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute("CREATE TABLE pieces (piece TEXT PRIMARY KEY, id INTEGER, score REAL) WITHOUT ROWID")
            conn.execute("INSERT INTO meta VALUES ('vocab', ?)", (json.dumps(vocab),))
            conn.executemany("INSERT INTO pieces VALUES (?, ?, ?)",
                             ((p, i, score) for p, (i, score) in sorted(pieces.items())))
            conn.commit()
        finally:
            conn.close()
        tmp.rename(cache)
    except (OSError, db.Error):
        pass  # not cached: read again next time
    return None if vocab is None else (vocab, lambda wanted: {p: pieces[p] for p in wanted if p in pieces})


def _cached_pieces(cache: Path, wanted: set[str]) -> dict[str, tuple[int, float]]:
    """Those of the strings that are pieces of a cached vocabulary (_unigram_vocab), with their id and score."""
    from zmem.store import db
    wanted, out = list(wanted), {}
    conn = db.connect(cache, readonly=True)
    try:
        for i in range(0, len(wanted), 500):  # under any SQLite's limit on parameters
            part = wanted[i:i + 500]
            sql = f"SELECT piece, id, score FROM pieces WHERE piece IN ({','.join('?' * len(part))})"
            out.update((p, (n, score)) for p, n, score in conn.execute(sql, part))
    finally:
        conn.close()
    return out


def _read_unigram(path: Path) -> dict | None:
    """What _unigram_vocab keeps of a tokenizer.json, or None when PieceEncoder cannot stand in for it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        model = data["model"]
        if model.get("type") != "Unigram" or model.get("byte_fallback") or data.get("padding"):
            return None
        vocab = [(str(p), float(score)) for p, score in model["vocab"]]
        added = {int(a["id"]): str(a["content"]) for a in data.get("added_tokens") or []}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    pieces = {p: (i, score) for i, (p, score) in enumerate(vocab)}
    if len(pieces) < len(vocab):  # a piece twice: which of its ids the model uses is its own affair
        return None
    unk = model.get("unk_id")
    keep = 0  # the leading special pieces (and the unknown one), kept at their ids
    while keep < len(vocab) and (added.get(keep) == vocab[keep][0] or keep == unk):
        keep += 1
    # every id the post-processor writes, and the unknown piece's, must be one kept at its place
    if not isinstance(unk, int) or not unk < keep or any(n >= keep for n in _ints(data.get("post_processor"))):
        return None
    low = min(range(len(vocab)), key=lambda n: vocab[n][1])
    return {"rest": {**data, "model": {**model, "vocab": []}, "truncation": None}, "keep": keep,
            "pieces": {p: at for p, at in list(pieces.items())[keep:]}, "head": [list(x) for x in vocab[:keep]],
            "added": [a for i, a in added.items() if i >= keep], "longest": max(len(p) for p, _ in vocab),
            "lowest": [vocab[low][0], low, vocab[low][1]]}


def _ints(node) -> list[int]:
    """Every integer in a JSON value."""
    if isinstance(node, bool):
        return []
    if isinstance(node, int):
        return [node]
    if isinstance(node, dict):
        node = list(node.values())
    return [n for x in node for n in _ints(x)] if isinstance(node, list) else []


def _session(ort, model_file: Path, options):
    """An InferenceSession of model_file. ONNX Runtime parses the whole file and copies every weight out
    of it at each load, then optimises the graph (~160 ms CPU for MiniLM's 90 MB, most of a fresh
    hybrid recall's model load). So the first load saves the optimised graph in zmem's cache with the
    weights in a file of their own, aligned so that later loads map it instead of copying it, and
    later loads read that copy with optimisation off: the same vectors (the same graph runs). The copy
    is keyed by the model file's path, size, mtime, ctime and inode and the runtime's version: a changed model or
    runtime makes a new one, and the copies of other versions of that file are removed. When the cache
    cannot be written, or its copy cannot be read, the model file is loaded as it is."""
    st = model_file.stat()
    source = str(model_file.resolve())
    key = hashlib.sha256(json.dumps([source, *_stamp(st), ort.__version__, GRAPH_FORMAT]).encode())
    root = user_cache_dir() / GRAPHS
    entry = root / key.hexdigest()[:24]
    providers = ["CPUExecutionProvider"]
    if (entry / "model.onnx").is_file():
        o = options()
        o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # done before it was saved
        try:
            return ort.InferenceSession(str(entry / "model.onnx"), o, providers=providers)
        except Exception:  # noqa: BLE001 - damaged (a full disk, a hand edit): written again below
            _remove(entry)
    try:
        root.mkdir(parents=True, exist_ok=True)
        _prune(root, source, ort.__version__)
        import tempfile
        tmp = Path(tempfile.mkdtemp(prefix=f"{entry.name}.", suffix=".tmp", dir=root))
    except OSError:
        return ort.InferenceSession(str(model_file), options(), providers=providers)
    o = options()
    # extended: fusions that hold on any CPU (all would add layout changes tied to this machine's)
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    o.optimized_model_filepath = str(tmp / "model.onnx")
    o.add_session_config_entry("session.optimized_model_external_initializers_file_name", "model.data")
    o.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    try:
        session = ort.InferenceSession(str(model_file), o, providers=providers)
    except Exception:  # noqa: BLE001 - saving failed inside onnxruntime: the model as it is (its error, if any)
        _remove(tmp)
        return ort.InferenceSession(str(model_file), options(), providers=providers)
    try:
        (tmp / "source.json").write_text(json.dumps({"model": source, "onnxruntime": ort.__version__}))
        tmp.rename(entry)
    except OSError:  # a full disk, or another process saved it first: this session is good all the same
        _remove(tmp)
    return session


def _prune(root: Path, source: str, version: str) -> None:
    """Remove the cached graphs of other versions of the model file `source` (for this runtime version;
    another runtime's, once unchanged for STALE_GRAPH days: another environment may still use it), and
    copies a killed process left half-written. A removed copy stays readable to a process mapping it."""
    now = time.time()
    for path in root.iterdir():
        try:
            age = now - path.stat().st_mtime
            if path.name.endswith(".tmp"):
                if age > 600:
                    _remove(path)
                continue
            saved = json.loads((path / "source.json").read_text(encoding="utf-8"))
            if saved["model"] == source and (saved["onnxruntime"] == version or age > STALE_GRAPH * 86400):
                _remove(path)
        except (OSError, ValueError, TypeError, KeyError):
            continue


def _stamp(st) -> list[int]:
    """What tells a file's versions apart in the caches: size, mtime, ctime and inode (a file replaced in place
    keeping its size and mtime, `cp`, `touch -r`, moves its ctime)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _remove(path: Path) -> None:
    """A cached graph's directory, or a vocabulary copy's file (_unigram_vocab), gone."""
    if not path.is_dir():
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass
        return
    import shutil  # not on a load from the cache (~5 ms of imports)
    shutil.rmtree(path, ignore_errors=True)


def find_model(path: Path) -> Path:
    """The .onnx file `path` names, or the preferred one in the directory `path` (or its onnx/)."""
    if path.is_file():
        return path
    if not path.is_dir():
        raise EmbeddingError(f"no ONNX model at {path}", hint=_HINT)
    for folder in (path, path / "onnx"):
        for name in MODEL_FILES:
            if (folder / name).is_file():
                return folder / name
    raise EmbeddingError(f"{path} holds no model.onnx (nor onnx/model.onnx)", hint=_HINT)


def _model_dir(model_file: Path) -> Path:
    """The directory with tokenizer.json: the model's own, or its parent for an onnx/ export."""
    here = model_file.parent
    if not (here / "tokenizer.json").is_file() and here.name == "onnx" and (here.parent / "tokenizer.json").is_file():
        return here.parent
    return here


def read_json_object(path: Path, error: type[Exception] = EmbeddingError, hint: str = _HINT) -> dict:
    """A model directory's JSON file as a dict ({} when absent or not an object); unreadable: `error`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as e:
        raise error(f"cannot read {path}: {e}", hint=hint) from None
    return data if isinstance(data, dict) else {}


def read_settings(directory: Path) -> dict:
    """What the sentence-transformers files say: pooling, max tokens, prefixes."""
    pooling_path = "1_Pooling"
    modules = directory / "modules.json"
    try:
        for module in json.loads(modules.read_text(encoding="utf-8")) if modules.is_file() else []:
            if isinstance(module, dict) and str(module.get("type", "")).endswith(".Pooling") and module.get("path"):
                pooling_path = module["path"]
    except (OSError, ValueError, TypeError) as e:
        raise EmbeddingError(f"cannot read {modules}: {e}", hint=_HINT) from None
    pool = read_json_object(directory / pooling_path / "config.json")
    if pool.get("pooling_mode_cls_token"):
        pooling = "cls"
    elif pool.get("pooling_mode_max_tokens") and not pool.get("pooling_mode_mean_tokens"):
        raise EmbeddingError(f"{directory.name} uses max pooling, which the onnx provider does not apply",
                             hint="use a model with mean or CLS pooling (most sentence-transformers models)")
    else:
        pooling = "mean"  # also a plain BERT without a pooling module
    positions = read_json_object(directory / "config.json").get("max_position_embeddings")
    limit = read_json_object(directory / "sentence_bert_config.json").get("max_seq_length")
    max_tokens = min(int(v) for v in (positions, limit, MAX_TOKENS) if isinstance(v, int) and v > 0)
    prompts = read_json_object(directory / "config_sentence_transformers.json").get("prompts") or {}
    prompts = prompts if isinstance(prompts, dict) else {}
    return {"pooling": pooling, "max_tokens": max_tokens, "query_prefix": prompts.get("query") or "",
            "document_prefix": prompts.get("document") or prompts.get("passage") or ""}


def model_id(model_file: Path, directory: Path, settings: dict) -> str:
    """Name plus a hash of the graph's size and ends, the tokenizer and the pooling settings:
    changes when any of what shapes a vector does."""
    h = hashlib.sha256()
    hash_file_ends(h, model_file)
    h.update((directory / "tokenizer.json").read_bytes())
    h.update(json.dumps(settings, sort_keys=True).encode())
    return f"{directory.name}/{model_file.name}@{h.hexdigest()[:12]}"


def default_threads() -> int:
    """The machine's cores, up to 4: more rarely helps a model this small and starves the rest."""
    return max(1, min(os.cpu_count() or 1, 4))


READS = 0.5  # Embedder.cover's least share of the query's words the vocabulary holds whole (reads)
_UNKNOWN = ("[UNK]", "<unk>")


def _tokens(encoding, start: int, content: bool = False) -> list[int]:
    """The positions of encoding's tokens of the text proper (not special, ending after the first start
    characters: the prefix), only content ones (a letter or digit, not a stopword) when content. A SentencePiece
    token of the first word starts at the prefix's closing space ("query: " + "where": "▁where" at 6-12)."""
    from zmem.store.fts import STOPWORDS
    out = []
    for i, (token, special, (_, b)) in enumerate(zip(encoding.tokens, encoding.special_tokens_mask, encoding.offsets)):
        word = _piece(token).lower()
        if not special and b > start and (not content or (any(c.isalnum() for c in word) and word not in STOPWORDS)):
            out.append(i)
    return out


def _piece(token: str) -> str:
    """A token's text without WordPiece's ## or SentencePiece's word start."""
    return token.lstrip("#").lstrip("\u2581")


def _held_whole(encoding, word: str, cjk: bool) -> float:
    """How much of one word its tokens hold whole: 1 for a word that is one known token, else 0; for a run
    of CJK characters (words without spaces between them), the share of its characters in known tokens of
    two or more (XLM-R's vocabulary holds 数据库 as one token, a BERT WordPiece splits every CJK character)."""
    if not cjk:
        return float(len(encoding.ids) == 1 and encoding.tokens[0] not in _UNKNOWN)
    held = sum(len(p) for p in map(_piece, encoding.tokens) if len(p) > 1 and p not in _UNKNOWN)
    return min(1.0, held / len(word))


class OnnxEmbedder(Embedder):
    provider = "onnx"
    batch_size = 16
    in_process = True
    reads_tokens = True

    def __init__(self, model_path: str, *, dimensions: int | None = None, query_prefix: str | None = None,
                 document_prefix: str | None = None, threads: int | None = None, timeout: float = 30.0):
        path = Path(model_path).expanduser()
        self.model_file = find_model(path)
        self.directory = _model_dir(self.model_file)
        if not (self.directory / "tokenizer.json").is_file():
            raise EmbeddingError(f"{self.directory} has no tokenizer.json", hint=_HINT)
        archs = read_json_object(self.directory / "config.json").get("architectures") or []
        if any(str(a).endswith("ForSequenceClassification") for a in archs):
            raise EmbeddingError(f"{self.directory} is a cross-encoder (a reranker), not an embedding model",
                                 hint="set it as [recall] rerank instead, and an embedding model as model_path")
        self.settings = read_settings(self.directory)
        try:
            mid = model_id(self.model_file, self.directory, self.settings)
        except OSError as e:
            raise EmbeddingError(f"cannot read {self.model_file}: {e}", hint="check the files' permissions") from None
        # the model's own prompts unless the config sets prefixes (even to "")
        super().__init__(mid, dimensions,
                         query_prefix=self.settings["query_prefix"] if query_prefix is None else query_prefix,
                         document_prefix=self.settings["document_prefix"] if document_prefix is None else document_prefix,
                         timeout=timeout)
        cores = os.cpu_count() or 1
        self.threads = min(threads, cores) if threads and threads > 0 else default_threads()
        self._session = self._tokenizer = None
        self._pieces = None  # PieceEncoder, or False: the vocabulary is not one it serves (piece_encoder)
        self._lock = threading.Lock()

    def endpoint(self) -> str:
        return "onnxruntime"

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        """The model and what encodes the texts it will be given one at a time (a watcher's queries)."""
        with self._lock:
            self._load()
            if self._piece_encoder() is None:
                self._whole()

    def embed(self, texts: list[str], kind: Kind = "document") -> list[list[float]]:
        if self._session is None and kind == "query" and len(texts) == 1:
            with self._lock:  # a fresh recall's one query: a model loaded for it alone, without prepacking
                self._load(prepack=False)
        elif kind == "document" and len(texts) > 1:
            with self._lock:  # notes to index: the whole tokenizer encodes batch after batch faster
                self._load()
                self._whole()
        return super().embed(texts, kind)

    def _load(self, prepack: bool = True):
        if self._session is None:
            self._session, _, self._inputs = load_session(
                self.directory, self.model_file, threads=self.threads, max_tokens=self.settings["max_tokens"],
                error=EmbeddingError, needs="the onnx provider", hint=_HINT, what="a text embedding model",
                prepack=prepack, tokenize=False)
        return self._session

    def _whole(self):
        """The whole tokenizer, built when first needed (a batch). The process building it
        (an embedding job, as a model is first used) also makes sure the pieces' copy exists (PieceEncoder),
        so that the first fresh recall does not build that (~1.3 s for e5)."""
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.directory, self.settings["max_tokens"], EmbeddingError, _HINT)
            self._piece_encoder()
        return self._tokenizer

    def _piece_encoder(self) -> PieceEncoder | None:
        if self._pieces is None:
            self._pieces = piece_encoder(self.directory, self.settings["max_tokens"]) or False
        return self._pieces or None

    def _encode(self, texts: list[str], add_special_tokens: bool = True) -> list:
        """texts' encodings: a few texts by the pieces they can use when the vocabulary is large and the whole
        tokenizer is not built (PieceEncoder: ~2 ms against ~0.8 s to build it), else (or when that cannot stand
        in) by the whole tokenizer."""
        if (self._tokenizer is None and len(texts) <= PIECE_TEXTS and sum(map(len, texts)) <= PIECE_CHARS
                and (pieces := self._piece_encoder()) is not None):
            encodings = pieces.encode_batch(texts, add_special_tokens)
            if encodings is not None:
                return encodings
        return self._whole().encode_batch(texts, add_special_tokens=add_special_tokens)

    def _run(self, texts: list[str]):
        """(the graph's first output, the attention mask, the encodings) of texts, one batch padded to its
        longest."""
        import numpy as np
        with self._lock:
            session = self._load()
            encodings = self._encode(texts)
            width = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(texts), width), dtype=np.int64)
            mask = np.zeros((len(texts), width), dtype=np.int64)
            types = np.zeros((len(texts), width), dtype=np.int64)
            for row, e in enumerate(encodings):
                n = len(e.ids)
                ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            try:
                hidden = session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
            except Exception as e:  # noqa: BLE001
                raise EmbeddingError(f"onnxruntime failed to embed with {self.model_file.name}: {e}",
                                     hint=_HINT) from None
        return hidden, mask, encodings

    def reads(self, query: str) -> float:
        """The share of the query's words the tokenizer keeps as one known token (a CJK run counts by the share
        of its characters in multi-character tokens, _held_whole): how much of its language the model's
        vocabulary holds (an English WordPiece splits most Portuguese words, and every Chinese character)."""
        from zmem.store.fts import cjk_runs, query_terms
        words, runs = query_terms(query), cjk_runs(query)
        if not words and not runs:
            return 0.0
        with self._lock:
            encodings = self._encode(words + runs, add_special_tokens=False)
        held = [_held_whole(e, w, i >= len(words)) for i, (e, w) in enumerate(zip(encodings, words + runs))]
        return sum(held) / len(held)

    def cover(self, query: str, passages: list[str]) -> list[float] | None:
        """For each passage, the mean over the query's content tokens (not special, not the prefix, not a
        stopword or punctuation) of the cosine of its closest token of the passage, in the model's last hidden
        states (zmem.query.tokencover); None when the graph pools itself or the model does not read the query's
        language (reads < READS)."""
        import numpy as np
        if not passages or self.reads(query) < READS:
            return None
        hidden, _, encodings = self._run([self.query_prefix + query] + [self.document_prefix + p for p in passages])
        if hidden.ndim != 3:
            return None
        states = hidden / np.maximum(np.linalg.norm(hidden, axis=2, keepdims=True), 1e-9)
        asked = _tokens(encodings[0], len(self.query_prefix), content=True)
        if not asked:
            return None
        out = []
        for row, e in enumerate(encodings[1:], 1):
            held = _tokens(e, len(self.document_prefix))
            out.append(float((states[0, asked] @ states[row, held].T).max(1).mean()) if held else 0.0)
        return out

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        import numpy as np
        hidden, mask, _ = self._run(texts)
        if hidden.ndim == 2:  # a graph that pools itself
            pooled = hidden
        elif self.settings["pooling"] == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[:, :, None].astype(hidden.dtype)
            pooled = (hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
        return pooled.astype(np.float64).tolist()  # Embedder.embed normalises
