"""Shared fixtures: real git repositories in temp dirs, the CLI through click and as a process."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.org",
    "GIT_COMMITTER_NAME": "Test Author", "GIT_COMMITTER_EMAIL": "author@example.org",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory, monkeypatch):
    """No user config, no ambient workspace, a known git identity; HOME is a temp dir."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("ZMEM_WORKSPACE", raising=False)
    # provider "auto" looks for models in the cache and for an Ollama: none of the machine's
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")  # a port nothing listens on: refused at once
    for name in ("HF_ENDPOINT", "HF_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")


def git(cwd, *args, env=None, check=True) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    if check and proc.returncode:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout.strip()


def write(root: Path, rel: str, text: str) -> Path:
    path = Path(root) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def commit_all(root, message="update", date=None) -> str:
    env = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else None
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message, env=env)
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def ws(tmp_path) -> Path:
    """An initialised workspace (no hooks) with two daily logs, committed."""
    root = tmp_path / "ws"
    root.mkdir()
    res = run(["init", "--no-hooks", str(root)])
    assert res.exit_code == 0, res.output
    write(root, "memory/2025-11-24.md", "# 2025-11-24\n\n## Notes\n\n- Set up the gateway on the Mac Studio.\n"
          "- Peter prefers short answers on WhatsApp.\n")
    write(root, "memory/2025-11-27.md", "# 2025-11-27\n\n## Notas\n\n- O Peter está em Marrakech.\n\n## 笔记\n\n"
          "- 王伟下周去北京出差。\n")
    commit_all(root, "notes")
    return root


def run(args, input=None, cwd=None):
    """The CLI in-process (click's runner), stderr kept apart from stdout."""
    from zmem.cli import cli
    runner = CliRunner()
    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        return runner.invoke(cli, args, input=input, catch_exceptions=False, prog_name="zmem")
    finally:
        os.chdir(old)


def run_json(args) -> tuple[dict, str]:
    """A command that must succeed with --json: (its parsed stdout, its stderr)."""
    res = run(args)
    assert res.exit_code == 0, res.output + res.stderr
    return json.loads(res.stdout), res.stderr


def reflect_json(root, *extra) -> tuple[dict, str]:
    return run_json(["-C", str(root), "reflect", *extra, "--json"])


def get_text(root, citation) -> str:
    """`zmem get CITATION`'s output (the command must succeed)."""
    res = run(["-C", str(root), "get", citation])
    assert res.exit_code == 0, res.stderr
    return res.stdout


def sessions_config(extra: str = "") -> Path:
    """Session transcripts enabled in the user config (dir ~/.openclaw/agents/*/sessions, plus
    extra TOML lines); returns the main agent's sessions directory."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    sessions = Path(os.environ["HOME"]) / ".openclaw/agents/main/sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[sessions]\nenabled = true\ndir = "~/.openclaw/agents/*/sessions"\n{extra}')
    return sessions


def user_config(text: str) -> None:
    """The user's config.toml (under the test's own XDG_CONFIG_HOME)."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def server():
    """A loopback OpenAI-compatible embeddings server (helpers.embed_server)."""
    from helpers.embed_server import EmbeddingServer
    with EmbeddingServer() as s:
        yield s


def use_server(server, extra="") -> None:
    user_config(f'[embeddings]\nprovider = "openai"\nmodel = "fake-embed"\nbase_url = "{server.base_url}"\n'
                f'api_key_env = "ZMEM_TEST_KEY"\n{extra}')
    os.environ["ZMEM_TEST_KEY"] = "sk-test-123"


@pytest.fixture
def semantic_ws(ws, server):
    write(ws, "bank/world.md", "# World\n\n- The gateway lives on the Mac Studio in the office.\n\n"
          "- Ana drinks espresso every morning.\n")
    commit_all(ws)
    use_server(server)
    res = run(["-C", str(ws), "index", "--json"])
    assert res.exit_code == 0, res.output
    return ws


def recall_json(root, query, *extra) -> dict:
    res = run(["-C", str(root), "recall", query, "--json", *extra])
    assert res.exit_code == 0, res.output + res.stderr
    return json.loads(res.stdout)


def zmem_exe() -> str:
    """The installed console script next to this interpreter."""
    exe = Path(sys.executable).parent / "zmem"
    return str(exe) if exe.exists() else shutil.which("zmem")


def zmem_proc(*args, cwd=None, env=None, input=None) -> subprocess.CompletedProcess:
    return subprocess.run([zmem_exe(), *args], cwd=cwd, capture_output=True, text=True, input=input,
                          env={**os.environ, **(env or {})}, timeout=120)


def indexed_paths(root: Path) -> set[str]:
    """The files the index holds, read straight from its SQLite file."""
    conn = sqlite3.connect(Path(root) / ".zmem" / "index.sqlite")
    try:
        return {p for (p,) in conn.execute("SELECT path FROM files")}
    finally:
        conn.close()


def wait_for(predicate, timeout=30.0, interval=0.05) -> bool:
    """Poll until predicate() holds (background work: hooks, watchers), at most `timeout` seconds;
    instead of a fixed sleep, which is either too short on a busy machine or wastes time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


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


def roll_back_schema(conn, step: str, *, recorded: bool = False) -> None:
    """Make the index's schema record say `step` (a migrations.STEPS name) was the last step applied, as the
    zmem of then left it: user_version at the step's position and no _migrations (zmem recorded
    steps by number only until all of the steps up to fact_ids_with_entities existed), or with
    recorded=True _migrations naming the steps up to `step`. Only the record: the caller undoes
    what the later steps changed. The caller holds the write transaction."""
    from zmem import migrations
    names = [s.name for s in migrations.STEPS]
    position = names.index(step) + 1
    if recorded:
        conn.executemany("DELETE FROM _migrations WHERE name = ?", [(name,) for name in names[position:]])
    else:
        conn.execute("DROP TABLE IF EXISTS _migrations")
    conn.execute(f"PRAGMA user_version = {position}")


def classic_fts(conn) -> None:
    """Make the index's full-text tables as zmem made them before schema step contentless_delete_fts
    (without contentless_delete: a delete is given what was indexed), from the rows they index, for
    tests that turn an index back into an older one. The caller holds the write transaction."""
    from zmem import fts
    saved = fts.can_delete_by_rowid
    fts.can_delete_by_rowid = lambda: False
    try:
        fts.rebuild_tables(conn)
    finally:
        fts.can_delete_by_rowid = saved


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
