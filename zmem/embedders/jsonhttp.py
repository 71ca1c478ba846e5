"""POST a JSON body to an HTTP API and read the JSON answer, on the standard library: what the
OpenAI-compatible and Gemini providers and `reflect --llm` need. No SDK: `import openai` alone cost
1.3–1.5 s of CPU per fresh recall. urllib brings what users expect of a client: proxies from the
environment (http_proxy, https_proxy, no_proxy) and verified TLS; nothing here is imported until a
request is made."""
from __future__ import annotations

import json


class HTTPStatusError(Exception):
    """The server answered 4xx/5xx. `message` is the server's own (from a JSON error body, or the
    start of a text one), `payload` the decoded body ({} when it was not JSON)."""

    def __init__(self, status: int, message: str, headers, payload):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.headers = headers
        self.payload = payload

    def retry_after(self) -> float | None:
        return retry_after(self.headers)


class Unreachable(Exception):
    """No answer: refused, unknown host, timed out, connection dropped."""


class TLSError(Exception):
    """The server's certificate could not be verified (retrying will not help)."""


class NotJSON(Exception):
    """A 2xx answer whose body is not JSON (an HTML login or error page, say)."""


def post_json(url: str, payload, *, headers: dict | None = None, timeout: float):
    """The decoded JSON answer of `POST url`; the exceptions above for everything else."""
    import http.client
    import urllib.error
    import urllib.request

    from zmem.version import __version__
    head = {"content-type": "application/json", "accept": "application/json", "user-agent": f"zmem/{__version__}",
            **(headers or {})}
    url = _credentials_to_header(url, head)
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers=head, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as e:
        raise _status_error(e) from None
    except urllib.error.URLError as e:
        if type(e.reason).__name__ == "SSLCertVerificationError":
            raise TLSError(str(e.reason)) from None
        raise Unreachable(_reason(e.reason)) from None
    except (OSError, http.client.HTTPException) as e:  # timeouts, resets, a dropped connection
        raise Unreachable(_reason(e)) from None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise NotJSON(describe_body(raw)) from None


def _credentials_to_header(url: str, head: dict) -> str:
    """http.client cannot connect to `user:password@host`: send them as basic auth, as browsers do,
    unless an Authorization header is already there."""
    from urllib.parse import unquote, urlsplit, urlunsplit
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    if not any(k.lower() == "authorization" for k in head):
        import base64
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
        head["authorization"] = "Basic " + base64.b64encode(pair).decode()
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query, parts.fragment))


def _reason(e) -> str:
    if isinstance(e, TimeoutError) or type(e).__name__ == "timeout":
        return "timed out"
    if isinstance(e, ConnectionRefusedError):
        return "connection refused"
    if type(e).__name__ == "gaierror":
        return f"unknown host ({e.strerror or e})"
    return str(e) or type(e).__name__


def _status_error(e) -> HTTPStatusError:
    try:
        raw = e.read() or b""
    except OSError:
        raw = b""
    try:
        payload = json.loads(raw) if raw else {}
    except (ValueError, RecursionError):
        payload = {}
    message = error_message(payload) or (describe_body(raw) if raw else "") or str(e.reason or "")
    return HTTPStatusError(e.code, message, e.headers, payload)


def error_message(payload) -> str:
    """The message of an error body, whichever common shape it has: {"error": {"message": …}}
    (OpenAI, Gemini, vLLM), {"error": "…"} (Ollama), {"message"|"detail": …}, or a list of those."""
    if isinstance(payload, list) and payload:
        payload = payload[0]
    if not isinstance(payload, dict):
        return ""
    err = payload.get("error")
    if isinstance(err, dict):
        err = err.get("message")
    for value in (err, payload.get("message"), payload.get("detail")):
        if isinstance(value, str) and value.strip():
            return short(value.strip())
    return ""


def describe_body(raw: bytes) -> str:
    """A body that is not JSON, in a few words: an HTML page by its title, text by its start."""
    import re
    text = raw[:4096].decode("utf-8", "replace")
    if re.search(r"<(!doctype\s+html|html|head|body)\b", text, re.I):
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
        return "an HTML page" + (f" ({short(' '.join(title.group(1).split()), 80)})" if title and title.group(1).strip() else "")
    text = " ".join(text.split())
    return short(text, 120) if text else "an empty body"


def retry_after(headers) -> float | None:
    """Seconds from a Retry-After header: a number of seconds or an HTTP date."""
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        import time
        from email.utils import parsedate_to_datetime
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def join_url(base_url: str, path: str) -> str:
    """`path` appended to base_url's path, keeping its query string (`?api-version=…`)."""
    from urllib.parse import urlsplit, urlunsplit
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/" + path, parts.query, ""))


def short(text: str, limit: int = 200) -> str:
    return text if len(text) < limit else text[:limit - 3] + "..."
