"""The provider base class: batching, retries with backoff, timeouts and dimension checks live
here; a provider implements one batch call."""
from __future__ import annotations

import json
import math
import time
from typing import Literal

from zmem.errors import ZmemError

Kind = Literal["document", "query"]


class EmbeddingError(ZmemError):
    """The provider failed in a way retrying will not fix (bad key, wrong dimension, no model)."""


class RetryableError(Exception):
    """A transient failure (429, 5xx, timeout, connection reset); retry_after in seconds if known."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class Embedder:
    provider = "base"
    batch_size = 32
    max_retries = 4
    backoff_base = 0.5  # seconds; doubles per attempt
    max_backoff = 30.0

    def __init__(self, model: str, dimensions: int | None = None, *, query_prefix: str = "",
                 document_prefix: str = "", timeout: float = 30.0):
        self.model = model
        self.dimensions = dimensions
        self.configured_dimensions = dimensions
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.timeout = timeout

    # -- for providers
    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def endpoint(self) -> str:
        """Where vectors come from, without secrets (part of the fingerprint)."""
        return ""

    # -- for callers
    def fingerprint(self) -> str:
        """Vectors are comparable only between equal fingerprints."""
        return json.dumps({"provider": self.provider, "model": self.model, "dimensions": self.configured_dimensions,
                           "endpoint": self.endpoint(), "query_prefix": self.query_prefix,
                           "document_prefix": self.document_prefix}, sort_keys=True)

    def embed(self, texts: list[str], kind: Kind = "document") -> list[list[float]]:
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        out: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            batch = [prefix + t for t in texts[i:i + self.batch_size]]
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
            try:
                return self._embed_batch(batch)
            except RetryableError as e:
                attempt += 1
                if attempt > self.max_retries:
                    raise EmbeddingError(f"{self.provider}: {e} (gave up after {self.max_retries} retries)",
                                         hint="check the endpoint; BM25 recall keeps working meanwhile") from None
                delay = e.retry_after if e.retry_after is not None else self.backoff_base * 2 ** (attempt - 1)
                time.sleep(min(max(delay, 0.0), self.max_backoff))


def normalize(v: list[float]) -> list[float]:
    """Unit length, so cosine similarity is a dot product."""
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v] if n > 0 else list(v)
