"""A tiny random-weight BERT sentence-transformers directory, and a plain numpy reference of
what its embeddings should be. Written by the tests themselves: no downloads."""
from __future__ import annotations

import json
import math
import re
import unicodedata
from pathlib import Path

import numpy as np

WORDS = ("the a of to and in is it on for that with as was at by machine gateway host mac studio runs run "
         "peter lisbon coffee tea backup server office note notes memory recall search git commit daily log "
         "fixed crash socket relay prefers concise replies whatsapp birthday trip flight hotel beijing meeting "
         "morning evening project deploy database script index vector model query document answer question "
         "what where when who why how which does do did has have had will would can could should").split()


def _vocab() -> list[str]:
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789.,:;!?'-()")
    return list(dict.fromkeys(special + chars + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + WORDS))


def make_tiny_bert(directory: Path, seed: int = 0, hidden: int = 32, layers: int = 2, heads: int = 2,
                   intermediate: int = 64, max_pos: int = 128) -> Path:
    from safetensors.numpy import save_file
    directory = Path(directory)
    (directory / "1_Pooling").mkdir(parents=True, exist_ok=True)
    vocab = _vocab()
    rng = np.random.RandomState(seed)

    def w(*shape):
        return (rng.normal(0, 0.05, shape)).astype(np.float32)
    t = {"embeddings.word_embeddings.weight": w(len(vocab), hidden),
         "embeddings.position_embeddings.weight": w(max_pos, hidden),
         "embeddings.token_type_embeddings.weight": w(2, hidden),
         "embeddings.LayerNorm.weight": (1 + w(hidden)), "embeddings.LayerNorm.bias": w(hidden)}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            t[p + f"attention.self.{name}.weight"] = w(hidden, hidden)
            t[p + f"attention.self.{name}.bias"] = w(hidden)
        t[p + "attention.output.dense.weight"] = w(hidden, hidden)
        t[p + "attention.output.dense.bias"] = w(hidden)
        t[p + "attention.output.LayerNorm.weight"] = 1 + w(hidden)
        t[p + "attention.output.LayerNorm.bias"] = w(hidden)
        t[p + "intermediate.dense.weight"] = w(intermediate, hidden)
        t[p + "intermediate.dense.bias"] = w(intermediate)
        t[p + "output.dense.weight"] = w(hidden, intermediate)
        t[p + "output.dense.bias"] = w(hidden)
        t[p + "output.LayerNorm.weight"] = 1 + w(hidden)
        t[p + "output.LayerNorm.bias"] = w(hidden)
    save_file(t, str(directory / "model.safetensors"))
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n")
    config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": hidden, "num_hidden_layers": layers,
              "num_attention_heads": heads, "intermediate_size": intermediate, "max_position_embeddings": max_pos,
              "type_vocab_size": 2, "vocab_size": len(vocab), "layer_norm_eps": 1e-12, "hidden_act": "gelu"}
    (directory / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
         "cls_token": "[CLS]", "mask_token": "[MASK]", "tokenizer_class": "BertTokenizer"}, sort_keys=True))
    (directory / "modules.json").write_text(json.dumps(
        [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
         {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (directory / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": hidden, "pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False}))
    return directory


def _basic_tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    return re.findall(r"\w+|[^\w\s]", text)


def wordpiece(vocab: dict[str, int], text: str) -> list[int]:
    ids = [vocab["[CLS]"]]
    for word in _basic_tokens(text):
        start, pieces = 0, []
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab:
                    pieces.append(vocab[piece])
                    break
                end -= 1
            if end == start:
                pieces = [vocab["[UNK]"]]
                break
            start = end
        ids.extend(pieces)
    return ids + [vocab["[SEP]"]]


def _layer_norm(x, g, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def reference_embed(directory: Path, texts: list[str]) -> np.ndarray:
    """BERT forward pass + mean pooling + L2 normalization, in float64 numpy."""
    from safetensors.numpy import load_file
    directory = Path(directory)
    t = {k: v.astype(np.float64) for k, v in load_file(str(directory / "model.safetensors")).items()}
    cfg = json.loads((directory / "config.json").read_text())
    vocab = {tok: i for i, tok in enumerate((directory / "vocab.txt").read_text().split("\n")[:-1])}
    heads, hidden = cfg["num_attention_heads"], cfg["hidden_size"]
    d = hidden // heads
    erf = np.vectorize(math.erf)
    out = []
    for text in texts:
        ids = wordpiece(vocab, text)[:cfg["max_position_embeddings"]]
        n = len(ids)
        x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][:n] \
            + t["embeddings.token_type_embeddings.weight"][0]
        x = _layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
        for i in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}."

            def lin(v, name):
                return v @ t[p + name + ".weight"].T + t[p + name + ".bias"]
            q = lin(x, "attention.self.query").reshape(n, heads, d).transpose(1, 0, 2)
            k = lin(x, "attention.self.key").reshape(n, heads, d).transpose(1, 0, 2)
            v = lin(x, "attention.self.value").reshape(n, heads, d).transpose(1, 0, 2)
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(1, 0, 2).reshape(n, hidden)
            x = _layer_norm(x + lin(ctx, "attention.output.dense"), t[p + "attention.output.LayerNorm.weight"],
                            t[p + "attention.output.LayerNorm.bias"])
            h = lin(x, "intermediate.dense")
            h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
            x = _layer_norm(x + lin(h, "output.dense"), t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"])
        v = x.mean(0)
        out.append(v / np.linalg.norm(v))
    return np.array(out)
