"""Embedding providers. Each provider module owns its external dependency and imports it lazily."""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from zmem.embedders.base import Embedder, EmbeddingError

DEFAULT_PROVIDER = "auto"  # with nothing found it is keyword recall, as "none" (embedders/auto.py)
IN_PROCESS_PROVIDERS = ("onnx", "local")  # their models run in the process (Embedder.in_process)
# the packages each in-process provider's engine imports, and the extra that installs them
ENGINES = {"onnx": (("onnxruntime", "tokenizers", "numpy"), "semantic"), "local": (("llama_cpp",), "local")}


def missing_engine(provider: str) -> str | None:
    """The package an in-process provider's engine needs that this interpreter cannot import (found
    without importing it: ~0.1 ms), or None (present, or a provider with no engine of its own)."""
    from importlib.util import find_spec
    for module in ENGINES.get(provider, ((), None))[0]:
        try:
            if find_spec(module) is None:
                return module
        except (ImportError, ValueError):  # a broken parent package, a module whose __spec__ is None
            return module
    return None


def make_embedder(settings: dict, provider: str | None = None) -> Embedder | None:
    """The embedder for `provider` (default: settings["provider"], else DEFAULT_PROVIDER) or None for
    `none`. `auto` picks what is there (embedders/auto.py: a configured model or endpoint, a local
    Ollama, an installed model) or None. `gemini` is the native API unless gemini_api() says openai."""
    provider = provider or settings.get("provider", DEFAULT_PROVIDER)
    if provider == "auto":
        from zmem.embedders.auto import resolve
        settings, _why = resolve(settings)
        if settings is None:
            return None
        provider = settings["provider"]
    common = {k: settings[k] for k in ("dimensions", "query_prefix", "document_prefix", "timeout") if k in settings}
    key_env = settings.get("api_key_env")
    if provider == "none":
        return None
    if provider in ("openai", "gemini"):
        _check_remote_settings(settings, key_env)
    if provider == "local":
        path = settings.get("model_path")
        if not path:
            raise EmbeddingError("the local provider needs [embeddings] model_path",
                                 hint="import a model with `zmem model import DIR` and set model_path to the .gguf it writes")
        from zmem.embedders.llama import LlamaEmbedder
        embedder = LlamaEmbedder(str(Path(path).expanduser()), threads=settings.get("threads"), **common)
    elif provider == "onnx":
        if not settings.get("model_path"):
            raise EmbeddingError("the onnx provider needs [embeddings] model_path",
                                 hint="write a model with `zmem model import DIR --format onnx` and set model_path "
                                      "to the directory it writes")
        from zmem.embedders.onnx import OnnxEmbedder
        embedder = OnnxEmbedder(settings["model_path"], threads=settings.get("threads"), **common)
    elif provider == "gemini" and gemini_api(settings) == "native":
        from zmem.embedders.gemini import GeminiNativeEmbedder
        key = _key(key_env, "GEMINI_API_KEY", "GOOGLE_API_KEY")
        kw = {"api_key": key, "headers": settings.get("headers"), "base_url": settings.get("base_url"),
              "key_env": key_env or "GEMINI_API_KEY"}
        if settings.get("model"):
            kw["model"] = settings["model"]
        embedder = GeminiNativeEmbedder(**kw, **common)
        if not key and not settings.get("base_url"):
            raise EmbeddingError("no API key for the gemini provider", hint=f"export {key_env or 'GEMINI_API_KEY'}=…")
    elif provider in ("openai", "gemini"):
        from zmem.embedders.openai import GeminiEmbedder, OpenAIEmbedder
        cls = OpenAIEmbedder if provider == "openai" else GeminiEmbedder
        key = _key(key_env, "OPENAI_API_KEY") if provider == "openai" else _key(key_env, "GEMINI_API_KEY", "GOOGLE_API_KEY")
        kw = {"api_key": key, "headers": settings.get("headers")}
        if settings.get("base_url"):
            kw["base_url"] = settings["base_url"]
        if settings.get("model"):
            kw["model"] = settings["model"]
        embedder = cls(**kw, **common)
        if not key and not settings.get("base_url"):
            raise EmbeddingError(f"no API key for the {provider} provider",
                                 hint=f"export {key_env or ('OPENAI_API_KEY' if provider == 'openai' else 'GEMINI_API_KEY')}=…")
    else:
        raise EmbeddingError(f"unknown embedding provider {provider!r}", hint="use none, auto, local, onnx, openai or gemini")
    if "batch_size" in settings:
        embedder.batch_size = max(1, int(settings["batch_size"]))
        limit = getattr(embedder, "max_batch_size", None)
        if limit:
            embedder.batch_size = min(embedder.batch_size, limit)
    return embedder


def gemini_api(settings: dict) -> str:
    """`native` (batchEmbedContents) or `openai` (Gemini's OpenAI-compatible endpoint). `api` decides;
    unset, a base_url in the OpenAI style (ending in /openai or /v1) means openai, anything else native."""
    if settings.get("api"):
        return settings["api"]
    path = urlsplit(settings.get("base_url") or "").path.rstrip("/")
    return "openai" if path.endswith(("/openai", "/v1")) else "native"


def fallback_settings(settings: dict) -> dict | None:
    """The settings the fallback provider is built from, or None when there is none.
    `[embeddings.fallback]` (a table) has its own settings and inherits nothing; `fallback = "name"`
    is shorthand for that provider with the primary's settings."""
    fb = settings.get("fallback", "none")
    if isinstance(fb, dict):
        if "provider" not in fb:
            raise EmbeddingError("[embeddings.fallback] has no provider",
                                 hint='set provider = "openai" (or local, onnx, gemini, none) in [embeddings.fallback]')
        return None if fb["provider"] == "none" else dict(fb)
    if fb == "none" or fb == settings.get("provider"):
        return None
    return {**{k: v for k, v in settings.items() if k != "fallback"}, "provider": fb}


def _key(key_env: str | None, *usual: str) -> str | None:
    """The API key: from the variable api_key_env names, when it is given (that one only: a key meant
    for one endpoint must never reach another), else from the provider's usual variables."""
    for name in (key_env,) if key_env else usual:
        if os.environ.get(name):
            return os.environ[name]
    return None


def _check_remote_settings(settings: dict, key_env: str | None) -> None:
    """Errors a user can fix in the config, found before any request: an api_key_env naming an unset
    variable, a base_url that is not an http(s) URL, dimensions that are not positive."""
    if key_env and not os.environ.get(key_env):
        raise EmbeddingError(f"[embeddings] api_key_env names {key_env}, which is not set",
                             hint=f"export {key_env}=… (or remove api_key_env for an endpoint that needs no key)")
    url = settings.get("base_url")
    if url:
        try:
            parts = urlsplit(url)
            parts.port  # raises ValueError on a bad port; urlsplit does on a broken IPv6 host
        except ValueError as e:
            raise EmbeddingError(f"[embeddings] base_url {url!r} is not a valid URL: {e}",
                                 hint='write it like "http://127.0.0.1:11434/v1"') from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise EmbeddingError(f"[embeddings] base_url {url!r} is not an http(s) URL",
                                 hint='write it like "http://127.0.0.1:11434/v1"')
    dims = settings.get("dimensions")
    if dims is not None and dims < 1:
        raise EmbeddingError(f"[embeddings] dimensions must be a positive number, not {dims}",
                             hint="leave it out to use the model's own")
