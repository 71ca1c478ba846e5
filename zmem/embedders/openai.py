"""Any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio,
OpenRouter) and Gemini's OpenAI-compatible endpoint. The only module that imports openai."""
from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from zmem.embedders.base import Embedder, EmbeddingError, RetryableError

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"


class OpenAIEmbedder(Embedder):
    provider = "openai"

    def __init__(self, model: str = "text-embedding-3-small", *, base_url: str | None = None,
                 api_key: str | None = None, headers: dict | None = None, **kw):
        super().__init__(model, **kw)
        self.base_url = base_url
        self.api_key = api_key
        self.headers = dict(headers or {})
        self._client = None

    def endpoint(self) -> str:
        if not self.base_url:
            return "https://api.openai.com/v1"
        parts = urlsplit(self.base_url)  # drop user:password@ and the query string (may hold keys)
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))

    def _client_or_create(self):
        if self._client is None:
            import openai  # costs ~0.8 s: only when vectors are actually needed
            self._client = openai.OpenAI(api_key=self.api_key or "none", base_url=self.base_url or None,
                                         default_headers=self.headers or None, timeout=self.timeout, max_retries=0)
        return self._client

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        import openai
        client = self._client_or_create()
        kwargs = {"model": self.model, "input": texts}
        if self.dimensions and self.provider == "openai" and self.model.startswith("text-embedding-3"):
            kwargs["dimensions"] = self.dimensions
        try:
            resp = client.embeddings.create(**kwargs, timeout=self.request_timeout())
        except openai.RateLimitError as e:
            raise RetryableError(f"rate limited (429) by {self.endpoint()}", _retry_after(e)) from None
        except openai.InternalServerError as e:
            raise RetryableError(f"server error {e.status_code} from {self.endpoint()}", _retry_after(e)) from None
        except (openai.APITimeoutError, openai.APIConnectionError) as e:
            raise RetryableError(f"cannot reach {self.endpoint()}: {type(e).__name__}", unreachable=True) from None
        except openai.AuthenticationError:
            raise EmbeddingError(f"{self.endpoint()} rejected the API key",
                                 hint="check the key in the environment variable the config names") from None
        except openai.APIStatusError as e:
            raise EmbeddingError(f"{self.endpoint()} answered {e.status_code}: {_short(e)}",
                                 hint="check [embeddings] model and base_url") from None
        except openai.APIError as e:  # malformed responses and the like
            raise EmbeddingError(f"{self.endpoint()}: {_short(e)}", hint="check the endpoint speaks the embeddings API") from None
        data = sorted(resp.data, key=lambda d: d.index)
        return [list(d.embedding) for d in data]


class GeminiEmbedder(OpenAIEmbedder):
    provider = "gemini"

    def __init__(self, model: str | None = None, **kw):
        from zmem.embedders.gemini import DEFAULT_MODEL  # one default for both of Gemini's APIs
        model = model or DEFAULT_MODEL
        kw.setdefault("base_url", GEMINI_BASE_URL)
        super().__init__(model, **kw)


def _retry_after(e) -> float | None:
    try:
        value = e.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None


def _short(e) -> str:
    text = str(getattr(e, "message", "") or e)
    return text if len(text) < 200 else text[:197] + "..."
