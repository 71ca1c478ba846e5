"""The CLI end to end: init, recall, get, append, status, doctor, exit codes, help text."""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import pytest

from helpers.workspace import commit_all, git, recall_json, run, write, zmem_exe, zmem_proc
from zmem.cli.app import cli


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.parts and ".zmem" not in p.parts}


def test_init_creates_layout_and_is_idempotent(tmp_path):
    root = tmp_path / "new ws"
    res = run(["init", "--no-hooks", str(root)])
    assert res.exit_code == 0, res.output
    for rel in ("MEMORY.md", "bank/world.md", "bank/experience.md", "bank/opinions.md", "zmem.toml"):
        assert (root / rel).is_file(), rel
    assert (root / "memory").is_dir() and (root / "bank/entities").is_dir() and (root / ".git").is_dir()
    assert ".zmem/" in (root / ".gitignore").read_text()
    assert "chunk_tokens" in (root / "zmem.toml").read_text()
    before = _snapshot(root)
    res = run(["init", "--no-hooks", str(root)])
    assert res.exit_code == 0
    assert "created" not in res.stdout
    assert _snapshot(root) == before


@pytest.mark.slow
def test_init_commits_a_new_repository_as_zmem_and_leaves_an_existing_ones_files_to_the_user(tmp_path, monkeypatch):
    """A new memory starts committed, even where git has no identity (the `git commit` init used to
    suggest failed there); in a repository that was there (a project, an OpenClaw workspace) init
    commits nothing, and its next: line cds into the workspace and adds only what zmem wrote."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    for who in ("AUTHOR", "COMMITTER"):
        for what in ("NAME", "EMAIL"):
            monkeypatch.delenv(f"GIT_{who}_{what}")
    root = tmp_path / "memory"
    res = zmem_proc("init", str(root), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "log", "--format=%an <%ae> %s") == "zmem <zmem@localhost> zmem init: workspace layout"
    nxt = [ln for ln in res.stdout.splitlines() if ln.startswith("next: ")]
    assert nxt and nxt[0].startswith(f"next: cd {root}, then: ")
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    (project / "wip.txt").write_text("the user's own work\n")
    res = zmem_proc("init", "--no-hooks", str(project / "mem"), cwd=project)
    assert res.returncode == 0, res.stderr
    assert git(project, "rev-list", "--all") == ""
    nxt = [ln for ln in res.stdout.splitlines() if ln.startswith("next: ")][0]
    assert nxt.startswith(f"next: cd {project / 'mem'} && git add -- MEMORY.md ") and "wip.txt" not in nxt
    assert "-A" not in nxt.split(", then:")[0]


def test_init_never_overwrites_existing_files(tmp_path):
    root = tmp_path / "openclaw"
    write(root, "memory.md", "# my memory\n")
    write(root, "bank/world.md", "# mine\n")
    write(root, ".gitignore", "node_modules")
    run(["init", "--no-hooks", str(root)])
    assert (root / "bank/world.md").read_text() == "# mine\n"
    assert not (root / "MEMORY.md").exists() or os.path.samefile(root / "MEMORY.md", root / "memory.md")
    assert (root / ".gitignore").read_text() == "node_modules\n# zmem's derived index\n.zmem/\n"


def test_recall_json_shape_and_citations(ws):
    out = recall_json(ws, "gateway Mac Studio")
    assert set(out) >= {"query", "results", "warnings"}
    assert out["query"] == "gateway Mac Studio"
    hit = out["results"][0]
    assert set(hit) >= {"path", "start_line", "end_line", "score", "snippet", "day", "citation"}
    assert hit["path"] == "memory/2025-11-24.md" and hit["day"] == "2025-11-24"
    lines = (ws / hit["path"]).read_text().split("\n")
    assert hit["snippet"] == "\n".join(lines[hit["start_line"] - 1:hit["end_line"]])
    assert hit["citation"] == f"{hit['path']}#L{hit['start_line']}-L{hit['end_line']}"
    assert out["mode"] == "bm25" and out["warnings"] == []  # no provider configured: the default, not a warning


def test_better_keyword_matches_score_higher_and_no_threshold(ws):
    write(ws, "memory/2025-11-28.md", "# d\n\n- marmalade marmalade marmalade recipe from Ana.\n")
    write(ws, "memory/2025-11-29.md", "# d\n\n- a long note " + "filler words " * 200 + "marmalade once.\n")
    commit_all(ws)
    res = recall_json(ws, "marmalade recipe")["results"]
    assert [r["path"] for r in res] == ["memory/2025-11-28.md", "memory/2025-11-29.md"]
    assert res[0]["score"] > res[1]["score"] > 0


def test_snippet_takes_the_line_after_the_best_match_first():
    from zmem.query.search import make_snippet
    text = "\n".join(["Ana: the pottery class was fun", "Ben: nice, what about the pottery colors?",
                      "Ana: I picked them to make people smile.", "Ben: ok", "Ana: bye"])
    first, last, snippet = make_snippet(text, 10, "pottery colors", 85)
    assert (first, last) == (11, 12)  # the question and its answer, not the earlier match
    assert snippet == "Ben: nice, what about the pottery colors?\nAna: I picked them to make people smile."
    first, last, _ = make_snippet(text, 10, "bye", 200)  # the last line has no next line
    assert last == 14


def test_recall_filters_since_until_path_and_k(ws):
    write(ws, "bank/world.md", "# World\n\n- Peter lives in Lisbon.\n")
    commit_all(ws)
    assert {r["path"] for r in recall_json(ws, "Peter")["results"]} >= {"bank/world.md", "memory/2025-11-24.md"}
    assert [r["path"] for r in recall_json(ws, "Peter", "--path", "bank/**")["results"]] == ["bank/world.md"]
    assert {r["day"] for r in recall_json(ws, "Peter", "--since", "2025-11-25")["results"]} == {"2025-11-27"}
    assert {r["day"] for r in recall_json(ws, "Peter", "--until", "2025-11-25")["results"]} == {"2025-11-24"}
    assert len(recall_json(ws, "Peter", "--k", "1")["results"]) == 1
    res = run(["-C", str(ws), "recall", "Peter", "--since", "last tuesday"])
    assert res.exit_code == 1 and "hint:" in res.stderr


def test_recall_max_chars_caps_total_snippet_text(ws):
    for i in range(8):
        write(ws, f"memory/2025-10-{i + 10:02d}.md", f"# day {i}\n\n" + f"- budget note {i} " * 30 + "\n")
    commit_all(ws)
    full = recall_json(ws, "budget note", "--k", "8")
    capped = recall_json(ws, "budget note", "--k", "8", "--max-chars", "500")
    assert sum(len(r["snippet"]) for r in capped["results"]) <= 500
    assert len(capped["results"]) < len(full["results"])
    assert any("max-chars" in w for w in capped["warnings"])


def test_max_chars_keeps_short_hits_that_fit(ws):
    for i in range(4):
        write(ws, f"memory/2025-09-{i + 10:02d}.md", f"- common thing {i}\n")  # 17-character notes
    commit_all(ws)
    for budget, expected in ((20, 1), (40, 2), (79, 4)):
        got = recall_json(ws, "common thing", "--k", "8", "--max-chars", str(budget))["results"]
        assert len(got) == expected and sum(len(r["snippet"]) for r in got) <= budget, (budget, got)


def test_recall_formats(ws):
    for fmt in ("text", "table", "md"):
        res = run(["-C", str(ws), "recall", "gateway", "--format", fmt])
        assert res.exit_code == 0 and "memory/2025-11-24.md#L" in res.stdout, fmt
    res = run(["-C", str(ws), "recall", "nothing-matches-this"])
    assert res.exit_code == 0 and res.stdout == ""


def test_get_prints_exact_lines_and_json(ws):
    res = run(["-C", str(ws), "get", "memory/2025-11-24.md", "--from", "3", "--lines", "3"])
    assert res.stdout == "## Notes\n\n- Set up the gateway on the Mac Studio.\n"
    res = run(["-C", str(ws), "get", "memory/2025-11-24.md#L5-L6", "--json"])
    out = json.loads(res.stdout)
    assert out["text"] == "- Set up the gateway on the Mac Studio.\n- Peter prefers short answers on WhatsApp."
    assert (out["from"], out["end_line"], out["citation"]) == (5, 6, "memory/2025-11-24.md#L5-L6")
    for pasted in ("[memory/2025-11-24.md#L5-L6]", "`memory/2025-11-24.md#L5-L6`", '"memory/2025-11-24.md:5-6"'):
        res = run(["-C", str(ws), "get", pasted])  # as models and chat paste citations
        assert res.exit_code == 0 and res.stdout == out["text"] + "\n", (pasted, res.stderr)


def test_append_note_and_retain_fact_commit_and_are_recalled(ws):
    res = run(["-C", str(ws), "append", "Booked", "the", "dentist", "for", "Ana", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    today = dt.date.today().isoformat()
    assert out["path"] == f"memory/{today}.md" and out["committed"]
    assert git(ws, "log", "-1", "--format=%s") == f"zmem append: memory/{today}.md"
    assert git(ws, "status", "--porcelain") == ""
    res = run(["-C", str(ws), "append", "Prefers tea over coffee", "--retain", "o", "--entity", "Peter",
               "--entity", "The Castle", "--confidence", "0.8", "--json"])
    fact = json.loads(res.stdout)
    lines = (ws / fact["path"]).read_text().split("\n")
    assert lines[fact["line"] - 1] == "- O(c=0.8) @Peter @The-Castle: Prefers tea over coffee"
    assert "## Retain" in lines and lines.index("## Notes") < lines.index("## Retain")
    # a later plain note still goes to ## Notes, not into the Retain section
    note = json.loads(run(["-C", str(ws), "append", "Second note", "--json"]).stdout)
    lines = (ws / note["path"]).read_text().split("\n")
    assert lines[note["line"] - 1] == "- Second note" and note["line"] < lines.index("## Retain")
    hits = recall_json(ws, "dentist")["results"]
    assert hits and hits[0]["path"] == f"memory/{today}.md"


def test_append_rejects_bad_input_without_writing(ws):
    before = _snapshot(ws)
    for args in (["   "], ["x", "--confidence", "0.5"]):
        res = run(["-C", str(ws), "append", *args])
        assert res.exit_code == 1 and "hint:" in res.stderr and "Traceback" not in res.output, args
    for args in (["x", "--retain", "Q"], ["x", "--retain", "O", "--confidence", "1.7"]):  # usage, as --k 0 is
        res = run(["-C", str(ws), "append", *args])
        assert res.exit_code == 2 and "hint:" in res.stderr, args
    assert _snapshot(ws) == before


def test_append_no_commit_leaves_file_dirty_but_indexed(ws):
    res = run(["-C", str(ws), "append", "uncommitted zebra note", "--no-commit"])
    assert res.exit_code == 0
    assert git(ws, "status", "--porcelain")
    assert recall_json(ws, "zebra")["results"]


@pytest.mark.slow
def test_concurrent_appends_lose_nothing(ws):
    def one(i):
        return zmem_proc("-C", str(ws), "append", f"parallel note number {i}", "--json")
    with ThreadPoolExecutor(max_workers=6) as pool:
        procs = list(pool.map(one, range(12)))
    assert all(p.returncode == 0 for p in procs), [p.stderr for p in procs]
    text = (ws / f"memory/{dt.date.today().isoformat()}.md").read_text()
    for i in range(12):
        assert f"- parallel note number {i}\n" in text
    assert git(ws, "status", "--porcelain") == ""
    assert int(git(ws, "rev-list", "--count", "HEAD")) >= 12


def test_status_json(ws):
    res = run(["-C", str(ws), "status", "--json"])
    st = json.loads(res.stdout)
    assert set(st) >= {"head", "indexed_commit", "stale", "files", "chunks", "driver", "sqlite_vec"}
    assert st["head"] == git(ws, "rev-parse", "HEAD")


def test_doctor_runs_and_reports(ws):
    res = run(["-C", str(ws), "doctor"])
    assert "[ok  ] sqlite" in res.stdout and "workspace" in res.stdout
    assert res.exit_code == 0, res.stdout


def test_errors_have_hint_and_exit_codes(tmp_path):
    res = run(["-C", str(tmp_path / "missing"), "recall", "x"])
    assert res.exit_code == 1 and res.stderr.startswith("zmem: ") and "hint:" in res.stderr
    for args, where in ((["recall"], "zmem recall"), (["no-such-command"], "zmem"), (["--nope"], "zmem"),
                        (["recall", "--mode", "fuzzy", "x"], "zmem recall"), (["hooks", "nope"], "zmem hooks")):
        res = run(args)  # usage errors: the same two lines, exit 2
        assert res.exit_code == 2, args
        lines = res.stderr.splitlines()
        assert len(lines) == 2 and lines[0].startswith("zmem: ") and lines[1] == \
            f"hint: see `{where} --help` for the arguments and options", (args, res.stderr)


@pytest.mark.slow
def test_console_scripts_and_git_subcommand(ws):
    proc = zmem_proc("recall", "gateway", "--json", cwd=ws / "memory")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"][0]["path"] == "memory/2025-11-24.md"
    bindir = str(Path(zmem_exe()).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ["PATH"]}
    proc = subprocess.run(["git", "zmem", "recall", "gateway", "--json"], cwd=ws, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    proc = zmem_proc("recall", "x", cwd="/")
    assert proc.returncode == 1 and "hint:" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    proc = zmem_proc("demo", str(tmp_path / "demo"))
    assert proc.returncode == 0, proc.stderr
    assert "memory/2025-11-24.md#L" in proc.stdout
    assert "memory/2025-11-28.md#L" in proc.stdout  # the Chinese query
    proc = zmem_proc("demo", str(tmp_path / "demo"))  # again: reuses the workspace
    assert proc.returncode == 0, proc.stderr


def _commands(group: click.Group, prefix=()):
    for name, cmd in group.commands.items():
        yield (*prefix, name), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*prefix, name))


def test_every_command_and_option_has_help():
    for path, cmd in _commands(cli):
        assert cmd.help and cmd.help.strip(), path
        for p in cmd.params:
            if isinstance(p, click.Option):
                assert p.help, (path, p.name)
        res = run([*path, "--help"])
        assert res.exit_code == 0 and "Usage:" in res.stdout


@pytest.mark.slow
def test_append_after_an_entry_with_a_heading_line_keeps_both_intact(ws):
    first = json.loads(run(["-C", str(ws), "append", "Plan:\n## Steps\n- buy milk", "--json"]).stdout)
    second = json.loads(run(["-C", str(ws), "append", "next note", "--json"]).stdout)
    fact = json.loads(run(["-C", str(ws), "append", "Ana likes tea", "--retain", "W", "--json"]).stdout)
    third = json.loads(run(["-C", str(ws), "append", "third note", "--json"]).stdout)
    text = (ws / first["path"]).read_text()
    assert "- Plan:\n  ## Steps\n  - buy milk\n- next note\n- third note\n" in text
    lines = text.split("\n")
    assert lines[second["line"] - 1] == "- next note" and lines[third["line"] - 1] == "- third note"
    assert fact["text"] == "- W: Ana likes tea" and lines.index("## Notes") < lines.index("## Retain")
    assert lines[lines.index("## Retain") + 2] == "- W: Ana likes tea"


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


@pytest.mark.parametrize("args, says", [
    (["recall", "x", "--k", "abc"], "'--k': 'abc' is not a valid integer."),
    (["recall", "x", "--k", "1.5"], "'--k': '1.5' is not a valid integer."),
    (["recall", "x", "--k", "0"], "'--k': 0 is not between 1 and 1000."),
    (["recall", "x", "--max-chars", "0"], "'--max-chars': 0 is less than 1."),
    (["facts", "--limit", "-3"], "'--limit': -3 is less than 1."),
])
def test_a_bad_count_is_a_usage_error_saying_what_is_wrong(ws, args, says):
    result = run(["-C", str(ws), *args])
    assert result.exit_code == 2
    first, hint = result.output.strip().splitlines()[-2:]
    assert first.endswith(says) and "range" not in first and hint.startswith("hint: "), result.output
    assert "INTEGER RANGE" not in run(["-C", str(ws), args[0], "--help"]).output


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


@pytest.mark.slow
def test_arguments_that_are_not_utf8_are_a_usage_error_and_write_nothing(ws):
    from helpers.workspace import zmem_proc
    today = ws / "memory" / f"{dt.date.today().isoformat()}.md"
    for args in (["recall", "x", "--path", b"\xff".decode("utf-8", "surrogateescape")],
                 ["append", b"caf\xe9".decode("utf-8", "surrogateescape")]):
        proc = zmem_proc("-C", str(ws), *args)
        assert proc.returncode == 2 and proc.stderr.startswith("zmem: an argument is not valid UTF-8"), proc.stderr
    assert not today.exists()


def test_text_that_starts_with_a_minus_sign_gets_a_hint_to_put_double_dash_before_it(ws):
    res = zmem_proc("-C", str(ws), "append", "-5 degrees at dawn")
    assert res.returncode == 2
    assert res.stderr.splitlines() == ["zmem: No such option '-5'.",
                                       "hint: put `--` before text that starts with `-`: zmem append -- '-5 degrees at dawn'"]
    assert zmem_proc("-C", str(ws), "append", "--", "-5 degrees at dawn").returncode == 0
    res = zmem_proc("-C", str(ws), "append", "--colour", "x")  # an option that is not there: --help, as before
    assert res.returncode == 2 and res.stderr.splitlines()[1] == "hint: see `zmem append --help` for the arguments and options"
