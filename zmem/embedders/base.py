"""The provider base class: batching, retries with backoff, timeouts and dimension checks live
here; a provider implements one batch call."""
from __future__ import annotations

import json
import math
import os
import time

from zmem.errors import ZmemError


def hash_file_ends(h, path) -> None:
    """Feed h a model file's size and its first and last MB: a cheap identity of a file of hundreds
    of MB that changes when the model does (llama's GGUF, onnx's graph)."""
    size = os.stat(path).st_size
    h.update(str(size).encode())
    with open(path, "rb") as f:
        h.update(f.read(1 << 20))
        if size > 1 << 20:
            f.seek(-(1 << 20), os.SEEK_END)
            h.update(f.read(1 << 20))


TYPE_CHECKING = False  # as typing's, without importing typing (~3 ms of a fresh recall); checkers know the name
if TYPE_CHECKING:
    from typing import Literal

    Kind = Literal["document", "query"]


class EmbeddingError(ZmemError):
    """The provider failed in a way retrying will not fix (bad key, wrong dimension, no model), or
    retries ran out."""

    unreachable = False  # it never answered (refused, timed out, hung up): recall remembers that


class RetryableError(Exception):
    """A transient failure (429, 5xx, timeout, connection reset); retry_after in seconds if known;
    unreachable when there was no answer at all."""

    def __init__(self, message: str, retry_after: float | None = None, *, unreachable: bool = False):
        super().__init__(message)
        self.retry_after = retry_after
        self.unreachable = unreachable


class Embedder:
    provider = "base"
    batch_size = 32
    max_retries = 4
    backoff_base = 0.5  # seconds; doubles per attempt
    max_backoff = 30.0
    # Seconds this object may spend on failed calls and the waits between them, in all (None: only
    # max_retries bounds them). Until the provider has answered once, each call also carries a single
    # text and gets no more than what is left of it: an endpoint that hangs from the start costs this
    # much, not retries × timeout, while a slow but working one is not cut short on its later batches.
    give_up_after: float | None = None
    # The model runs in this process (onnx, local): a watcher that holds it loaded can embed a fresh
    # process's query instead (zmem.index.fsmonitor), sparing it the runtime's import and the load.
    in_process = False
    reads_tokens = False  # cover() gives token coverage (onnx: the model's hidden states are at hand)

    def __init__(self, model: str, dimensions: int | None = None, *, query_prefix: str = "",
                 document_prefix: str = "", timeout: float = 30.0):
        self.model = model
        self.dimensions = dimensions
        self.configured_dimensions = dimensions
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.timeout = timeout
        self.failed_seconds = 0.0
        self.answered = False

    # -- for providers
    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def endpoint(self) -> str:
        """Where vectors come from, without secrets (part of the fingerprint)."""
        return ""

    @property
    def loaded(self) -> bool:
        """Whether the next embed runs without loading a model first (always, for an HTTP provider)."""
        return True

    def load(self) -> None:
        """Load the model now rather than at the first embed (nothing to do for an HTTP provider)."""

    def cover(self, query: str, passages: list[str]) -> list[float] | None:
        """How much of query each passage holds, token by token (zmem.query.tokencover), or None: only a model
        whose token states this process can read (onnx) can tell."""
        return None

    def request_timeout(self) -> float:
        """The timeout of the next call (providers pass it to their HTTP client)."""
        if self.give_up_after is None or self.answered:
            return self.timeout
        return max(min(self.timeout, self.give_up_after - self.failed_seconds), 0.1)

    # -- for callers
    def fingerprint(self) -> str:
        """Vectors are comparable only between equal fingerprints."""
        return json.dumps({"provider": self.provider, "model": self.model, "dimensions": self.configured_dimensions,
                           "endpoint": self.endpoint(), "query_prefix": self.query_prefix,
                           "document_prefix": self.document_prefix}, sort_keys=True)

    def embed(self, texts: list[str], kind: Kind = "document") -> list[list[float]]:
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        out: list[list[float]] = []
        i = 0
        while i < len(texts):
            n = 1 if self.give_up_after is not None and not self.answered else self.batch_size
            batch = [prefix + t for t in texts[i:i + n]]
            i += n
            vectors = self._with_retries(batch)
            if len(vectors) != len(batch):
                raise EmbeddingError(f"{self.provider} returned {len(vectors)} vectors for {len(batch)} texts",
                                     hint="check the endpoint speaks the OpenAI embeddings API")
            for v in vectors:
                self._check_dimensions(v)
                out.append(normalize(v))
        return out

    def _check_dimensions(self, v: list[float]) -> None:
        if self.dimensions is None:
            self.dimensions = len(v)
        elif len(v) != self.dimensions:
            raise EmbeddingError(
                f"{self.provider} model {self.model} returned {len(v)} dimensions, expected {self.dimensions}",
                hint="set [embeddings] dimensions to the model's size, or drop it to accept what the model returns")

    def _with_retries(self, batch: list[str]) -> list[list[float]]:
        attempt = 0
        while True:
            t0 = time.monotonic()
            try:
                vectors = self._embed_batch(batch)
                self.answered = True
                return vectors
            except RetryableError as e:
                self.failed_seconds += time.monotonic() - t0
                attempt += 1
                delay = e.retry_after if e.retry_after is not None else self.backoff_base * 2 ** (attempt - 1)
                delay = min(max(delay, 0.0), self.max_backoff)
                spent = self.give_up_after is not None and self.failed_seconds + delay >= self.give_up_after
                if attempt > self.max_retries or spent:
                    why = (f"gave up after {attempt} attempts in {self.failed_seconds:.1f} s" if spent
                           else f"gave up after {self.max_retries} retries")
                    err = EmbeddingError(f"{self.provider}: {e} ({why})",
                                         hint="check the endpoint; BM25 recall keeps working meanwhile")
                    err.unreachable = e.unreachable
                    raise err from None
                time.sleep(delay)
                self.failed_seconds += delay


def normalize(v: list[float]) -> list[float]:
    """Unit length, so cosine similarity is a dot product."""
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v] if n > 0 else list(v)
