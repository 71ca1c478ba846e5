"""Run a benchmark script with another way of cutting chunks into vector windows (an experiment;
each variant has its own vector fingerprint, so give each its own copy of a workspace):

    python bench/vec_variants.py SCHEME MERGE_TOKENS bench/quality.py ARGS...
    python bench/vec_variants.py lines 0 bench/paraphrase/run.py --model-path /tmp/minilm.onnx --out /tmp/ws-lines

SCHEME: notes (the default: a window per note, chunking.note_windows), lines (windows of whole lines
packed to 128 tokens, the default before 2026-11-26), both (the union of the two). MERGE_TOKENS:
consecutive notes merged up to this many tokens (notes and both).
"""
import runpy
import sys

from zmem.index import embedding
from zmem.text import chunking

scheme, merge = sys.argv[1], int(sys.argv[2])
notes_windows = chunking.chunk_windows


def chunk_windows(cid, text, heading, start_line):
    wins = [(cid, a, b, chunking.embedding_text(t, heading)) for a, b, t in chunking.windows(text, start_line)]
    if scheme == "both":
        wins = list(dict.fromkeys(wins + notes_windows(cid, text, heading, start_line)))
    return wins or notes_windows(cid, text, heading, start_line)


chunking.NOTE_MERGE_TOKENS = merge
if scheme != "notes":
    chunking.chunk_windows = embedding.chunk_windows = chunk_windows
embedding.WINDOW_FINGERPRINT = "128" if scheme == "lines" else f"{scheme}{chunking.WINDOW_TOKENS}+{merge}"
sys.argv = sys.argv[3:]
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0])
runpy.run_path(sys.argv[0], run_name="__main__")
