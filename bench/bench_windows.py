"""Embedding cost of the vector windows (not a test): windows per chunk and the time to embed them
all, for the current windows (notes, short ones merged up to 64 tokens), a window per note, and the
earlier 128-token windows of lines.

    python bench/bench_windows.py /tmp/locomo-ws --model-path /tmp/minilm.onnx [--runs 3]

Walks every Markdown file under the root (a workspace, or make_workspace.py's output), chunks it as
the index does and embeds each scheme's window texts with the onnx provider (2 threads, no cache):
median wall and CPU seconds over --runs, windows per second, estimated tokens embedded.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--model-path", required=True, help="an onnx model directory (zmem model import --format onnx)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from zmem.embedders.onnx import OnnxEmbedder
    from zmem.text.chunking import chunk_text, chunk_windows, embedding_text, estimate_tokens, note_windows, windows

    chunks = [ch for f in sorted(args.root.rglob("*.md")) if ".git" not in f.parts
              for ch in chunk_text(f.read_text(encoding="utf-8"))]
    schemes = {
        "notes merged to 64 tokens (current)": [t for ch in chunks
                                                for *_, t in chunk_windows(0, ch.text, ch.heading, ch.start_line)],
        "a window per note": [embedding_text(t, h) for ch in chunks
                              for *_, t, h in note_windows(ch.text, ch.start_line, ch.heading, merge_tokens=0)],
        "lines, 128 tokens (before)": [embedding_text(t, ch.heading) for ch in chunks
                                       for _, _, t in windows(ch.text, ch.start_line)],
    }
    embedder = OnnxEmbedder(args.model_path, threads=2)
    embedder.embed(["warm up"], "document")
    print(f"{len(chunks)} chunks under {args.root}")
    for name, texts in schemes.items():
        walls, cpus = [], []
        for _ in range(args.runs):
            t, c = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
            embedder.embed(texts, "document")
            e = resource.getrusage(resource.RUSAGE_SELF)
            walls.append(time.perf_counter() - t)
            cpus.append(e.ru_utime + e.ru_stime - c.ru_utime - c.ru_stime)
        wall = statistics.median(walls)
        print(f"  {name}: {len(texts)} windows ({len(texts) / len(chunks):.2f} per chunk, "
              f"~{sum(estimate_tokens(t) for t in texts)} tokens), embedded in {wall:.1f} s wall "
              f"(min {min(walls):.1f}, max {max(walls):.1f}), {statistics.median(cpus):.1f} s CPU, "
              f"{len(texts) / wall:.0f} windows/s")


if __name__ == "__main__":
    main()
