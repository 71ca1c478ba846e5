"""A real HTTP server on loopback that speaks Gemini's native embeddings API
(`POST /v1beta/models/{model}:batchEmbedContents`, key in `x-goog-api-key`), for tests.

It answers like Gemini does: at most 100 requests per batch, each naming `models/{model}`; a bad
key is 400 API_KEY_INVALID, a missing one 403; unknown models 404; `outputDimensionality`
sets the vector's size (at most NATIVE_DIMS). Vectors are NOT unit length (Gemini's reduced ones
are not either).
Vectors are embed_server's deterministic concept vectors, so synonyms are close. Faults are
scripted one per request: ("429", retry_after) | ("429-info", delay) (RetryInfo in the body, no
header) | ("500",) | ("503",) | ("slow", seconds) | ("dims", n).
"""
from __future__ import annotations

import json
import re
import threading
import time

from helpers.embed_server import JsonHandler, LoopbackServer, concept_vector

NATIVE_DIMS = 256
MODELS = {"gemini-embedding-001", "text-embedding-004"}
PATH = re.compile(r"^/v1beta/models/(?P<model>[^/:?]+):batchEmbedContents(?:\?.*)?$")


def gemini_vector(text: str, dims: int = NATIVE_DIMS) -> list[float]:
    """What the server returns before normalization: a scaled concept vector (length 3, not 1)."""
    return [3.0 * x for x in concept_vector(text, dims)]


class GeminiServer(LoopbackServer):
    def __init__(self, key: str | None = "g-test-key", dims: int = NATIVE_DIMS):
        self.key = key  # the only accepted x-goog-api-key (None: any, or none)
        self.dims = dims
        self.requests: list[dict] = []
        self.faults: list[tuple] = []
        self.lock = threading.Lock()
        server = self

        class Handler(JsonHandler):
            content_type = "application/json; charset=UTF-8"

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    return self._error(400, "Invalid JSON payload received.", "INVALID_ARGUMENT")
                with server.lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "headers": {k.lower(): v for k, v in self.headers.items()}})
                    fault = server.faults.pop(0) if server.faults else None
                m = PATH.match(self.path)
                if not m:
                    return self._error(404, f"path {self.path} not found", "NOT_FOUND")
                key = self.headers.get("x-goog-api-key")
                if server.key and not key:
                    return self._error(403, "Method doesn't allow unregistered callers (callers without established "
                                       "identity). Please use API Key or other form of API consumer identity "
                                       "to call this API.", "PERMISSION_DENIED")
                if server.key and key != server.key:
                    return self._error(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT",
                                       [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                         "reason": "API_KEY_INVALID", "domain": "googleapis.com"}])
                model = m.group("model")
                if model not in MODELS:
                    return self._error(404, f"models/{model} is not found for API version v1beta, or is not "
                                       "supported for embedContent.", "NOT_FOUND")
                if fault and fault[0] == "429":
                    return self._error(429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED",
                                       headers={"Retry-After": str(fault[1])})
                if fault and fault[0] == "429-info":
                    return self._error(429, "Quota exceeded.", "RESOURCE_EXHAUSTED",
                                       [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                         "retryDelay": f"{fault[1]}s"}])
                if fault and fault[0] in ("500", "503"):
                    return self._error(int(fault[0]), "An internal error has occurred.", "INTERNAL")
                if fault and fault[0] == "slow":
                    time.sleep(fault[1])
                reqs = body.get("requests")
                if not isinstance(reqs, list) or not reqs:
                    return self._error(400, "* BatchEmbedContentsRequest.requests: requests must not be empty",
                                       "INVALID_ARGUMENT")
                if len(reqs) > 100:
                    return self._error(400, "* BatchEmbedContentsRequest.requests: at most 100 requests can be "
                                       "in one batch", "INVALID_ARGUMENT")
                out = []
                for i, r in enumerate(reqs):
                    if r.get("model") != f"models/{model}":
                        return self._error(400, f"* BatchEmbedContentsRequest.requests[{i}].model: must match the "
                                           f"model in the URL", "INVALID_ARGUMENT")
                    dims = r.get("outputDimensionality") or server.dims
                    if not 1 <= dims <= server.dims:
                        return self._error(400, f"* BatchEmbedContentsRequest.requests[{i}].outputDimensionality: "
                                           f"must be between 1 and {server.dims}", "INVALID_ARGUMENT")
                    text = "".join(p.get("text", "") for p in r["content"]["parts"])
                    vec = gemini_vector(text, dims)
                    if fault and fault[0] == "dims":
                        vec = gemini_vector(text, fault[1])
                    out.append({"values": vec})
                self._send(200, {"embeddings": out})

            def _error(self, code, message, status, details=None, headers=None):
                err = {"code": code, "message": message, "status": status}
                if details:
                    err["details"] = details
                self._send(code, {"error": err}, headers)

        self.serve(Handler)

    @property
    def base_url(self) -> str:
        """The API root, as `base_url` is configured for the native provider."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def batch_calls(self) -> list[dict]:
        return [r for r in self.requests if ":batchEmbedContents" in r["path"]]

