"""The `local` provider: a GGUF embedding model run by llama.cpp (llama-cpp-python, the optional
extra `zmem[local]`). The only module that imports llama_cpp.

Measured on these machines (DESIGN.md §5): llama-cpp-python truncates input to n_batch, not to the
model's positions, and a text longer than the model's context aborts the whole process (SIGABRT).
So the context, n_batch and n_ubatch all equal the model's training context, and every text is cut
to that many TOKENS here, keeping the trailing separator, before llama.cpp sees it. One sequence
per decode (faster than packing here); flash attention where supported (1.5-2.5x)."""
from __future__ import annotations

import hashlib
import os
import sys
import threading
from pathlib import Path

from zmem.embedders.base import Embedder, EmbeddingError

MAX_TOKENS = 2048  # cap for long-context GGUFs: bounds the compute buffers; zmem's windows are far shorter


def model_id(path: Path) -> str:
    """Name plus a hash of the size and the first and last MB: changes when the model does."""
    h = hashlib.sha256()
    size = path.stat().st_size
    h.update(str(size).encode())
    with open(path, "rb") as f:
        h.update(f.read(1 << 20))
        if size > 1 << 20:
            f.seek(-(1 << 20), os.SEEK_END)
            h.update(f.read(1 << 20))
    return f"{path.name}@{h.hexdigest()[:12]}"


class LlamaEmbedder(Embedder):
    provider = "local"
    batch_size = 16

    def __init__(self, model_path: str, *, dimensions: int | None = None, query_prefix: str = "",
                 document_prefix: str = "", threads: int | None = None, timeout: float = 30.0):
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise EmbeddingError(f"no model file at {path}",
                                 hint="write one with `zmem model import DIR`, and point [embeddings] model_path at it")
        try:
            mid = model_id(path)
        except OSError as e:
            raise EmbeddingError(f"cannot read {path}: {e}", hint="check the file's permissions") from None
        super().__init__(mid, dimensions, query_prefix=query_prefix, document_prefix=document_prefix,
                         timeout=timeout)
        self.path = path
        self.threads = threads
        self._llama = None
        self._lock = threading.Lock()
        self.max_tokens = 0          # the model's context (capped at MAX_TOKENS), known after loading
        self.check_in_child = True   # run a model file once in a child process before loading it here
        self._tail = 0               # special tokens the tokenizer appends ([SEP]); kept on truncation

    def endpoint(self) -> str:
        return "llama.cpp"

    # -- loading
    def _load(self):
        if self._llama is not None:
            return self._llama
        os.environ.setdefault("GGML_NO_BACKTRACE", "1")  # on an assert ggml would fork gdb (it once hung)
        try:
            import llama_cpp
        except ImportError:
            raise EmbeddingError("the local provider needs llama-cpp-python",
                                 hint="pip install 'zmem[local]' (it builds llama.cpp, about 10 minutes on 2 cores)") from None
        _silence(llama_cpp)
        if self.check_in_child:
            _check_in_child(self.path, self.model)
        pooling = getattr(llama_cpp, "LLAMA_POOLING_TYPE_UNSPECIFIED", -1)
        # n_ctx=0 is the model's training context; n_batch = n_ubatch must cover the longest text.
        # A vocab-only load does not report the training context, so open with BERT's usual 512
        # and reopen in the rarer case the model's context differs.
        llama = self._open(llama_cpp, 0, 512, pooling)
        meta = getattr(llama, "metadata", None) or {}  # a binding without it: no check
        arch = meta.get("general.architecture", "?")
        if meta and f"{arch}.pooling_type" not in meta:  # embedding GGUFs say how to pool; chat models do not
            _close(llama)
            raise EmbeddingError(f"{self.path.name} is a {arch} model that declares no pooling type: not an embedding "
                                 "model", hint="use an embedding GGUF, e.g. one written by `zmem model import DIR`")
        train = _train_context(llama)
        n = min(train, MAX_TOKENS)
        if llama.pooling_type() == getattr(llama_cpp, "LLAMA_POOLING_TYPE_NONE", 0):
            pooling = llama_cpp.LLAMA_POOLING_TYPE_MEAN  # one vector per token otherwise
        if n != llama.n_batch or pooling != getattr(llama_cpp, "LLAMA_POOLING_TYPE_UNSPECIFIED", -1):
            _close(llama)
            llama = self._open(llama_cpp, 0 if n == train else n, n, pooling)
        self.max_tokens = min(n, llama.n_batch)  # llama-cpp-python lowers n_batch to the context
        self._tail = _tail_specials(llama)
        self._llama = llama
        return llama

    def _open(self, llama_cpp, n_ctx: int, n_batch: int, pooling: int):
        threads = self.threads or max(1, min(os.cpu_count() or 1, 8))
        kw = dict(model_path=str(self.path), embedding=True, n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_batch,
                  n_threads=threads, n_threads_batch=threads, pooling_type=pooling, verbose=False)
        try:
            return llama_cpp.Llama(**kw, flash_attn=True)  # 1.5-2.5x faster where supported
        except (TypeError, ValueError, RuntimeError):
            pass  # a binding without the flag, or a backend without flash attention: try without
        try:
            return llama_cpp.Llama(**kw)
        except (ValueError, RuntimeError) as e:
            raise EmbeddingError(f"llama.cpp cannot load {self.path.name}: {e}",
                                 hint="is it a GGUF embedding model? re-create it with `zmem model import DIR`") from None

    # -- embedding
    def tokens(self, text: str) -> list[int]:
        """The token ids llama.cpp will see for `text`: with the model's specials, cut to its context."""
        llama = self._load()
        ids = llama.tokenize(text.encode("utf-8", "replace"), add_bos=True, special=False)
        if len(ids) > self.max_tokens:
            tail = ids[len(ids) - self._tail:] if self._tail else []
            ids = ids[:self.max_tokens - len(tail)] + tail
        return ids

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            llama = self._load()
            return [self._embed_one(llama, self.tokens(t)) for t in texts]

    def _embed_one(self, llama, ids: list[int]) -> list[float]:
        import llama_cpp
        try:
            batch, ctx = llama._batch, llama._ctx
        except AttributeError:  # a binding without these internals: its own (n_batch-bounded) path
            return list(llama.embed(llama.detokenize(ids).decode("utf-8", "replace"), truncate=True))
        batch.reset()
        batch.add_sequence(ids, 0, True)
        ctx.kv_cache_clear()
        try:
            ctx.decode(batch)
        except RuntimeError as e:
            raise EmbeddingError(f"llama.cpp failed to embed a text of {len(ids)} tokens: {e}",
                                 hint="re-create the model with `zmem model import DIR`") from None
        finally:
            batch.reset()
        ptr = llama_cpp.llama_get_embeddings_seq(ctx.ctx, 0)
        if not ptr:
            raise EmbeddingError(f"llama.cpp returned no pooled embedding for {self.path.name}",
                                 hint="is it an embedding model? re-create it with `zmem model import DIR`")
        return list(ptr[:llama.n_embd()])


def _train_context(llama) -> int:
    try:
        n = int(llama._model.n_ctx_train())
    except (AttributeError, TypeError, ValueError):
        n = 0
    return n if n > 0 else int(llama.n_batch)  # llama-cpp-python caps n_batch at the context


def _close(llama) -> None:
    if hasattr(llama, "close"):
        llama.close()


def _tail_specials(llama) -> int:
    """How many special tokens the tokenizer appends after the text ([SEP] for BERT)."""
    plain = llama.tokenize(b"memory", add_bos=False, special=False)
    full = llama.tokenize(b"memory", add_bos=True, special=False)
    for i in range(len(full) - len(plain) + 1):
        if full[i:i + len(plain)] == plain:
            return len(full) - i - len(plain)
    return 0


def _check_in_child(path: Path, model_id: str) -> None:
    """Load and run a model file once in a child process before this process loads it: llama.cpp
    aborts the whole process (SIGABRT) on some malformed GGUFs (e.g. F16 position embeddings in a
    BERT). A model that passed is remembered by its id (name, size and a hash of its ends)."""
    import subprocess
    from zmem.config import user_cache_dir
    marker = user_cache_dir() / "checked-models" / hashlib.sha256(model_id.encode()).hexdigest()[:24]
    if marker.is_file():
        return
    try:
        proc = subprocess.run([sys.executable, "-m", "zmem.embedders.llama", str(path)], capture_output=True,
                              text=True, timeout=300, env={**os.environ, "GGML_NO_BACKTRACE": "1"})
    except subprocess.TimeoutExpired:
        raise EmbeddingError(f"llama.cpp took over 300 s to load and run {path.name}",
                             hint="is it a GGUF embedding model of a usable size?") from None
    if proc.returncode < 0:
        import signal
        raise EmbeddingError(f"llama.cpp crashed ({signal.Signals(-proc.returncode).name}) running {path.name}",
                             hint="the GGUF is malformed for llama.cpp: re-create it with `zmem model import DIR`")
    if proc.returncode:
        lines = proc.stderr.strip().splitlines()
        raise EmbeddingError(lines[-1] if lines else f"llama.cpp failed to run {path.name}",
                             hint="is it a GGUF embedding model? re-create it with `zmem model import DIR`")
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(f"{model_id}\n")
    except OSError:
        pass  # an unwritable cache: the check runs again next time, nothing worse


def _check_main(path: str) -> int:
    """The child of _check_in_child: load the model, embed a short and an over-long text."""
    embedder = LlamaEmbedder(path)
    embedder.check_in_child = False
    try:
        embedder.embed(["zmem", "memory " * (MAX_TOKENS + 16)], "document")
    except EmbeddingError as e:
        print(e.message, file=sys.stderr)
        return 1
    return 0


_LOG_CALLBACK = None


def _silence(llama_cpp) -> None:
    """llama.cpp logs to stderr even with verbose=False; agents read stderr, so drop it. The
    callback is kept alive in a global: llama.cpp calls it long after this function returns."""
    global _LOG_CALLBACK
    if _LOG_CALLBACK is None:
        import ctypes
        _LOG_CALLBACK = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
        llama_cpp.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))


if __name__ == "__main__":
    sys.exit(_check_main(sys.argv[1]))
