"""A real HTTP server on loopback that imitates the Hugging Face Hub's file endpoints, for tests of
`zmem model pull`, and a fake Ollama for `provider = "auto"`.

Hub: `HEAD|GET /{repo}/resolve/{revision}/{path}` answers a small file with 200, its git blob id as
ETag and X-Repo-Commit; an LFS file (model.onnx, *.safetensors) with a 302 to `/lfs/{sha256}` carrying
X-Linked-Etag (its sha256), X-Linked-Size and X-Repo-Commit, as huggingface.co does. `/lfs/...`
honours Range (206). Scripted: an unknown file or revision is 404, a token can be required (401),
a renamed repository answers 307 to its new name, and a file can be cut off mid-way once (the
connection closes after half the bytes) so the client must resume."""
from __future__ import annotations

import hashlib
import json
import re
from http.server import BaseHTTPRequestHandler

from helpers.embed_server import JsonHandler, LoopbackServer, concept_vector

LFS_SUFFIXES = (".onnx", ".safetensors")


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub(LoopbackServer):
    def __init__(self):
        self.repos: dict[tuple[str, str], dict[str, bytes]] = {}  # (repo, commit) -> {path: bytes}
        self.renamed: dict[str, str] = {}  # old repo name -> new
        self.token: str | None = None  # required as `Authorization: Bearer …` on resolve when set
        self.cut_once: set[str] = set()  # LFS sha256s whose next GET stops half-way
        self.wrong_sha: set[str] = set()  # paths whose X-Linked-Etag / ETag lies (a corrupt mirror)
        self.requests: list[tuple[str, str, dict]] = []  # (method, path, headers)
        self.commit: str | None = None  # X-Repo-Commit to claim instead of the requested revision
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self._answer(body=False)

            def do_GET(self):
                self._answer(body=True)

            def _answer(self, body: bool):
                server.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
                lfs = re.fullmatch(r"/lfs/([0-9a-f]{64})", self.path)
                if lfs:
                    return self._lfs(lfs.group(1), body)
                m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", self.path)
                if not m:
                    return self._plain(404, b"not found", body)
                repo, revision, path = m.groups()
                if repo in server.renamed:
                    return self._plain(307, b"", body, {"Location": f"/{server.renamed[repo]}/resolve/{revision}/{path}"})
                if server.token and self.headers.get("Authorization") != f"Bearer {server.token}":
                    return self._plain(401, b"Invalid credentials", body, {"X-Error-Code": "RepoNotFound"})
                files = server.repos.get((repo, revision))
                if files is None or path not in files:
                    return self._plain(404, b"Entry not found", body, {"X-Error-Code": "EntryNotFound"})
                data = files[path]
                sha = hashlib.sha256(data).hexdigest()
                lie = "0" * 64 if path in server.wrong_sha else None
                head = {"X-Repo-Commit": server.commit or revision}
                if path.endswith(LFS_SUFFIXES):
                    server.blobs[sha] = data
                    head.update({"Location": f"{server.url}/lfs/{sha}",  # absolute, as the Hub's storage host is "X-Linked-Etag": f'"{lie or sha}"',
                                 "X-Linked-Size": str(len(data)), "ETag": f'"{lie or sha}"'})
                    return self._plain(302, b"", body, head)
                head["ETag"] = f'"{(lie or git_blob_id(data))[:40]}"'
                return self._plain(200, data, body, head)

            def _lfs(self, sha: str, body: bool):
                data = server.blobs.get(sha)
                if data is None:
                    return self._plain(404, b"no such object", body)
                start = 0
                rng = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
                if rng:
                    start = int(rng.group(1))
                    if start >= len(data):
                        return self._plain(416, b"", body, {"Content-Range": f"bytes */{len(data)}"})
                part = data[start:]
                headers = {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"} if rng else {}
                self.send_response(206 if rng else 200)
                self.send_header("Content-Length", str(len(part)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if not body:
                    return
                if sha in server.cut_once:  # half the bytes, then the connection drops
                    server.cut_once.discard(sha)
                    self.wfile.write(part[:len(part) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(part)

            def _plain(self, code: int, data: bytes, body: bool, headers: dict | None = None):
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if body:
                    self.wfile.write(data)

        self.blobs: dict[str, bytes] = {}
        self.serve(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def add_repo(self, repo: str, revision: str, files: dict[str, bytes]) -> None:
        self.repos[(repo, revision)] = dict(files)

    def serve_catalog(self, monkeypatch, name: str, files: dict[str, bytes]):
        """Serve files as catalog model name's repository at its pinned revision, with the catalog's
        checksums replaced by these files' (the real entry otherwise: repository, revision, paths)."""
        import dataclasses
        from zmem.embedders import modelpull
        entry = modelpull.catalog_entry(name)
        stand_in = dataclasses.replace(entry, files=tuple(
            (remote, local, hashlib.sha256(files[remote]).hexdigest()) for remote, local, _ in entry.files))
        monkeypatch.setattr(modelpull, "CATALOG", tuple(stand_in if e is entry else e for e in modelpull.CATALOG))
        self.add_repo(entry.repo, entry.revision, files)
        return entry
    def gets(self, prefix: str = "/lfs/") -> list[dict]:
        """The GET requests' headers to paths starting with prefix."""
        return [h for method, path, h in self.requests if method == "GET" and path.startswith(prefix)]


class FakeOllama(LoopbackServer):
    """Ollama's `/api/tags` (the installed models) and its OpenAI-compatible `/v1/embeddings`."""

    def __init__(self, models: list[dict]):
        self.models = models  # [{"name": "nomic-embed-text:latest", "details": {"family": "nomic-bert"}}]
        self.requests: list[str] = []
        server = self

        class Handler(JsonHandler):
            def do_GET(self):
                server.requests.append(self.path)
                if self.path == "/api/tags":
                    return self._send(200, {"models": server.models})
                return self._send(404, {"error": "not found"})

            def do_POST(self):
                server.requests.append(self.path)
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": "not found"})
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                return self._send(200, {"object": "list", "model": body.get("model"), "data": [
                    {"object": "embedding", "index": i, "embedding": concept_vector(t)} for i, t in enumerate(texts)]})

        self.serve(Handler)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.httpd.server_address[1]}"
