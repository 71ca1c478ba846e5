"""Driving real workspaces in tests: git in a temp repository, the CLI in-process (click's runner) and as a
process, user config files, and reading the index's SQLite file. Fixtures that use these are in
tests/conftest.py."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner


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


def run(args, input=None, cwd=None):
    """The CLI in-process (click's runner), stderr kept apart from stdout."""
    from zmem.cli.app import cli
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


def use_server(server, extra="") -> None:
    user_config(f'[embeddings]\nprovider = "openai"\nmodel = "fake-embed"\nbase_url = "{server.base_url}"\n'
                f'api_key_env = "ZMEM_TEST_KEY"\n{extra}')
    os.environ["ZMEM_TEST_KEY"] = "sk-test-123"


def index_notes(root: Path, server, notes: dict[str, str]) -> Path:
    """Write notes (path -> text), commit them and index them with the loopback server's vectors."""
    for rel, text in notes.items():
        write(root, rel, text)
    commit_all(root)
    use_server(server)
    res = run(["-C", str(root), "index", "--json"])
    assert res.exit_code == 0, res.output
    return root


def recall_json(root, query, *extra) -> dict:
    res = run(["-C", str(root), "recall", query, "--json", *extra])
    assert res.exit_code == 0, res.output + res.stderr
    return json.loads(res.stdout)


def zmem_exe() -> str:
    """The installed console script next to this interpreter."""
    exe = Path(sys.executable).parent / "zmem"
    return str(exe) if exe.exists() else shutil.which("zmem")


def zmem_python() -> str:
    """sys.executable in a `zmem` process (zmem_proc): the console script's interpreter (#!…/python3),
    which may spell this one otherwise."""
    shebang = Path(zmem_exe()).read_text(errors="replace").splitlines()[0]
    return shebang[2:].strip() if shebang.startswith("#!") and " " not in shebang.strip() else sys.executable


def install_hint(extra: str) -> str:
    """The command zmem.install.pip_install(extra) gives in a `zmem` process (zmem_proc)."""
    import shlex
    from zmem.install import pip_install
    return pip_install(extra).replace(shlex.quote(sys.executable), shlex.quote(zmem_python()), 1)


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


def roll_back_schema(conn, step: str, *, recorded: bool = False) -> None:
    """Make the index's schema record say `step` (a migrations.STEPS name) was the last step applied, as the
    zmem of then left it: user_version at the step's position and no _migrations (zmem recorded
    steps by number only until all of the steps up to fact_ids_with_entities existed), or with
    recorded=True _migrations naming the steps up to `step`. Only the record: the caller undoes
    what the later steps changed. The caller holds the write transaction."""
    from zmem.store import migrations
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
    from zmem.store import fts
    saved = fts.can_delete_by_rowid
    fts.can_delete_by_rowid = lambda: False
    try:
        fts.rebuild_tables(conn)
    finally:
        fts.can_delete_by_rowid = saved


def recall_proc(root, query, *extra) -> tuple[dict, str]:
    """`zmem recall QUERY --json` as a process (it must succeed): (its parsed stdout, its stderr)."""
    proc = zmem_proc("-C", str(root), "recall", query, "--json", *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout), proc.stderr


def still_works(root):
    """The `ws` fixture's notes are still found: bad input elsewhere loses nothing."""
    assert recall_json(root, "Mac Studio")["results"], "the good files must still be indexed"


def refused(proc: subprocess.CompletedProcess, message: str) -> None:
    """A zmem process refused with exit 1: `zmem: ...message...`, then a hint, no traceback."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("zmem: ") and message in lines[0], proc.stderr
    assert any(line.startswith("hint: ") for line in lines[1:]), proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


def user_error(res, code=1) -> str:
    """An in-process CLI result that is a user's error (exit `code`) ending in `zmem: ...` and `hint: ...`,
    never an internal error; returns its stderr."""
    assert res.exit_code == code, (res.exit_code, res.output, res.stderr)
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[-2].startswith("zmem: ") and lines[-1].startswith("hint: "), res.stderr
    return res.stderr


# A daily log with a Retain section: RETAIN.format(day="2025-11-25", facts="- W @Peter: Lives in Lisbon.")
RETAIN = "# {day}\n\n## Retain\n\n{facts}\n"


def today_log() -> str:
    """Today's daily log, where `zmem append` writes."""
    return f"memory/{dt.date.today().isoformat()}.md"
