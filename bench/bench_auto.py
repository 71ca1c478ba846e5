"""What `provider = "auto"` costs a recall: its detection (embedders/auto.py resolve), in-process.

    python bench/bench_auto.py [--runs 51]

Cases: nothing there (Ollama's port refused, no models dir), an Ollama on loopback answering
/api/tags (detected afresh each time: the in-process and file caches cleared), and that answer
reused from the cache file (what the next fresh process within 30 s does). Prints median (min–max)
in microseconds and the load average. HOME and XDG_CACHE_HOME point at a temporary directory.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Tags(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"models": [{"name": "nomic-embed-text:latest", "details": {"family": "nomic-bert"}},
                                      {"name": "llama3.2:3b", "details": {"family": "llama"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def timed(fn, runs: int, before=None) -> list[float]:
    out = []
    for _ in range(runs):
        if before:
            before()
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e6)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=51)
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="bench-auto-")
    os.environ.update({"HOME": home, "XDG_CACHE_HOME": os.path.join(home, ".cache")})
    from zmem.embedders import auto
    server = ThreadingHTTPServer(("127.0.0.1", 0), Tags)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cache = os.path.join(home, ".cache", "zmem", "ollama-detect.json")

    def forget():
        auto._seen.clear()
        if os.path.exists(cache):
            os.remove(cache)

    print(f"load: {open('/proc/loadavg').read().split()[0]}; µs, median (min–max) of {args.runs}")
    os.environ["OLLAMA_HOST"] = "127.0.0.1:9"
    cases = [("nothing there (refused connect)", timed(lambda: auto.resolve({}), args.runs, forget))]
    os.environ["OLLAMA_HOST"] = f"127.0.0.1:{server.server_address[1]}"
    cases.append(("Ollama answers /api/tags (fresh)", timed(lambda: auto.resolve({}), args.runs, forget)))
    auto.resolve({})
    cases.append(("Ollama, answer from the cache file", timed(lambda: auto.resolve({}), args.runs, auto._seen.clear)))
    for name, values in cases:
        print(f"{name:36} {statistics.median(values):8.0f} ({min(values):.0f}–{max(values):.0f})")
    server.shutdown()


if __name__ == "__main__":
    main()
