"""More bad input: whatever a user can type or leave in a file gets a clear error (exit 1 with a
hint, or 2 for bad arguments) or a warning naming file and line, never an internal error (exit 3),
and the rest still works."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import recall_json, run, sessions_config, zmem_exe


def _msg(role, text, **extra):
    return json.dumps({"type": "message", **extra,
                       "message": {"role": role, "content": [{"type": "text", "text": text}]}}) + "\n"


def test_a_deeply_nested_transcript_line_is_skipped_with_a_warning_and_the_rest_is_indexed(ws):
    sessions = sessions_config()
    (sessions / "x.jsonl").write_text(_msg("user", "the okapi sleeps in the barn") + "[" * 100000 + "\n"
                                      + _msg("assistant", "noted about the okapi") + '{"a": ' * 50000 + "\n")
    # a first line longer than what the pending check reads ahead still makes the file due
    (sessions / "y.jsonl").write_text("[" * 200000 + "\n" + _msg("user", "an okapi in the second file"))
    res = run(["-C", str(ws), "index", "--sessions", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    assert "internal error" not in res.stderr
    warnings = json.loads(res.stdout)["warnings"]
    where = "~/.openclaw/agents/main/sessions/"
    assert {where + "x.jsonl:2: skipped: JSON nested too deeply", where + "x.jsonl:4: skipped: JSON nested too deeply",
            where + "y.jsonl:1: skipped: JSON nested too deeply"} <= set(warnings)
    got = recall_json(ws, "okapi", "--source", "sessions")
    assert {(h["path"][len(where):], h["start_line"]) for h in got["results"]} == {
        ("x.jsonl", 1), ("x.jsonl", 3), ("y.jsonl", 2)}
    assert not any("being indexed" in w for w in got["warnings"])  # nothing left pending
    # a final line without newline nested too deeply is not "complete JSON": it waits, no crash either
    with open(sessions / "x.jsonl", "a") as f:
        f.write("[" * 100000)
    os.utime(sessions / "x.jsonl", (1, 1))
    assert run(["-C", str(ws), "index", "--sessions"]).exit_code == 0
    got = recall_json(ws, "okapi", "--source", "sessions")
    assert len(got["results"]) == 3 and not any("being indexed" in w for w in got["warnings"])


def test_a_transcript_timestamp_no_clock_can_show_is_dropped_not_a_crash(ws):
    sessions = sessions_config()
    (sessions / "t.jsonl").write_text(_msg("user", "the tapir is huge", timestamp=1e300)
                                      + '{"role": "user", "content": "the tapir naps", "timestamp": NaN}\n')
    res = run(["-C", str(ws), "index", "--sessions"])
    assert res.exit_code == 0, res.output + res.stderr
    hits = recall_json(ws, "tapir", "--source", "sessions")["results"]
    assert len(hits) == 2


LONG = "a" * 300


def _err(res, code=1) -> str:
    assert res.exit_code == code, (res.exit_code, res.output, res.stderr)
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[-2].startswith("zmem: ") and lines[-1].startswith("hint: "), res.stderr
    return res.stderr


def test_get_and_blame_of_a_name_too_long_for_the_file_system_are_no_such_file(ws):
    for args in (["get", f"memory/{LONG}.md"], ["get", f"memory/{LONG}/x.md"], ["blame", f"memory/{LONG}.md#L1"],
                 ["get", f"memory/{LONG}.md@HEAD"], ["get", f"{ws}/memory/{LONG}.md"]):
        err = _err(run(["-C", str(ws), *args]))
        assert "no such memory file" in err or "does not exist at" in err, (args, err)
    assert "too long" in _err(run(["-C", str(ws), "get", f"memory/{LONG}.md"]))
    assert "workspace directory does not exist" in _err(run(["-C", str(ws / LONG), "status"]))


@pytest.mark.slow
def test_memory_get_and_memory_blame_over_mcp_with_a_name_too_long(ws):
    pytest.importorskip("mcp")
    from helpers.mcp_client import error, session

    async def go():
        async with session(ws) as s:
            return [await error(s, "memory_get", path=f"memory/{LONG}.md"),
                    await error(s, "memory_blame", target=f"memory/{LONG}.md#L1")]
    for text in asyncio.run(go()):
        assert "no such memory file" in text and "hint:" in text and "internal error" not in text, text


def test_get_of_an_empty_path_or_the_workspace_itself_says_so(ws):
    err = _err(run(["-C", str(ws), "get", ""]))
    assert "the path is empty" in err and "escapes" not in err
    for path in (".", "./", str(ws), "memory/.."):
        err = _err(run(["-C", str(ws), "get", path]))
        assert "is the workspace directory" in err or "escapes" in err and path == "memory/..", (path, err)
    assert "is the workspace directory" in _err(run(["-C", str(ws), "get", "."]))
    assert "escapes the workspace" in _err(run(["-C", str(ws), "get", "../x.md"]))


@pytest.mark.slow
def test_an_entity_name_too_long_for_a_file_name_gets_a_shortened_page(ws):
    from zmem.retain import MAX_SLUG_BYTES, entity_key, entity_slug
    long_b, long_c = "b" * 300, "b" * 299 + "c"
    for name in (long_b, long_c):
        res = run(["-C", str(ws), "append", f"hi from {name[-1]}", "--retain", "W", "--entity", name])
        assert res.exit_code == 0, res.output + res.stderr
    res = run(["-C", str(ws), "reflect", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    pages = sorted(p["path"] for p in json.loads(res.stdout)["pages"])
    assert pages == sorted(f"bank/entities/{entity_slug(n)}.md" for n in (long_b, long_c))
    assert len(set(pages)) == 2  # names that begin alike do not share a page
    for p in pages:
        assert len(p.split("/")[-1].encode()) <= MAX_SLUG_BYTES + 3 and (ws / p).is_file()
    # the same entity in another spelling gets the same page; the page is known as that entity's
    assert entity_slug("B" * 300).lower() == entity_slug(long_b).lower()
    assert entity_key(entity_slug("B" * 300)) == entity_key(entity_slug(long_b))
    got = json.loads(run(["-C", str(ws), "entity", long_b, "--json"]).stdout)
    assert got["entity"]["page"] == f"bank/entities/{entity_slug(long_b)}.md" and len(got["facts"]) == 1
    # later facts update that page instead of failing or making another
    assert run(["-C", str(ws), "append", "more", "--retain", "W", "--entity", "B" * 300]).exit_code == 0
    res = run(["-C", str(ws), "reflect", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    assert [(p["path"], p["created"]) for p in json.loads(res.stdout)["pages"]] == [
        (f"bank/entities/{entity_slug(long_b)}.md", False)]
    assert "more" in (ws / f"bank/entities/{entity_slug(long_b)}.md").read_text()
    assert run(["-C", str(ws), "reflect"]).exit_code == 0
    assert entity_slug("short name") == "short-name"  # short names are as they were


@pytest.mark.slow
def test_a_deleted_current_directory_is_an_error_with_a_hint(ws, tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    script = ("import os, subprocess, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
              "r = subprocess.run([sys.argv[2], *sys.argv[3:]], capture_output=True, text=True); "
              "print(r.returncode); print(r.stderr, end='')")
    for args in (["recall", "x"], ["status"], ["get", "memory/2025-11-24.md"], ["init"], ["-C", "rel", "status"]):
        gone.mkdir(exist_ok=True)
        out = subprocess.run([sys.executable, "-c", script, str(gone), zmem_exe(), *args],
                             capture_output=True, text=True, timeout=120).stdout
        code, *err = out.splitlines()
        assert code == "1", (args, out)
        assert err == ["zmem: the current directory no longer exists",
                       "hint: cd to an existing directory, or pass the workspace with -C DIR"], (args, out)
    gone.mkdir(exist_ok=True)
    out = subprocess.run([sys.executable, "-c", script, str(gone), zmem_exe(),
                          "-C", str(ws), "status"], capture_output=True, text=True, timeout=120).stdout
    assert out.splitlines()[0] == "0", out  # an absolute -C needs no current directory


def _user_config(text: str) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_config_errors_name_the_file_they_came_from(ws):
    user = _user_config("")
    toml = ws / "zmem.toml"
    cases = [
        (user, 'extra_paths = ["../outside"]\n', "`extra_paths` entry '../outside'"),
        (toml, 'extra_paths = ["/abs/notes"]\n', "`extra_paths` entry '/abs/notes'"),
        (toml, "[index]\nchunk_overlap = 500\n", "`index.chunk_overlap` (500) must be smaller"),
        (user, "[index]\nchunk_tokens = 64\n", "`index.chunk_overlap` (80) must be smaller"),
        (user, '[sessions]\nenabled = "yes"\n', "`sessions.enabled` must be true or false"),
        (user, "[sessions]\nenabled = true\n", "`sessions.dir` must be set when enabled"),
        (user, '[sessions]\nenabled = true\ndir = "x"\ndelta_bytes = -1\n', "`sessions.delta_bytes`"),
        (user, '[llm]\ntimeout = "x"\n', "`llm.timeout` has the wrong type (str)"),
        (toml, "[llm]\ntimeout = nan\n", "`llm.timeout` must be a number of seconds above 0"),
        (user, "[llm]\nheaders = 3\n", "`llm.headers` has the wrong type"),
        (toml, "[watch]\ndebounce = nan\n", "`watch.debounce` must be a finite number"),
        (user, "[recall]\nvector_weight = inf\n", "`recall.vector_weight` must be a finite number"),
        (toml, "[embeddings]\ntimeout = nan\n", "`embeddings.timeout` must be a finite number"),
    ]
    original = toml.read_text()
    for path, text, what in cases:
        user.write_text("")
        toml.write_text(original)
        path.write_text(text)
        for args in (["status"], ["recall", "Mac Studio"]):
            err = _err(run(["-C", str(ws), *args]))
            assert f"zmem: {path}: " in err and what in err, (path, text, args, err)
    user.write_text("")
    toml.write_text(original)
    assert recall_json(ws, "Mac Studio")["results"]


def test_a_config_file_that_is_a_directory_or_a_dangling_symlink_is_an_error_naming_it(ws, tmp_path):
    user = _user_config("")
    user.unlink()
    user.mkdir()
    err = _err(run(["-C", str(ws), "status"]))
    assert f"zmem: {user}: a directory" in err
    user.rmdir()
    user.symlink_to(tmp_path / "nowhere.toml")
    assert f"zmem: {user}: a symlink to a file that does not exist" in _err(run(["-C", str(ws), "status"]))
    user.unlink()
    (ws / "zmem.toml").unlink()
    (ws / "zmem.toml").mkdir()
    assert f"zmem: {ws / 'zmem.toml'}: a directory" in _err(run(["-C", str(ws), "status"]))
    (ws / "zmem.toml").rmdir()
    assert run(["-C", str(ws), "status"]).exit_code == 0  # no config at all: the defaults


def test_a_failing_hook_says_why_in_words_not_a_class_name(ws, tmp_path):
    state = ws / ".zmem"
    state.rename(tmp_path / "state")
    state.write_text("not a directory")
    res = run(["-C", str(ws), "hook", "post-commit"])
    assert res.exit_code == 0  # a hook never fails git
    err = res.stderr.strip().splitlines()
    assert "IndexUnusable" not in res.stderr and "Error" not in res.stderr, res.stderr
    assert err[0] == f"zmem: hook post-commit failed: {state} is not a directory; zmem keeps its index there", err
    assert err[1].startswith("hint: move it aside"), err


@pytest.mark.parametrize("args", [["watch", "--exit-after", "nan"], ["watch", "--debounce", "nan"],
                                  ["watch", "--commit-after", "inf"], ["watch", "--debounce", "inf"],
                                  ["mcp", "--query-timeout", "nan"], ["mcp", "--query-timeout", "inf"]])
@pytest.mark.slow
def test_nan_and_inf_seconds_are_usage_errors_naming_the_option(ws, args):
    proc = subprocess.run([zmem_exe(), "-C", str(ws), *args], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    first, hint = proc.stderr.strip().splitlines()
    assert f"'{args[1]}'" in first and "finite" in first and hint.startswith("hint: "), proc.stderr


@pytest.mark.parametrize("store", ["[" * 100000, "[1, 2]", "{broken"])
def test_a_damaged_trust_list_is_read_as_empty_and_trust_rewrites_it(ws, store):
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "zmem" / "trusted.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(store)
    (ws / "zmem.toml").write_text('[embeddings]\nprovider = "local"\nmodel_path = "m.gguf"\n')
    res = run(["-C", str(ws), "recall", "anything", "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    assert "zmem trust" in " ".join(json.loads(res.stdout)["warnings"])
    res = run(["-C", str(ws), "trust"])
    assert res.exit_code == 0, res.output + res.stderr
    assert list(json.loads(path.read_text())) == [str((ws / "zmem.toml").resolve())]
