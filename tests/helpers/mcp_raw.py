"""A real `python -m zmem -C <ws> mcp` process driven with raw JSON-RPC lines (no SDK client): for
what a client library would not send (lines that are not JSON, lone surrogates) and for measuring
exactly what the server writes."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}


class RawServer:
    def __init__(self, root, *args: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "zmem", "-C", str(root), "mcp", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=dict(os.environ))
        self.buffer = b""

    def send(self, line: str) -> None:
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def line(self, timeout: float = 30.0) -> bytes:
        """The next line the server writes, within timeout seconds (a missing answer fails here)."""
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            assert ready, "no answer: the client would wait for its timeout"
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            assert chunk, "the server exited"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def answer(self, timeout: float = 30.0) -> dict:
        return json.loads(self.line(timeout))

    def initialize(self) -> dict:
        self.send(json.dumps(INIT))
        got = self.answer()
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return got

    def close(self) -> int:
        self.proc.stdin.close()
        return self.proc.wait(30)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
