"""A tiny random-weight BERT cross-encoder (BertForSequenceClassification with one label, laid out as
cross-encoder/ms-marco-MiniLM-L-6-v2 is on the Hugging Face hub), and a plain numpy reference of
the score it gives a (query, passage) pair. Written by the tests themselves: no downloads."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.tiny_bert import bert_hidden, load_reference, make_tiny_bert, np, wordpiece


def make_tiny_cross_encoder(directory: Path, seed: int = 0, hidden: int = 32, layers: int = 2, heads: int = 2,
                            max_pos: int = 128) -> Path:
    """The directory a cross-encoder checkpoint has: config.json (BertForSequenceClassification,
    num_labels 1), model.safetensors with `bert.`-prefixed encoder and pooler weights and a
    `classifier` head, vocab.txt and the tokenizer configs; no sentence-transformers pooling files.
    Seeded: same seed, same bytes."""
    from safetensors.numpy import load_file, save_file
    directory = Path(directory)
    make_tiny_bert(directory, seed=seed, hidden=hidden, layers=layers, heads=heads, max_pos=max_pos, prefix="bert.")
    for name in ("modules.json", "1_Pooling/config.json"):
        (directory / name).unlink()
    (directory / "1_Pooling").rmdir()
    tensors = load_file(str(directory / "model.safetensors"))
    rng = np.random.RandomState(seed + 1)
    # a random encoder's [CLS] varies little between texts: a strong head spreads the logits, and a
    # bias centres them near 0 (scores spread over (0, 1), not all near 1)
    tensors["classifier.weight"] = rng.normal(0, 20.0, (1, hidden)).astype(np.float32)
    tensors["classifier.bias"] = np.zeros(1, dtype=np.float32)
    save_file(tensors, str(directory / "model.safetensors"))
    config = json.loads((directory / "config.json").read_text())
    config.update(architectures=["BertForSequenceClassification"], id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0})
    (directory / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    tensors["classifier.bias"] = np.array([-reference_scores(directory, "what", ["the note"])[0]], dtype=np.float32)
    save_file(tensors, str(directory / "model.safetensors"))
    return directory


def reference_scores(directory: Path, query: str, passages: list[str]) -> list[float]:
    """The classifier's logit for each ([CLS] query [SEP] passage [SEP]) with token types 0 then 1:
    encoder, tanh pooler over [CLS], linear classifier, in float64 numpy. (Pairs must fit the
    model's positions: this reference does not truncate.)"""
    t, cfg, vocab = load_reference(Path(directory))
    q = wordpiece(vocab, query)
    out = []
    for passage in passages:
        p = wordpiece(vocab, passage)[1:]  # without its [CLS]
        ids, types = q + p, [0] * len(q) + [1] * len(p)
        assert len(ids) <= cfg["max_position_embeddings"], "keep reference pairs within the model's positions"
        cls = bert_hidden(t, cfg, ids, types)[0]
        pooled = np.tanh(t["pooler.dense.weight"] @ cls + t["pooler.dense.bias"])
        out.append(float(t["classifier.weight"][0] @ pooled + t["classifier.bias"][0]))
    return out
