"""The `local` provider: a GGUF embedding model run by llama.cpp (llama-cpp-python, the optional
extra `zmem[local]`). The only module that imports llama_cpp."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from zmem.embedders.base import Embedder, EmbeddingError


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

    def __init__(self, model_path: str, *, threads: int | None = None, **kw):
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise EmbeddingError(f"no model file at {path}",
                                 hint="write one with `zmem model import DIR`, and point [embeddings] model_path at it")
        super().__init__(model_id(path), **kw)
        self.path = path
        self.threads = threads
        self._llama = None
        self._n_ctx = 512

    def endpoint(self) -> str:
        return "llama.cpp"

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
        llama = self._open(llama_cpp, 512)
        if llama.n_ctx() < 512:  # llama-cpp-python truncates to n_batch: it must not exceed the context
            llama = self._open(llama_cpp, llama.n_ctx())
        self._llama = llama
        return llama

    def _open(self, llama_cpp, n_batch: int):
        kw = dict(model_path=str(self.path), embedding=True, n_ctx=0, n_batch=n_batch, n_ubatch=n_batch,
                  n_threads=self.threads or max(1, min(os.cpu_count() or 1, 8)), verbose=False)
        try:
            try:
                return llama_cpp.Llama(**kw, flash_attn=True)  # 1.5-2.5x faster where supported
            except TypeError:
                return llama_cpp.Llama(**kw)
        except (ValueError, RuntimeError) as e:
            raise EmbeddingError(f"llama.cpp cannot load {self.path.name}: {e}",
                                 hint="re-create it with `zmem model import DIR`") from None

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        llama = self._load()
        # one sequence per call (faster than packing here); truncate=True cuts to n_batch <= context
        return [list(llama.embed(text, truncate=True)) for text in texts]


_LOG_CALLBACK = None


def _silence(llama_cpp) -> None:
    """llama.cpp logs to stderr even with verbose=False; agents read stderr, so drop it."""
    global _LOG_CALLBACK
    if _LOG_CALLBACK is None:
        import ctypes
        _LOG_CALLBACK = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
        llama_cpp.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))
