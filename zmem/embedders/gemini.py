"""Gemini's native embeddings API (`models/{model}:batchEmbedContents`), over the standard
library's HTTP client: no SDK, and nothing network-related is imported until vectors are needed.

Documents and queries are embedded with different task types (RETRIEVAL_DOCUMENT and
RETRIEVAL_QUERY), which is part of the fingerprint. Gemini's vectors are not unit length when
`outputDimensionality` reduces them; the base class normalizes every vector."""
from __future__ import annotations

import json
import re
from urllib.parse import quote, urlsplit, urlunsplit

from zmem.embedders.base import Embedder, EmbeddingError, RetryableError

TYPE_CHECKING = False  # as typing's; checkers know the name
if TYPE_CHECKING:
    from zmem.embedders.base import Kind

GEMINI_API = "https://generativelanguage.googleapis.com"
DEFAULT_MODEL = "gemini-embedding-001"
TASK_TYPES = {"document": "RETRIEVAL_DOCUMENT", "query": "RETRIEVAL_QUERY"}
MAX_BATCH = 100  # batchEmbedContents takes at most 100 requests
_VERSION = re.compile(r"/v\d+(?:alpha|beta)?\d*$")


class GeminiNativeEmbedder(Embedder):
    provider = "gemini"
    batch_size = MAX_BATCH
    max_batch_size = MAX_BATCH

    def __init__(self, model: str = DEFAULT_MODEL, *, base_url: str | None = None, api_key: str | None = None,
                 headers: dict | None = None, key_env: str = "GEMINI_API_KEY", **kw):
        super().__init__(model.removeprefix("models/"), **kw)
        self.base_url = base_url or GEMINI_API
        self.api_key = api_key
        self.headers = dict(headers or {})
        self.key_env = key_env
        self.task_types = dict(TASK_TYPES)
        self._kind: Kind = "document"

    def endpoint(self) -> str:
        """The API root with its version, without credentials or query string."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        path = parts.path.rstrip("/")
        if not _VERSION.search(path):
            path += "/v1beta"
        return urlunsplit((parts.scheme, host, path, "", ""))

    def url(self) -> str:
        query = urlsplit(self.base_url).query
        return f"{self.endpoint()}/models/{quote(self.model, safe='')}:batchEmbedContents" + (f"?{query}" if query else "")

    def fingerprint(self) -> str:
        fp = json.loads(super().fingerprint())
        fp.update(api="native", task_types=self.task_types)
        return json.dumps(fp, sort_keys=True)

    def embed(self, texts: list[str], kind: Kind = "document") -> list[list[float]]:
        self._kind = kind  # _embed_batch sends the task type that matches
        return super().embed(texts, kind)

    def _request(self, text: str) -> dict:
        req = {"model": f"models/{self.model}", "content": {"parts": [{"text": text}]},
               "taskType": self.task_types[self._kind]}
        if self.configured_dimensions:
            req["outputDimensionality"] = self.configured_dimensions
        return req

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        from zmem.embedders import jsonhttp
        headers = dict(self.headers)
        if self.api_key:
            headers["x-goog-api-key"] = self.api_key
        try:
            answer = jsonhttp.post_json(self.url(), {"requests": [self._request(t) for t in texts]},
                                        headers=headers, timeout=self.request_timeout())
        except jsonhttp.HTTPStatusError as e:
            raise self._http_error(e) from None
        except jsonhttp.TLSError as e:
            raise EmbeddingError(f"cannot verify the TLS certificate of {self.endpoint()}: {e}",
                                 hint="check [embeddings] base_url") from None
        except jsonhttp.Unreachable as e:
            raise RetryableError(f"cannot reach {self.endpoint()}: {e}", unreachable=True) from None
        except jsonhttp.NotJSON:
            answer = None  # _vectors says what the endpoint should have answered
        return self._vectors(answer, len(texts))

    def _vectors(self, answer, n: int) -> list[list[float]]:
        try:
            items = answer["embeddings"]
            vectors = [[float(x) for x in item["values"]] for item in items]
        except (ValueError, KeyError, TypeError):
            raise EmbeddingError(f"{self.endpoint()} did not answer with batchEmbedContents embeddings",
                                 hint='check [embeddings] base_url points at the Gemini API; for an '
                                      'OpenAI-compatible endpoint set api = "openai"') from None
        if len(vectors) != n or any(not v for v in vectors):
            raise EmbeddingError(f"gemini returned {len(vectors)} embeddings for {n} texts"
                                 + (" (some empty)" if any(not v for v in vectors) else ""),
                                 hint="check [embeddings] model is an embedding model such as gemini-embedding-001")
        return vectors

    def _http_error(self, e) -> Exception:
        status, message = e.status, e.message
        err = e.payload.get("error") if isinstance(e.payload, dict) else None
        err = err if isinstance(err, dict) else {}
        details = err.get("details") if isinstance(err.get("details"), list) else []
        reasons = " ".join(str(d.get("reason", "")) for d in details if isinstance(d, dict))
        where = self.endpoint()
        if status == 429:
            return RetryableError(f"rate limited (429) by {where}", _retry_after(e, details))
        if status in (408, 500, 502, 503, 504):
            return RetryableError(f"server error {status} from {where}", _retry_after(e, details))
        if status in (401, 403) or "API_KEY" in reasons or "api key" in message.lower():
            return EmbeddingError(f"{where} rejected the API key ({status}: {message})",
                                  hint=f"check the key in {self.key_env} (export {self.key_env}=… with a key "
                                       "from https://aistudio.google.com/apikey)")
        if status == 404:
            return EmbeddingError(f"{where} has no embedding model {self.model!r} (404: {message})",
                                  hint=f"check [embeddings] model ({DEFAULT_MODEL} is Gemini's current one)")
        if "dimension" in message.lower():
            return EmbeddingError(f"{where} refused dimensions = {self.configured_dimensions} ({status}: {message})",
                                  hint=f"{DEFAULT_MODEL} accepts 128 to 3072 (768, 1536 or 3072 recommended); "
                                       "drop [embeddings] dimensions for the model's default")
        return EmbeddingError(f"{where} answered {status}: {message}",
                              hint="check [embeddings] model, dimensions and base_url")

    def _check_dimensions(self, v: list[float]) -> None:
        try:
            super()._check_dimensions(v)
        except EmbeddingError as e:
            hint = (f"Gemini was asked for outputDimensionality = {self.configured_dimensions}; older models "
                    "ignore it: set [embeddings] dimensions to what the model returns, or drop it"
                    if self.configured_dimensions else "the endpoint returned vectors of different sizes")
            raise EmbeddingError(e.message, hint=hint) from None


def _retry_after(e, details: list) -> float | None:
    """Seconds from a Retry-After header, else from Gemini's RetryInfo."""
    seconds = e.retry_after()
    if seconds is not None:
        return seconds
    for d in details:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)s", str(d.get("retryDelay", ""))) if isinstance(d, dict) else None
        if m:
            return float(m.group(1))
    return None
