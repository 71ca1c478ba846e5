"""Build / decode SentencePiece precompiled charsmaps (the blob HF's `Precompiled` normalizer reads)."""
import os
import struct
import tempfile
import numpy as np


def compile_rules(rules):
    """rules: {src_str: dst_str}. Returns precompiled_charsmap bytes, compiled by sentencepiece's own
    builder (via a throwaway trainer run with normalization_rule_tsv)."""
    with tempfile.TemporaryDirectory() as d:
        tsv = os.path.join(d, "rules.tsv")
        with open(tsv, "w", encoding="utf-8") as f:
            for src, dst in sorted(rules.items()):
                f.write(" ".join("%X" % ord(c) for c in src) + "\t" + " ".join("%X" % ord(c) for c in dst) + "\n")
        return _trained_charsmap(d, normalization_rule_tsv=tsv)


def builtin_charsmap(name="nmt_nfkc"):
    """sentencepiece's own precompiled charsmap of that name."""
    with tempfile.TemporaryDirectory() as d:
        return _trained_charsmap(d, normalization_rule_name=name)


def _trained_charsmap(d, **normalization):
    """The precompiled charsmap of a throwaway 12-piece model trained in directory d with these settings."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb
    corpus = os.path.join(d, "c.txt")
    with open(corpus, "w") as f:
        f.write("abc def ghi\n" * 20)
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=os.path.join(d, "m"), vocab_size=12,
                                   model_type="char", minloglevel=2, num_threads=1, **normalization)
    m = pb.ModelProto()
    with open(os.path.join(d, "m.model"), "rb") as f:
        m.ParseFromString(f.read())
    return m.normalizer_spec.precompiled_charsmap


def decode(blob):
    """All (key, value) rules in a precompiled charsmap: darts-clone double array + normalized strings."""
    (tsize,) = struct.unpack_from("<I", blob, 0)
    units = np.frombuffer(blob, "<u4", tsize // 4, 4).astype(np.int64)
    strings = blob[4 + tsize:]
    def offset(u): return (u >> 10) << ((u & (1 << 9)) >> 6)
    def label(u): return u & ((1 << 31) | 0xFF)
    def has_leaf(u): return (u >> 8) & 1
    def value(u): return u & ((1 << 31) - 1)
    out = {}
    stack = [(0 ^ offset(units[0]), b"")]
    n = len(units)
    while stack:
        pos, key = stack.pop()
        for c in range(1, 256):
            child = pos ^ c
            if child >= n:
                continue
            u = units[child]
            if label(u) != c:
                continue
            npos = child ^ offset(u)
            if has_leaf(u):
                v = value(units[npos])
                end = strings.index(b"\0", v)
                out[key + bytes([c])] = strings[v:end]
            stack.append((npos, key + bytes([c])))
    return {k.decode("utf-8"): v.decode("utf-8") for k, v in out.items()}
