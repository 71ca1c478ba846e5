"""Shared fixtures: real git repositories in temp dirs, a loopback embeddings server, `zmem watch`
processes, a user to whom chmod 000 means no. Plain helpers are in tests/helpers (workspace.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

pytest.register_assert_rewrite("helpers")  # their asserts explain a failure like a test's own

from helpers.workspace import commit_all, run, use_server, write, zmem_exe  # noqa: E402

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.org",
    "GIT_COMMITTER_NAME": "Test Author", "GIT_COMMITTER_EMAIL": "author@example.org",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _isolate(home: Path, setenv, delenv) -> None:
    """No user config, no ambient workspace, a known git identity; HOME is `home`."""
    setenv("HOME", str(home))
    setenv("XDG_CONFIG_HOME", str(home / ".config"))
    delenv("ZMEM_WORKSPACE")
    # provider "auto" looks for models in the cache and for an Ollama: none of the machine's
    delenv("XDG_CACHE_HOME")
    setenv("OLLAMA_HOST", "127.0.0.1:9")  # a port nothing listens on: refused at once
    # no reading command starts a watcher (zmem.index.autowatch): none is left behind, none serves a test
    # unexpectedly; the tests of that feature turn it on
    setenv("ZMEM_WATCH_AUTO", "0")
    for name in ("HF_ENDPOINT", "HF_TOKEN", "HF_HUB_OFFLINE"):
        delenv(name)
    for k, v in GIT_ENV.items():
        setenv(k, v)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")


def pytest_configure(config):
    """The same isolation for the whole session, before any fixture runs: a module- or session-scoped
    fixture (a big workspace made once) runs before the autouse one below, and on a machine without a
    global git identity its commits failed; with the user's HOME it also read the real config.toml."""
    home = Path(tempfile.mkdtemp(prefix="zmem-tests-home-"))
    config._zmem_session_home = home
    _isolate(home, os.environ.__setitem__, lambda name: os.environ.pop(name, None))


def pytest_unconfigure(config):
    home = getattr(config, "_zmem_session_home", None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory, monkeypatch):
    """Each test its own HOME (and the session's isolation, restored after it)."""
    _isolate(tmp_path_factory.mktemp("home"), monkeypatch.setenv,
             lambda name: monkeypatch.delenv(name, raising=False))


@pytest.fixture
def ws(tmp_path) -> Path:
    """An initialised workspace (no hooks) with two daily logs, committed."""
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)  # so the notes' commit is the first
    res = run(["init", "--no-hooks", str(root)])
    assert res.exit_code == 0, res.output
    write(root, "memory/2025-11-24.md", "# 2025-11-24\n\n## Notes\n\n- Set up the gateway on the Mac Studio.\n"
          "- Peter prefers short answers on WhatsApp.\n")
    write(root, "memory/2025-11-27.md", "# 2025-11-27\n\n## Notas\n\n- O Peter está em Marrakech.\n\n## 笔记\n\n"
          "- 王伟下周去北京出差。\n")
    commit_all(root, "notes")
    return root


@pytest.fixture
def server():
    """A loopback OpenAI-compatible embeddings server (helpers.embed_server)."""
    from helpers.embed_server import EmbeddingServer
    with EmbeddingServer() as s:
        yield s


@pytest.fixture
def semantic_ws(ws, server):
    write(ws, "bank/world.md", "# World\n\n- The gateway lives on the Mac Studio in the office.\n\n"
          "- Ana drinks espresso every morning.\n")
    commit_all(ws)
    use_server(server)
    res = run(["-C", str(ws), "index", "--json"])
    assert res.exit_code == 0, res.output
    return ws


@pytest.fixture
def watch():
    """Start `zmem watch` processes (helpers.watch.WatchProc); all are stopped after the test."""
    from helpers.watch import WatchProc
    started: list = []

    def start(root, *args):
        w = WatchProc(root, *args)
        started.append(w)
        return w
    yield start
    for w in started:
        w.stop()


# A workspace whose permission bits bind (unreadable notes, read-only indexes). root reads a chmod 000
# file anyway: as root, the workspace belongs to `nobody` and every zmem and git command runs as
# nobody (setpriv), so the permission denial is the kernel's.

def _as_user() -> list[str] | None:
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        return None
    try:
        import pwd
        pwd.getpwnam("nobody")
    except KeyError:
        return None
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@pytest.fixture
def unprivileged(tmp_path):
    """(workspace root, run(*argv) as a user to whom chmod 000 means no)."""
    prefix = _as_user()
    if prefix is None:
        pytest.skip("running as root without setpriv and a `nobody` user")
    # /tmp itself, not pytest's tmp_path: its parents are closed to other users
    top = Path(tempfile.mkdtemp(prefix="zmem-unreadable-"))
    os.chmod(top, 0o755)
    home = top / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    root = top / "ws"

    def as_user(*argv, check=True) -> subprocess.CompletedProcess:
        proc = subprocess.run([*prefix, *argv], cwd=top, capture_output=True, text=True, env=env, timeout=120)
        if check and proc.returncode:
            raise AssertionError(f"{argv} failed: {proc.stderr}")
        return proc
    if prefix:
        shutil.chown(top, "nobody")
        shutil.chown(home, "nobody")
        shutil.chown(home / ".gitconfig", "nobody")
    as_user(zmem_exe(), "init", "--no-hooks", str(root))
    yield root, as_user
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="session")
def tiny_onnx(tmp_path_factory) -> Path:
    """The tiny generated BERT as an onnx model directory (`zmem model import`'s converter), made once
    per run; a test module using it skips itself first where onnx, onnxruntime or tokenizers is missing."""
    from helpers.tiny_bert import tiny_onnx_model
    return tiny_onnx_model(tmp_path_factory.mktemp("tiny"))
