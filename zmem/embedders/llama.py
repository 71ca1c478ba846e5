"""The `local` provider: a GGUF embedding model run by llama.cpp through llama-cpp-python's ctypes
bindings (the optional extra `zmem[local]`). The only module that imports llama_cpp.

Measured on these machines (DESIGN.md §5): a text longer than the model's context aborts the whole
process (SIGABRT). So the context, n_batch and n_ubatch all equal the model's training context, and
every text is cut to that many TOKENS here, keeping the trailing separator, before llama.cpp sees
it. One sequence per decode (faster than packing here); flash attention where supported (1.5-2.5x).
The C API rather than the high-level `Llama` class: importing that costs ~200 ms per process."""
from __future__ import annotations

import ctypes
import hashlib
import os
import sys
import threading
from pathlib import Path

from zmem.embedders.base import Embedder, EmbeddingError, hash_file_ends
from zmem.install import pip_install, pip_upgrade

MAX_TOKENS = 2048  # cap for long-context GGUFs: bounds the compute buffers; zmem's windows are far shorter


def model_id(path: Path) -> str:
    """Name plus a hash of the size and the first and last MB: changes when the model does."""
    h = hashlib.sha256()
    hash_file_ends(h, path)
    return f"{path.name}@{h.hexdigest()[:12]}"


class LlamaEmbedder(Embedder):
    provider = "local"
    batch_size = 16
    in_process = True

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
    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def load(self) -> None:
        with self._lock:
            self._load()

    def _load(self) -> "_Model":
        if self._llama is not None:
            return self._llama
        os.environ.setdefault("GGML_NO_BACKTRACE", "1")  # on an assert ggml would fork gdb (it once hung)
        try:
            bindings = _bindings()
        except ImportError:
            raise EmbeddingError("the local provider needs llama-cpp-python",
                                 hint=f"{pip_install('local')} (it builds llama.cpp, 10-50 minutes on 2 cores)") from None
        _silence(bindings)
        if self.check_in_child:
            _check_in_child(self.path, self.model)
        cores = os.cpu_count() or 1
        # more threads than cores never helps, and a huge count makes llama.cpp crash (bad_alloc, SIGSEGV)
        threads = min(self.threads, cores) if self.threads and self.threads > 0 else max(1, min(cores, 8))
        try:
            self._llama = _Model(bindings, self.path, threads)
        except AttributeError as e:  # a binding older than the C API used here
            raise EmbeddingError(f"this llama-cpp-python lacks a llama.cpp function zmem needs ({e})",
                                 hint=pip_upgrade("llama-cpp-python")) from None
        self.max_tokens = self._llama.n_ctx
        self._tail = self._llama.tail_specials()
        return self._llama

    # -- embedding
    def tokens(self, text: str) -> list[int]:
        """The token ids llama.cpp will see for `text`: with the model's specials, cut to its context."""
        ids = self._load().tokenize(text.encode("utf-8", "replace"), specials=True)
        if len(ids) > self.max_tokens:
            tail = ids[len(ids) - self._tail:] if self._tail else []
            ids = ids[:self.max_tokens - len(tail)] + tail
        return ids

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            model = self._load()
            return [model.embed(self.tokens(t)) for t in texts]


def _bindings():
    """llama-cpp-python's ctypes bindings (llama_cpp.llama_cpp) without the package's __init__,
    which imports the high-level Llama and with it numpy, jinja2 and diskcache: ~200 ms that every
    `zmem recall` process would pay; the bindings alone take ~30 ms."""
    import importlib.util
    import types
    if "llama_cpp.llama_cpp" in sys.modules:  # None: known to be missing
        loaded = sys.modules["llama_cpp.llama_cpp"]
        if loaded is None:
            raise ImportError("llama_cpp")
        return loaded
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("llama_cpp")
    if "llama_cpp" in sys.modules:
        import llama_cpp.llama_cpp as bindings
        return bindings
    package = types.ModuleType("llama_cpp")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules["llama_cpp"] = package
    try:
        import llama_cpp.llama_cpp as bindings
    finally:
        # a later `import llama_cpp` runs the real __init__, which reuses the loaded bindings
        del sys.modules["llama_cpp"]
    return bindings


class _Model:
    """One GGUF embedding model and one llama.cpp context, driven through the C API.

    Measured on these machines (DESIGN.md §5): a text longer than the context aborts the whole
    process, so the context, n_batch and n_ubatch all equal the model's training context (capped
    at MAX_TOKENS) and callers cut texts to n_ctx tokens. One sequence per decode."""

    def __init__(self, bindings, path: Path, threads: int):
        self.L = L = bindings
        self.model = self.ctx = self.batch = None
        L.llama_backend_init()
        self.model = L.llama_model_load_from_file(str(path).encode(), L.llama_model_default_params())
        if not self.model:
            raise EmbeddingError(f"llama.cpp cannot load {path.name}",
                                 hint="is it a GGUF embedding model? re-create it with `zmem model import DIR`")
        try:
            self._open_context(path, threads)
        except BaseException:
            self.close()
            raise

    def _open_context(self, path: Path, threads: int) -> None:
        L = self.L
        arch = self.meta("general.architecture") or "?"
        pooling = self.meta(f"{arch}.pooling_type")
        if pooling is None:  # embedding GGUFs say how to pool; chat models do not
            raise EmbeddingError(f"{path.name} is a {arch} model that declares no pooling type: not an embedding "
                                 "model", hint="use an embedding GGUF, e.g. one written by `zmem model import DIR`")
        if pooling == str(L.LLAMA_POOLING_TYPE_RANK):  # one relevance score per text, not a vector
            raise EmbeddingError(f"{path.name} is a reranker (pooling type rank), not an embedding model",
                                 hint="use an embedding GGUF, e.g. one written by `zmem model import DIR`")
        train = int(L.llama_model_n_ctx_train(self.model))
        self.n_ctx = min(train if train > 0 else 512, MAX_TOKENS)
        params = L.llama_context_default_params()
        params.n_ctx = params.n_batch = params.n_ubatch = self.n_ctx
        params.n_seq_max = 1
        params.n_threads = params.n_threads_batch = threads
        params.embeddings = True
        # a model that pools nothing would give one vector per token: mean-pool it
        params.pooling_type = L.LLAMA_POOLING_TYPE_MEAN if pooling == "0" else L.LLAMA_POOLING_TYPE_UNSPECIFIED
        if hasattr(params, "flash_attn_type"):  # 1.5-2.5x faster where the backend supports it
            params.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_AUTO
        self.ctx = L.llama_init_from_model(self.model, params)
        if not self.ctx:
            raise EmbeddingError(f"llama.cpp cannot create a context for {path.name}",
                                 hint="is it a GGUF embedding model? re-create it with `zmem model import DIR`")
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_embd = int(L.llama_model_n_embd(self.model))
        self.batch = L.llama_batch_init(self.n_ctx, 0, 1)
        self.name = path.name
        if hasattr(L, "llama_get_memory"):
            memory = L.llama_get_memory(self.ctx)  # none for non-causal embedding models
            self._clear_memory = (lambda: L.llama_memory_clear(memory, True)) if memory else (lambda: None)
        else:  # bindings from before llama.cpp's memory API
            self._clear_memory = lambda: L.llama_kv_self_clear(self.ctx)

    def meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(256)
        n = self.L.llama_model_meta_val_str(self.model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace") if n >= 0 else None

    def tokenize(self, data: bytes, *, specials: bool) -> list[int]:
        L = self.L
        cap = len(data) + 8
        while True:
            out = (L.llama_token * cap)()
            n = L.llama_tokenize(self.vocab, data, len(data), out, cap, specials, False)
            if n >= 0:
                return list(out[:n])
            cap = -n

    def tail_specials(self) -> int:
        """How many special tokens the tokenizer appends after the text ([SEP] for BERT)."""
        plain = self.tokenize(b"memory", specials=False)
        full = self.tokenize(b"memory", specials=True)
        for i in range(len(full) - len(plain) + 1):
            if full[i:i + len(plain)] == plain:
                return len(full) - i - len(plain)
        return 0

    def embed(self, ids: list[int]) -> list[float]:
        L, batch = self.L, self.batch
        batch.n_tokens = len(ids)
        for i, token in enumerate(ids):
            batch.token[i] = token
            batch.pos[i] = i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = True
        self._clear_memory()
        rc = L.llama_decode(self.ctx, batch)
        batch.n_tokens = 0
        if rc != 0:
            raise EmbeddingError(f"llama.cpp failed to embed a text of {len(ids)} tokens (error {rc})",
                                 hint="re-create the model with `zmem model import DIR`")
        ptr = L.llama_get_embeddings_seq(self.ctx, 0)
        if not ptr:
            raise EmbeddingError(f"llama.cpp returned no pooled embedding for {self.name}",
                                 hint="is it an embedding model? re-create it with `zmem model import DIR`")
        return list(ptr[:self.n_embd])

    def close(self) -> None:
        L = self.L
        if self.batch is not None:
            L.llama_batch_free(self.batch)
            self.batch = None
        if self.ctx:
            L.llama_free(self.ctx)
            self.ctx = None
        if self.model:
            L.llama_model_free(self.model)
            self.model = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # at interpreter exit the bindings may be gone already
            pass


def _check_in_child(path: Path, model_id: str) -> None:
    """Load and run a model file once in a child process before this process loads it: llama.cpp
    aborts the whole process (SIGABRT) on some malformed GGUFs (e.g. F16 position embeddings in a
    BERT). A model that passed is remembered by its id (name, size and a hash of its ends)."""
    import subprocess
    from zmem.workspace.config import user_cache_dir
    from zmem.workspace.spawn import zmem_command
    marker = user_cache_dir() / "checked-models" / hashlib.sha256(model_id.encode()).hexdigest()[:24]
    if marker.is_file():
        return
    try:
        proc = subprocess.run(zmem_command("zmem.embedders.llama", str(path)), capture_output=True,
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
        _LOG_CALLBACK = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
        llama_cpp.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))


if __name__ == "__main__":
    sys.exit(_check_main(sys.argv[1]))
