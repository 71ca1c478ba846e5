"""A tiny random-weight BERT sentence-transformers directory, and a plain numpy reference of
what its embeddings should be. Written by the tests themselves: no downloads."""
from __future__ import annotations

import json
import math
import unicodedata
from pathlib import Path

import pytest

# the `local` extra's packages (numpy, safetensors to write the model; gguf for `zmem model import`, which
# every user of this module runs on it): without them, a test that imports this module is skipped
np = pytest.importorskip("numpy")
pytest.importorskip("safetensors")
pytest.importorskip("gguf")

WORDS = ("the a an of to and in is it on for that with as was at by from this be are not or but "
         "machine gateway host mac studio runs run server backup coffee tea office home room desk laptop phone "
         "peter anna lisbon berlin beijing marrakech trip flight hotel birthday meeting morning evening week day "
         "note notes memory recall search git commit daily log file files write update updates index indexing "
         "every avoid debounce fixed crash socket relay prefers concise replies short answers whatsapp email "
         "project deploy database script vector model query document answer question price cost cheap fast slow "
         "what where when who why how which does do did has have had will would can could should "
         "he she they we you i my his her their our new old big small good bad first last next").split()


def _vocab() -> list[str]:
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789.,:;!?'-()")
    return list(dict.fromkeys(special + chars + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + WORDS))


def make_tiny_bert(directory: Path, seed: int = 0, hidden: int = 32, layers: int = 2, heads: int = 2,
                   intermediate: int = 64, max_pos: int = 128, prefix: str = "", pooling: str = "mean") -> Path:
    """A sentence-transformers directory with random weights (seeded: same seed, same bytes).
    `prefix` is prepended to every tensor name ("bert." or "0.auto_model." as some exports do);
    `pooling` is "mean" (all-MiniLM style) or "cls" (bge style)."""
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
    t["pooler.dense.weight"] = w(hidden, hidden)  # saved by HF BertModel, unused for sentence embeddings
    t["pooler.dense.bias"] = w(hidden)
    save_file({prefix + k: v for k, v in t.items()}, str(directory / "model.safetensors"))
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": hidden, "num_hidden_layers": layers,
              "num_attention_heads": heads, "intermediate_size": intermediate, "max_position_embeddings": max_pos,
              "type_vocab_size": 2, "vocab_size": len(vocab), "layer_norm_eps": 1e-12, "hidden_act": "gelu"}
    (directory / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
         "cls_token": "[CLS]", "mask_token": "[MASK]", "tokenizer_class": "BertTokenizer"}, sort_keys=True))
    (directory / "special_tokens_map.json").write_text(json.dumps(
        {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
         "mask_token": "[MASK]"}, sort_keys=True))
    (directory / "modules.json").write_text(json.dumps(
        [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
         {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (directory / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": hidden, "pooling_mode_mean_tokens": pooling == "mean",
         "pooling_mode_cls_token": pooling == "cls"}))
    return directory


def _is_punctuation(c: str) -> bool:
    """As BERT's BasicTokenizer: every ASCII non-alphanumeric printable, plus Unicode P*."""
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
                                              (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
                                              (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)))


def _basic_tokens(text: str) -> list[str]:
    """BERT's BasicTokenizer (lower case): clean, isolate CJK characters, split on whitespace,
    lower-case and strip accents, split off punctuation."""
    cleaned = []
    for c in text:
        cp = ord(c)
        if cp == 0 or cp == 0xFFFD or (unicodedata.category(c).startswith("C") and c not in "\t\n\r"):
            continue
        if c in " \t\n\r" or unicodedata.category(c) == "Zs":
            cleaned.append(" ")
        elif _is_cjk(cp):
            cleaned.append(f" {c} ")
        else:
            cleaned.append(c)
    out = []
    for word in "".join(cleaned).split():
        word = unicodedata.normalize("NFD", word.lower())
        word = "".join(c for c in word if unicodedata.category(c) != "Mn")
        current = ""
        for c in word:
            if _is_punctuation(c):
                out += [current, c] if current else [c]
                current = ""
            else:
                current += c
        if current:
            out.append(current)
    return out


def wordpiece(vocab: dict[str, int], text: str) -> list[int]:
    """[CLS] + greedy longest-match WordPiece of every basic token + [SEP], as BertTokenizer does.
    (A word over 100 characters is [UNK] there; llama.cpp splits it anyway: keep tests below that.)"""
    ids = [vocab["[CLS]"]]
    for word in _basic_tokens(text):
        if len(word) > 100:
            ids.append(vocab["[UNK]"])
            continue
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
    """BERT forward pass (BasicTokenizer + WordPiece, post-LN encoder, erf GELU) + mean or CLS
    pooling as 1_Pooling/config.json says + L2 normalization, in float64 numpy."""
    directory = Path(directory)
    t, cfg, vocab = load_reference(directory)
    pooling_cfg = directory / "1_Pooling" / "config.json"
    cls = pooling_cfg.is_file() and json.loads(pooling_cfg.read_text()).get("pooling_mode_cls_token", False)
    out = []
    for text in texts:
        ids = wordpiece(vocab, text)
        if len(ids) > cfg["max_position_embeddings"]:  # keep [CLS] … [SEP], as HF truncation does
            ids = ids[:cfg["max_position_embeddings"] - 1] + ids[-1:]
        x = bert_hidden(t, cfg, ids, [0] * len(ids))
        v = x[0] if cls else x.mean(0)
        out.append(v / np.linalg.norm(v))
    return np.array(out)


def load_reference(directory: Path) -> tuple[dict, dict, dict]:
    """(float64 tensors by name without the export's prefix, config.json, vocabulary -> id)."""
    from safetensors.numpy import load_file
    t = {}
    for k, v in load_file(str(directory / "model.safetensors")).items():
        for prefix in ("0.auto_model.", "bert."):
            k = k.removeprefix(prefix)
        t[k] = v.astype(np.float64)
    cfg = json.loads((directory / "config.json").read_text())
    vocab = {tok: i for i, tok in enumerate((directory / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1])}
    return t, cfg, vocab


def bert_hidden(t: dict, cfg: dict, ids: list[int], types: list[int]):
    """The BERT encoder's last hidden state [tokens, hidden] for one sequence, in float64."""
    heads, hidden = cfg["num_attention_heads"], cfg["hidden_size"]
    d = hidden // heads
    erf = np.vectorize(math.erf)
    n = len(ids)
    x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][:n] \
        + t["embeddings.token_type_embeddings.weight"][types]
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
    return x


def tiny_onnx_model(folder: Path) -> Path:
    """The tiny BERT made under folder, imported as an onnx model (`zmem model import`'s converter)."""
    from zmem.embedders.modelimport import import_onnx
    return Path(import_onnx(make_tiny_bert(folder / "tiny-bert"), folder / "tiny.onnx")["out"])


def onnx_workspace(root: Path, model: Path, toml: str = ""):
    """A workspace at root whose vectors come from the onnx model at model (the user's config), with
    one note about the gateway host and toml as its zmem.toml if given, committed and indexed:
    (the Workspace, its vectors' fingerprint)."""
    from helpers.workspace import commit_all, run, user_config, write
    from zmem.index.catchup import open_index
    from zmem.store import db
    from zmem.workspace.core import find_workspace
    user_config(f'[embeddings]\nprovider = "onnx"\nmodel_path = "{model}"\nthreads = 2\n')
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    if toml:
        write(root, "zmem.toml", toml)
    write(root, "bank/world.md", "# World\n\n- the gateway host is the mac studio in the office\n")
    commit_all(root)
    assert run(["-C", str(root), "index", "-q"]).exit_code == 0
    ws = find_workspace(root)
    conn = open_index(ws)
    try:
        fingerprint = db.get_meta(conn, "vec_fingerprint")
    finally:
        conn.close()
    assert fingerprint and json.loads(fingerprint.partition("|windows=")[0])["provider"] == "onnx"
    return ws, fingerprint


def with_sentencepiece(model: Path, folder: Path) -> Path:
    """A copy at folder of an imported tiny model's directory with a SentencePiece (Unigram) tokenizer laid out as
    multilingual-e5-small's: <s>, <pad>, </s>, <unk> first and special, <mask> last; pieces that start with ▁ where a
    word starts; Chinese words as pieces of their own (数据库); scores that make a split a choice (▁gate + way or ▁ga + te +
    way, ▁r + e + l + ay or + a + y). The ids stay within the model's embeddings."""
    import shutil

    from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers, processors
    shutil.copytree(model, folder)
    size = len(json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"])
    pieces = ["<s>", "<pad>", "</s>", "<unk>", "\u2581query", ":", "\u2581passage", "\u2581gateway", "\u2581host",
              "\u2581the", "\u2581relay", "\u2581onde", "\u2581fica", "\u2581", "数据库", "连接", "在", "哪", "里",
              "\u2581gate", "way", "\u2581ga", "te", "\u2581r", "e", "l", "a", "y", "ay", "\u2581wh", "ere", "\u2581where"]
    pieces += [f"\u2581filler{i}" for i in range(size - len(pieces) - 1)] + ["<mask>"]
    scores = [0.0] * 4 + [-1.0 - (i * 7 % 11) / 3 for i in range(len(pieces) - 5)] + [0.0]
    scores[pieces.index("\u2581gateway")] = -0.5  # whole, against ▁gate + way
    tok = Tokenizer(models.Unigram(list(zip(pieces, scores)), unk_id=3))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.add_special_tokens([AddedToken(p, normalized=False, special=True) for p in ("<s>", "<pad>", "</s>", "<unk>")])
    tok.add_special_tokens([AddedToken("<mask>", normalized=False, special=True)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.save(str(folder / "tokenizer.json"))
    return folder
