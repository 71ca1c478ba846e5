"""`zmem model import`: a BERT-family sentence-transformers directory -> a GGUF that llama.cpp
loads as an embedding model. numpy, safetensors and gguf only: no torch, no network.

Conventions follow llama.cpp's converter for BertModel: WordPiece vocabulary in "phantom space"
form (`##x` -> `x`, other tokens -> `▁token`), HF tensor names mapped by gguf's BERT map, and
position/token-type embeddings kept in F32 (as F16 they make llama.cpp abort at the first embed).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from zmem.errors import ZmemError

ARCH = "bert"


def resolve_model_source(spec: str) -> Path:
    """A local directory, or `hf:ORG/NAME` found in the local Hugging Face cache."""
    if not spec.startswith("hf:"):
        path = Path(spec).expanduser()
        if not path.is_dir():
            raise ZmemError(f"no model directory at {spec}",
                            hint="pass a sentence-transformers directory (config.json, vocab.txt, model.safetensors)")
        return path
    name = spec[3:].strip("/")
    if name.count("/") != 1:
        raise ZmemError(f"bad model name {spec!r}", hint="write it as hf:ORG/NAME, e.g. hf:sentence-transformers/all-MiniLM-L6-v2")
    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub")
    snapshots = hub / f"models--{name.replace('/', '--')}" / "snapshots"
    found = sorted((d for d in snapshots.glob("*") if (d / "config.json").is_file()), key=lambda d: d.stat().st_mtime)
    if found:
        return found[-1]
    raise ZmemError(f"{spec} is not in the local Hugging Face cache ({hub}) and zmem does not download models",
                    hint="on a machine with network: huggingface-cli download " + name
                    + "; then copy the directory here and pass its path to `zmem model import`")


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ZmemError(f"cannot read {path}: {e}", hint="is this a complete sentence-transformers model directory?")


def _pooling(src: Path) -> str:
    for module in _read_json(src / "modules.json") if isinstance(_read_json(src / "modules.json"), list) else []:
        if module.get("type", "").endswith("Pooling"):
            cfg = _read_json(src / module.get("path", "1_Pooling") / "config.json")
            return "cls" if cfg.get("pooling_mode_cls_token") else "mean"
    cfg = _read_json(src / "1_Pooling" / "config.json")
    return "cls" if cfg.get("pooling_mode_cls_token") else "mean"


def _vocab(src: Path) -> list[str]:
    path = src / "vocab.txt"
    if not path.is_file():
        raise ZmemError(f"{src} has no vocab.txt", hint="only WordPiece (BERT) tokenizers are supported")
    return path.read_text(encoding="utf-8").split("\n")[:-1] if path.read_text(encoding="utf-8").endswith("\n") \
        else path.read_text(encoding="utf-8").split("\n")


def _phantom(token: str) -> str:
    if token.startswith("[") and token.endswith("]"):
        return token
    return token[2:] if token.startswith("##") else "\u2581" + token


def _weights(src: Path) -> dict:
    files = sorted(src.glob("*.safetensors"))
    if not files:
        raise ZmemError(f"{src} has no .safetensors weights",
                        hint="export the model with safetensors (pytorch_model.bin needs torch, which zmem avoids)")
    from safetensors.numpy import load_file
    tensors = {}
    for f in files:
        try:
            tensors.update(load_file(str(f)))
        except Exception as e:  # noqa: BLE001 - any unreadable weight file is the user's to fix
            raise ZmemError(f"cannot read {f.name}: {e}", hint="the file may be truncated; copy it again")
    return tensors


def import_model(src: Path, out: Path, *, outtype: str = "f16") -> dict:
    try:
        import gguf
        import numpy as np
        import safetensors  # noqa: F401 - checked here so the error names the extra
    except ImportError as e:
        raise ZmemError(f"`zmem model import` needs {e.name}", hint="pip install 'zmem[local]'") from None
    src = Path(src)
    config = _read_json(src / "config.json")
    if not config:
        raise ZmemError(f"{src} has no config.json", hint="pass a sentence-transformers / Hugging Face model directory")
    if config.get("model_type") != "bert":
        raise ZmemError(f"{src} is a {config.get('model_type')!r} model; zmem imports BERT-family models only",
                        hint="e.g. all-MiniLM-L6-v2, bge-small-en-v1.5, e5-small-v2")
    if outtype not in ("f16", "f32"):
        raise ZmemError(f"unknown outtype {outtype!r}", hint="use f16 or f32")
    tokens = _vocab(src)
    tok_cfg = _read_json(src / "tokenizer_config.json")
    hidden, layers = int(config["hidden_size"]), int(config["num_hidden_layers"])
    pooling = _pooling(src)
    tensors = _weights(src)
    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, layers)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    w = gguf.GGUFWriter(str(tmp), ARCH)
    w.add_name(src.name)
    w.add_context_length(int(config.get("max_position_embeddings", 512)))
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(int(config["intermediate_size"]))
    w.add_block_count(layers)
    w.add_head_count(int(config["num_attention_heads"]))
    w.add_layer_norm_eps(float(config.get("layer_norm_eps", 1e-12)))
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.CLS if pooling == "cls" else gguf.PoolingType.MEAN)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if outtype == "f16" else gguf.LlamaFileType.ALL_F32)

    w.add_token_type_count(int(config.get("type_vocab_size", 2)))
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list([_phantom(t) for t in tokens])
    types = []
    for t in tokens:
        if t == tok_cfg.get("unk_token", "[UNK]"):
            types.append(gguf.TokenType.UNKNOWN)
        elif t.startswith("[unused"):
            types.append(gguf.TokenType.UNUSED)
        elif t.startswith("[") and t.endswith("]"):
            types.append(gguf.TokenType.CONTROL)
        else:
            types.append(gguf.TokenType.NORMAL)
    w.add_token_types(types)
    ids = {t: i for i, t in enumerate(tokens)}

    def special(key: str, default: str) -> int | None:
        return ids.get(tok_cfg.get(key) or default)
    for add, key, default in ((w.add_bos_token_id, "cls_token", "[CLS]"), (w.add_eos_token_id, "sep_token", "[SEP]"),
                              (w.add_sep_token_id, "sep_token", "[SEP]"),
                              (w.add_unk_token_id, "unk_token", "[UNK]"), (w.add_pad_token_id, "pad_token", "[PAD]"),
                              (w.add_mask_token_id, "mask_token", "[MASK]")):
        tid = special(key, default)
        if tid is not None:
            add(tid)
    w.add_add_bos_token(True)
    w.add_add_eos_token(True)

    written = 0
    for hf_name in sorted(tensors):
        name = hf_name
        for prefix in ("0.auto_model.", "auto_model.", "bert.", "model."):
            name = name.removeprefix(prefix)
        if name.startswith("pooler.") or name.endswith("position_ids"):
            continue  # not used for sentence embeddings
        gguf_name = name_map.get_name(name, try_suffixes=(".weight", ".bias"))
        if gguf_name is None:
            raise ZmemError(f"unexpected tensor {hf_name} in {src}", hint="is this a plain BERT model?")
        data = tensors[hf_name].astype(np.float32)
        keep_f32 = data.ndim == 1 or gguf_name.startswith(("position_embd", "token_types"))
        w.add_tensor(gguf_name, data if (keep_f32 or outtype == "f32") else data.astype(np.float16))
        written += 1
    if written == 0:
        raise ZmemError(f"no BERT weights found in {src}", hint="is this a plain BERT model?")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, out)
    return {"out": str(out), "arch": ARCH, "dimensions": hidden, "layers": layers, "vocab": len(tokens),
            "context": int(config.get("max_position_embeddings", 512)), "pooling": pooling}
