"""A real HTTP server on loopback that speaks the OpenAI embeddings API, for tests.

Vectors are deterministic "concept" embeddings: each word maps to a concept (synonyms share one),
hashed into DIMS dimensions, so "machine" and "host" are close while sharing no keyword. Faults
can be scripted: 429 with Retry-After, 500s, any status with Retry-After, HTML pages instead of JSON, slow answers (timeouts), hanging, wrong dimensions,
dying, and refusing connections (close() stops listening on the same port).
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIMS = 64
SYNONYMS = {
    "machine": "host", "computer": "host", "box": "host", "server": "host", "host": "host", "studio": "host",
    "mac": "host",
    "gateway": "gateway", "relay": "gateway", "proxy": "gateway",
    "runs": "run", "running": "run", "run": "run", "hosts": "run",
    "coffee": "drink", "tea": "drink", "espresso": "drink",
    "trip": "travel", "travel": "travel", "flight": "travel", "journey": "travel",
    "sibling": "sister",
}


def concept_vector(text: str, dims: int = DIMS) -> list[float]:
    v = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        concept = SYNONYMS.get(word, word)
        h = int(hashlib.sha1(concept.encode()).hexdigest(), 16)
        v[h % dims] += 1.0 if (h >> 8) % 2 else -1.0
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


class JsonHandler(BaseHTTPRequestHandler):
    """Answers with JSON; quiet; a client that hung up is not an error."""
    content_type = "application/json"

    def log_message(self, *args):  # keep test output clean
        pass

    def _send(self, code, payload, headers=None):
        self._send_raw(code, json.dumps(payload).encode(), self.content_type, headers)

    def _send_raw(self, code, raw: bytes, content_type: str, headers=None):
        try:
            self.send_response(code)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(raw)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (a free port) answering from a thread while in a `with` block."""

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        # shutdown() waits for the loop to look up: 0.5 s by default, at the end of every test with a server
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        """Stop listening: from now on a connection to this port is refused."""
        if not getattr(self, "closed", False):
            self.closed = True
            self.httpd.shutdown()
            self.httpd.server_close()


class EmbeddingServer(LoopbackServer):
    def __init__(self, dims: int = DIMS):
        self.dims = dims
        self.requests: list[dict] = []
        # consumed one per request: ("429", retry_after) | ("500",) | ("slow", s) | ("hang",) | ("dims", n)
        # | ("status", code, retry_after or None) | ("html", code): a web page (a proxy's or a login's)
        self.faults: list[tuple] = []
        self.always: tuple | None = None  # a fault for every request (after the scripted ones)
        self.released = threading.Event()  # ends every hang (set when the server closes)
        self.die_after: int | None = None  # stop answering (close connections) after this many requests
        self.require_key: str | None = None  # answer 401 to any other bearer token
        self.lock = threading.Lock()
        server = self

        class Handler(JsonHandler):
            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append({"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()}})
                    n = len(server.requests)
                    fault = server.faults.pop(0) if server.faults else server.always
                    dead = server.die_after is not None and n > server.die_after
                if dead:
                    self.close_connection = True
                    self.connection.close()
                    return
                if server.require_key and self.headers.get("authorization") != f"Bearer {server.require_key}":
                    return self._send(401, {"error": {"message": "invalid api key"}})
                if not self.path.partition("?")[0].endswith("/embeddings"):
                    return self._send(404, {"error": {"message": "not found"}})
                if fault and fault[0] == "429":
                    return self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": str(fault[1])})
                if fault and fault[0] == "500":
                    return self._send(500, {"error": {"message": "boom"}})
                if fault and fault[0] == "status":
                    return self._send(fault[1], {"error": {"message": f"status {fault[1]} as scripted"}},
                                      {"Retry-After": str(fault[2])} if fault[2] is not None else None)
                if fault and fault[0] == "html":
                    return self._send_raw(fault[1], b"<!DOCTYPE html><html><head><title>Sign in - Corp Proxy</title>"
                                          b"</head><body>Please sign in</body></html>", "text/html")
                if fault and fault[0] == "slow":
                    time.sleep(fault[1])
                if fault and fault[0] == "hang":  # accepts the request and never answers
                    server.released.wait()
                    return
                dims = fault[1] if fault and fault[0] == "dims" else server.dims
                inputs = body.get("input", [])
                inputs = [inputs] if isinstance(inputs, str) else inputs
                data = [{"object": "embedding", "index": i, "embedding": concept_vector(t, dims)}
                        for i, t in enumerate(inputs)]
                self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                                 "usage": {"prompt_tokens": 0, "total_tokens": 0}})

        self.serve(Handler)

    def close(self) -> None:
        self.released.set()
        super().close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def embedding_calls(self) -> list[dict]:
        return [r for r in self.requests if r["path"].partition("?")[0].endswith("/embeddings")]

