"""`provider = "auto"` (the default): the first of these that is there, else keyword recall only.

1. a model file or endpoint the config names: `model_path` (a .gguf: local, a directory: onnx), or
   `base_url` / `api_key_env` (openai; gemini when `api` is set or the URL is Google's). A key that is
   merely in the environment (OPENAI_API_KEY) is not enough: notes go to a cloud only when named.
2. a local Ollama with an embedding model (OLLAMA_HOST, default 127.0.0.1:11434; GET /api/tags),
   used through its OpenAI-compatible /v1/embeddings;
3. a model in zmem's models directory (`zmem model pull`, `zmem model import --format onnx`), when
   onnxruntime and tokenizers are installed;
4. none.

Cheap enough for every fresh recall: a refused loopback connect costs microseconds, a connect is
given 0.3 s and an answer 1 s at most, and Ollama's answer is remembered for 30 s in-process and in
the user's cache dir (a host that did not answer too), so a dead remote OLLAMA_HOST costs one
recall. An Ollama that accepts the connection but is too busy to answer keeps its last list."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

OLLAMA_DEFAULT = "127.0.0.1:11434"
CONNECT_TIMEOUT = 0.3  # seconds to reach OLLAMA_HOST (a refused loopback connect is immediate)
ANSWER_TIMEOUT = 1.0  # seconds for the answer once connected: Ollama on a busy machine can be slow
REMEMBER = 30.0  # seconds an Ollama answer (or a host that did not answer) is reused
STALE_OK = 86400.0  # an Ollama that is up but did not answer in time: its last list (this recent) stands
# the embedding models' families and name parts Ollama reports (a chat model is never picked)
_EMBED_FAMILIES = {"bert", "nomic-bert", "xlm-roberta", "jina-bert-v2", "new"}
_EMBED_NAMES = ("embed", "minilm", "bge-", "e5-", "gte-", "paraphrase-multilingual")
# preferred first when several are installed (then by name): multilingual ones lead
_PREFERENCE = ("bge-m3", "nomic-embed-text", "mxbai-embed-large", "snowflake-arctic-embed", "all-minilm")
_PREFIXES = {  # what the model cards say to put before queries and documents
    "nomic-embed-text": ("search_query: ", "search_document: "),
    "mxbai-embed-large": ("Represent this sentence for searching relevant passages: ", ""),
}
_seen: dict[str, tuple[float, list[str] | None]] = {}  # host -> (when, embedding models or None: no answer)


def ollama_host() -> str:
    """OLLAMA_HOST as Ollama reads it: host, host:port or a URL; 0.0.0.0 (listen everywhere) is local."""
    raw = os.environ.get("OLLAMA_HOST", "").strip() or OLLAMA_DEFAULT
    raw = raw.split("://", 1)[-1].rstrip("/")
    if raw.startswith("["):  # [::1]:11434
        host, _, port = raw.partition("]")
        host, port = host + "]", port.lstrip(":")
    else:
        host, _, port = raw.partition(":")
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    return f"{host}:{port or 11434}"


def _cache_file() -> Path:
    from zmem.workspace.config import user_cache_dir
    return user_cache_dir() / "ollama-detect.json"


def _remembered(host: str, within: float = REMEMBER) -> tuple[bool, list[str] | None]:
    """(whether an answer of host's from the last `within` seconds is known, its models)."""
    now = time.time()
    if host in _seen and now - _seen[host][0] < within:
        return True, _seen[host][1]
    try:
        data = json.loads(_cache_file().read_text(encoding="utf-8")).get(host)
        if isinstance(data, dict) and 0 <= now - float(data["at"]) < within:
            if within == REMEMBER:
                _seen[host] = (float(data["at"]), data.get("models"))
            return True, data.get("models")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass
    return False, None


def _remember(host: str, models: list[str] | None) -> None:
    now = time.time()
    _seen[host] = (now, models)
    path = _cache_file()
    try:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            data = data if isinstance(data, dict) else {}
        except (OSError, ValueError, RecursionError):
            data = {}
        data[host] = {"at": now, "models": models}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # an unwritable cache: detect again next time, nothing worse
        pass


def is_embedding_model(model: dict) -> bool:
    name = str(model.get("name") or model.get("model") or "").lower()
    details = model.get("details") if isinstance(model.get("details"), dict) else {}
    families = {str(f).lower() for f in (details.get("families") or []) + [details.get("family")] if f}
    return bool(families & _EMBED_FAMILIES) or any(part in name for part in _EMBED_NAMES)


def ollama_models(host: str) -> list[str] | None:
    """The embedding models Ollama at host has (sorted by preference), [] for none, None when
    nothing answers there. A refused connection is not remembered: it costs nothing to try again."""
    known, models = _remembered(host)
    if known:
        return models
    # _socket, not socket: on every fresh recall, socket's enums and the idna codec a str host pulls
    # in cost ~2.5 ms; a bytes host needs no codec
    import _socket
    name, _, port = host.rpartition(":")
    sock = None
    try:
        hostname = name.strip("[]")
        family, kind, proto, _, address = _socket.getaddrinfo(hostname.encode() if hostname.isascii() else hostname,
                                                              int(port), 0, _socket.SOCK_STREAM)[0]
        sock = _socket.socket(family, kind, proto)
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(address)
        sock.settimeout(ANSWER_TIMEOUT)
    except ConnectionRefusedError:
        if sock is not None:
            sock.close()
        return None
    except (OSError, ValueError):  # a host that does not answer: remembered, so the next recall does not wait
        if sock is not None:
            sock.close()
        _remember(host, None)
        return None
    try:  # HTTP/1.0 by hand: no http.client, no ssl import on the recall path
        sock.sendall(f"GET /api/tags HTTP/1.0\r\nHost: {host}\r\nUser-Agent: zmem\r\n\r\n".encode())
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
            if len(raw) > 4 << 20:
                break
        head, _, body = raw.partition(b"\r\n\r\n")
        listed = json.loads(body).get("models") if head.split(b" ", 2)[1:2] == [b"200"] else None
    except (OSError, ValueError, AttributeError, IndexError):
        listed = None
    finally:
        sock.close()
    if not isinstance(listed, list):
        # it listens but did not answer in time: a busy Ollama keeps its last list (else auto would
        # switch models, and re-embed everything, whenever the machine is loaded)
        known, models = _remembered(host, STALE_OK)
        if known and models:
            return models
        _remember(host, None)
        return None
    names = sorted({str(m.get("name") or m.get("model")) for m in listed if isinstance(m, dict) and is_embedding_model(m)},
                   key=_preference)
    _remember(host, names)
    return names


def _preference(name: str) -> tuple:
    base = name.split(":", 1)[0].rsplit("/", 1)[-1]
    return next((i for i, p in enumerate(_PREFERENCE) if base.startswith(p)), len(_PREFERENCE)), name


def onnx_installed() -> bool:
    from importlib.util import find_spec
    return all(find_spec(m) is not None for m in ("onnxruntime", "tokenizers", "numpy"))


def resolve(settings: dict) -> tuple[dict | None, str]:
    """(the settings of the provider auto picks, or None for keyword-only; why, in a sentence)."""
    path = settings.get("model_path")
    if path and Path(path).expanduser().exists():
        provider = "onnx" if Path(path).expanduser().is_dir() or str(path).endswith(".onnx") else "local"
        return {**settings, "provider": provider}, f"[embeddings] model_path {path} is configured"
    url = settings.get("base_url") or ""
    if url or settings.get("api_key_env"):
        gemini = settings.get("api") or "googleapis.com" in url
        return ({**settings, "provider": "gemini" if gemini else "openai"},
                f"an endpoint is configured ({url or 'api_key_env ' + settings['api_key_env']})")
    host = ollama_host()
    models = ollama_models(host)
    if models:
        base = models[0].split(":", 1)[0].rsplit("/", 1)[-1]
        query, document = next((v for k, v in _PREFIXES.items() if base.startswith(k)), ("", ""))
        chosen = {**{k: v for k, v in settings.items() if k in ("timeout", "batch_size", "give_up_after", "dimensions")},
                  "provider": "openai", "base_url": f"http://{host}/v1", "model": models[0],
                  "query_prefix": settings.get("query_prefix", query),
                  "document_prefix": settings.get("document_prefix", document)}
        return chosen, f"Ollama at {host} has the embedding model {models[0]}"
    from zmem.workspace.config import user_cache_dir
    model = None
    if (user_cache_dir() / "models").is_dir():  # else nothing to look at (and modelpull not to import)
        from zmem.embedders.modelpull import installed_embedding_model
        model = installed_embedding_model()
    if model and onnx_installed():
        return ({**{k: v for k, v in settings.items() if k in ("threads", "batch_size", "give_up_after")},
                 "provider": "onnx", "model_path": model["path"]},
                f"the model {model['name']} is installed in {user_cache_dir() / 'models'}")
    ollama = (f"Ollama at {host} has no embedding model (`ollama pull nomic-embed-text`)" if models == []
              else f"no Ollama at {host}")
    if not model:
        where = f"no model in {user_cache_dir() / 'models'} (`zmem model pull`)"
    else:
        from zmem.install import pip_install
        where = f"{model['name']} is installed but onnxruntime is not ({pip_install('semantic')})"
    return None, f"nothing found: no endpoint configured, {ollama}, {where}"
