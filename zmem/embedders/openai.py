"""Any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio,
OpenRouter) and Gemini's OpenAI-compatible endpoint: `POST {base_url}/embeddings` with a bearer key,
over the standard library (jsonhttp), not the openai SDK, whose import alone cost 1.3–1.5 s of CPU
in every fresh `zmem recall`."""
from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from zmem.embedders.base import Embedder, EmbeddingError, RetryableError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"


class OpenAIEmbedder(Embedder):
    provider = "openai"

    def __init__(self, model: str = "text-embedding-3-small", *, base_url: str | None = None,
                 api_key: str | None = None, headers: dict | None = None, **kw):
        super().__init__(model, **kw)
        self.base_url = base_url
        self.api_key = api_key
        self.headers = dict(headers or {})

    def endpoint(self) -> str:
        if not self.base_url:
            return DEFAULT_BASE_URL
        parts = urlsplit(self.base_url)  # drop user:password@ and the query string (may hold keys)
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        from zmem.embedders import jsonhttp
        body = {"model": self.model, "input": texts}
        if self.dimensions and self.provider == "openai" and self.model.startswith("text-embedding-3"):
            body["dimensions"] = self.dimensions
        headers = {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        headers.update(self.headers)
        where = self.endpoint()
        try:
            answer = jsonhttp.post_json(jsonhttp.join_url(self.base_url or DEFAULT_BASE_URL, "embeddings"), body,
                                        headers=headers, timeout=self.request_timeout())
        except jsonhttp.HTTPStatusError as e:
            raise self._status_error(e) from None
        except jsonhttp.Unreachable as e:
            raise RetryableError(f"cannot reach {where}: {e}", unreachable=True) from None
        except jsonhttp.TLSError as e:
            raise EmbeddingError(f"cannot verify the TLS certificate of {where}: {e}",
                                 hint="check [embeddings] base_url") from None
        except jsonhttp.NotJSON as e:
            raise EmbeddingError(f"{where} did not answer with JSON but {e}",
                                 hint="check [embeddings] base_url is the API's root (often ending in /v1)") from None
        try:
            data = sorted(answer["data"], key=lambda d: d.get("index", 0))
            return [[float(x) for x in d["embedding"]] for d in data]
        except (KeyError, TypeError, ValueError, AttributeError):
            problem = jsonhttp.error_message(answer)
            raise EmbeddingError(f"{where} did not answer with embeddings" + (f": {problem}" if problem else ""),
                                 hint="check the endpoint speaks the OpenAI embeddings API") from None

    def _status_error(self, e) -> Exception:
        where = self.endpoint()
        said = f" ({e.status}: {e.message})" if e.message else f" ({e.status})"
        if e.status == 429:
            return RetryableError(f"rate limited by {where}{said}", e.retry_after())
        if e.status in (408, 409) or e.status >= 500:  # the ones OpenAI's own client retries
            return RetryableError(f"server error from {where}{said}", e.retry_after())
        if e.status == 401:
            return EmbeddingError(f"{where} rejected the API key{said}",
                                  hint="check the key in the environment variable the config names")
        return EmbeddingError(f"{where} answered {e.status}: {e.message or 'no message'}",
                              hint="check [embeddings] model and base_url")


class GeminiEmbedder(OpenAIEmbedder):
    provider = "gemini"

    def __init__(self, model: str | None = None, **kw):
        from zmem.embedders.gemini import DEFAULT_MODEL  # one default for both of Gemini's APIs
        model = model or DEFAULT_MODEL
        kw.setdefault("base_url", GEMINI_BASE_URL)
        super().__init__(model, **kw)
