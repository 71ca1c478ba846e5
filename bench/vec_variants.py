"""Run a benchmark script with the chunks cut into vector windows another way (an experiment; each
variant has its own vector fingerprint, so give each its own copy of a workspace):

    python bench/vec_variants.py SCHEME bench/quality.py ARGS...
    python bench/vec_variants.py lines bench/paraphrase/run.py --model-path /tmp/minilm.onnx --out /tmp/ws-lines

SCHEME: notesN (chunking.note_windows with consecutive notes merged up to N tokens: notes64 is the
default, notes0 a window per note), lines (runs of whole lines packed to 128 tokens across notes, the
default before 2026-11-26), both (the union of lines and notes0).
"""
import runpy
import sys

from zmem.index import embedding
from zmem.text import chunking

scheme = sys.argv[1]


def chunk_windows(cid, text, heading, start_line):
    lines = [(cid, a, b, chunking.embedding_text(t, heading)) for a, b, t in chunking.windows(text, start_line)]
    notes = [(cid, a, b, chunking.embedding_text(t, h))
             for a, b, t, h in chunking.note_windows(text, start_line, heading, merge_tokens=merge)]
    wins = lines if scheme == "lines" else notes if scheme.startswith("notes") else list(dict.fromkeys(lines + notes))
    return wins or [(cid, start_line, start_line, chunking.embedding_text(text, heading))]


merge = int(scheme[len("notes"):]) if scheme.startswith("notes") else 0
chunking.chunk_windows = embedding.chunk_windows = chunk_windows
embedding.WINDOW_FINGERPRINT = "128" if scheme == "lines" else f"{scheme}{chunking.WINDOW_TOKENS}"
if scheme.startswith("notes"):
    embedding.WINDOW_FINGERPRINT = f"notes{chunking.WINDOW_TOKENS}+{merge}"
sys.argv = sys.argv[2:]
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0])
runpy.run_path(sys.argv[0], run_name="__main__")
