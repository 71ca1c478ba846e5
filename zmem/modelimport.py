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

from zmem.errors import ZmemError

ARCH = "bert"
OUTTYPES = ("f32", "f16", "q8_0")
_HF_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
# what `import_model` reads; the first three are required
_HF_FILES = ("config.json", "vocab.txt", "model.safetensors", "tokenizer_config.json", "special_tokens_map.json",
             "modules.json", "1_Pooling/config.json")
_PREFIXES = ("0.auto_model.", "auto_model.", "bert.", "model.")


# ----------------------------------------------------------------------------- where the model is

def resolve_model_source(spec: str) -> Path:
    """A local model directory, or `hf:ORG/NAME`: the local Hugging Face cache first, then (unless
    HF_HUB_OFFLINE is set) a download of the few files the import reads into ~/.cache/zmem/hf."""
    if not spec.startswith("hf:"):
        path = Path(spec).expanduser()
        if not path.is_dir():
            raise ZmemError(f"no model directory at {spec}",
                            hint="pass a sentence-transformers directory (config.json, vocab.txt, model.safetensors) "
                                 "or hf:ORG/NAME")
        return path
    name = spec[3:].strip().strip("/")
    if not _HF_NAME.match(name) or ".." in name:
        raise ZmemError(f"bad model name {spec!r}",
                        hint="write it as hf:ORG/NAME, e.g. hf:sentence-transformers/all-MiniLM-L6-v2")
    cached = _hf_cache_snapshot(name)
    if cached is not None:
        return cached
    target = _zmem_cache() / "hf" / name.replace("/", "--")
    if (target / "config.json").is_file():
        return target
    hint = (f"copy the model directory here and pass its path (on a machine with network: "
            f"huggingface-cli download {name})")
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() not in ("", "0", "false", "no", "off"):
        raise ZmemError(f"cannot download {spec}: offline (HF_HUB_OFFLINE is set) and it is not in the local "
                        "Hugging Face cache", hint=hint)
    try:
        return _download(name, target)
    except (OSError, urllib.error.URLError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        raise ZmemError(f"cannot download {spec}: no network access ({reason}) and it is not in the local "
                        "Hugging Face cache", hint=hint) from None


def model_name(src: Path) -> str:
    """A readable name for the model in `src`: ORG--NAME for a Hugging Face cache snapshot (whose
    directory is a commit hash) or a download, else the directory's name."""
    src = Path(src)
    if src.parent.name == "snapshots" and src.parent.parent.name.startswith("models--"):
        return src.parent.parent.name.removeprefix("models--")
    return src.resolve().name if src.name in ("", ".", "..") else src.name


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


def _zmem_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zmem"


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
                if e.code in (401, 403, 404):
                    raise ValueError(f"{rel}: HTTP {e.code} (no such public model, or no safetensors weights)") from None
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
    except (OSError, ValueError) as e:
        raise ZmemError(f"cannot read {path}: {e}", hint="is this a complete sentence-transformers model directory?") from None


def _pooling(src: Path) -> str:
    modules = _read_json(src / "modules.json", default=[])
    path = "1_Pooling"
    for module in modules if isinstance(modules, list) else []:
        if isinstance(module, dict) and str(module.get("type", "")).endswith("Pooling"):
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
        hint = ("only WordPiece (BERT) vocabularies are supported" if not (src / "tokenizer.json").is_file()
                else "this tokenizer has no vocab.txt (a BPE/Unigram tokenizer?); only WordPiece BERT models are supported")
        raise ZmemError(f"{src} has no vocab.txt", hint=hint)
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


def _special(tok_cfg: dict, special_map: dict, key: str, default: str) -> str:
    for cfg in (tok_cfg, special_map):
        value = cfg.get(key)
        if isinstance(value, dict):  # {"content": "[CLS]", "lstrip": false, ...}
            value = value.get("content")
        if isinstance(value, str) and value:
            return value
    return default


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
    from safetensors.numpy import load_file
    tensors = {}
    for f in files:
        try:
            tensors.update(load_file(str(f)))
        except Exception as e:  # noqa: BLE001 - any unreadable weight file is the user's to fix
            raise ZmemError(f"cannot read {f.name}: {e}",
                            hint="the file may be truncated or a Git LFS pointer; copy it again") from None
    return tensors


def _int(config: dict, key: str, src: Path, default: int | None = None) -> int:
    value = config.get(key, default)
    try:
        if value is None:
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise ZmemError(f"{src / 'config.json'} has no usable {key}",
                        hint="is this a complete BERT config.json?") from None


# ----------------------------------------------------------------------------- writing the GGUF

def import_model(src: Path, out: Path, *, outtype: str = "f16") -> dict:
    """Convert the BERT sentence-transformers model in `src` into a GGUF at `out` (atomically)."""
    try:
        import gguf
        import numpy as np
        import safetensors  # noqa: F401 - checked here so the error names the extra
    except ImportError as e:
        raise ZmemError(f"`zmem model import` needs {e.name}", hint="pip install 'zmem[local]'") from None
    src, out = Path(src).expanduser(), Path(out).expanduser()
    if outtype not in OUTTYPES:
        raise ZmemError(f"unknown outtype {outtype!r}", hint="use " + ", ".join(OUTTYPES))
    if not src.is_dir():
        raise ZmemError(f"no model directory at {src}", hint="pass a sentence-transformers model directory")
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
        raise ZmemError(f"{src.name} uses activation {config.get('hidden_act')!r}; llama.cpp's BERT uses GELU",
                        hint="use a standard BERT-family model")

    tokens = _vocab(src)
    tok_cfg = _read_json(src / "tokenizer_config.json")
    special_map = _read_json(src / "special_tokens_map.json")
    tok_cfg = tok_cfg if isinstance(tok_cfg, dict) else {}
    special_map = special_map if isinstance(special_map, dict) else {}
    warnings = []
    if tok_cfg.get("do_lower_case") is False:
        warnings.append("the model is cased, but llama.cpp's WordPiece tokenizer lower-cases every text: "
                        "upper-case words will be split differently than in sentence-transformers")
    pooling = _pooling(src)
    tensors = {}
    for hf_name, data in _weights(src).items():
        name = hf_name
        for prefix in _PREFIXES:
            name = name.removeprefix(prefix)
        if name.startswith(("pooler.", "cls.", "lm_head.")) or name.endswith(("position_ids", "token_type_ids")):
            continue  # heads and buffers a sentence embedding does not use
        tensors[name] = (hf_name, data)

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
        raise ZmemError(f"{src.name}: vocab.txt has {len(tokens)} tokens but the model embeds only {rows}",
                        hint="vocab.txt does not belong to these weights")
    if mapped["position_embd.weight"][1].shape[0] < context:
        context = int(mapped["position_embd.weight"][1].shape[0])
    ids = {t: i for i, t in enumerate(tokens)}
    unk = _special(tok_cfg, special_map, "unk_token", "[UNK]")
    specials = {kind: _special(tok_cfg, special_map, f"{kind}_token", f"[{kind.upper()}]")
                for kind in ("cls", "sep", "unk", "pad", "mask")}
    for kind in ("cls", "sep", "unk"):
        if specials[kind] not in ids:
            raise ZmemError(f"{src.name}: vocab.txt has no {specials[kind]} token",
                            hint="a BERT vocabulary needs [CLS], [SEP] and [UNK]")
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
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
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
            keep_f32 = data.ndim == 1 or gguf_name.startswith(("position_embd", "token_types"))
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
        raise ZmemError(f"cannot write {out}: {e}", hint="check the directory exists and is writable") from None
    finally:
        tmp.unlink(missing_ok=True)
    return {"out": str(out), "arch": ARCH, "dimensions": hidden, "layers": layers, "vocab": rows,
            "context": context, "pooling": pooling, "outtype": outtype, "warnings": warnings}
