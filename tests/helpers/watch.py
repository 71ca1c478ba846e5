"""`zmem watch --json` as a background process whose JSON events a thread reads."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

from helpers.workspace import zmem_exe

TIMEOUT = 60.0  # generous: CI machines are noisy; tests poll, they never assert timings


class WatchProc:
    """`zmem watch --json …` running in the background; its JSON lines are read by a thread."""

    def __init__(self, root: Path, *args: str):
        self.proc = subprocess.Popen([zmem_exe(), "-C", str(root), "watch", "--json", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
        self.events: queue.Queue = queue.Queue()
        self.seen: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.events.put(json.loads(line))

    def wait_for(self, predicate, timeout: float = TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None and self.events.empty():
                    raise AssertionError(f"zmem watch exited {self.proc.returncode}: {self.proc.stderr.read()}")
                continue
            self.seen.append(event)
            if predicate(event):
                return event
        raise AssertionError(f"no matching event within {timeout} s; seen: {self.seen}")

    def wait_indexed(self, *paths: str, timeout: float = TIMEOUT) -> None:
        """Until every path was in some `indexed` event (earlier ones count)."""
        def done(_e) -> bool:
            seen = {p for e in self.seen if e["event"] == "indexed" for p in e["files"]}
            return set(paths) <= seen
        if not done(None):
            self.wait_for(done, timeout)

    def ready(self) -> dict:
        return self.wait_for(lambda e: e["event"] == "watching")

    def finish(self, timeout: float = TIMEOUT) -> tuple[int, str]:
        """Wait for the process to exit by itself: (exit code, stderr)."""
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code, self.proc.stderr.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()
