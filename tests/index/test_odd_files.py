"""Bad input gets a clear answer and loses nothing: odd files are indexed as well as they can be
or skipped with a warning naming the file (and line); everything else is still indexed."""
from __future__ import annotations

import datetime as dt
import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.workspace import commit_all, git, recall_json, run, write


def index_warnings(root) -> list[str]:
    res = run(["-C", str(root), "index", "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["warnings"]


def still_works(root):
    assert recall_json(root, "Mac Studio")["results"], "the good files must still be indexed"


def test_invalid_utf8_is_indexed_with_a_warning_naming_file_and_line(ws):
    (ws / "memory/2025-12-01.md").write_bytes(b"# t\n\n- fine line about herons\n- broken \xff\xfe bytes\n- after\n")
    warnings = index_warnings(ws)
    assert any(w.startswith("memory/2025-12-01.md:4:") and "UTF-8" in w for w in warnings)
    assert recall_json(ws, "herons")["results"]
    still_works(ws)


def test_binary_file_named_md_is_skipped_with_a_warning(ws):
    (ws / "memory/2025-12-02.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(2000))
    warnings = index_warnings(ws)
    assert any(w.startswith("memory/2025-12-02.md") and "binary" in w for w in warnings)
    still_works(ws)
    res = run(["-C", str(ws), "doctor"])
    assert "memory/2025-12-02.md" in res.stdout


@pytest.mark.slow
def test_a_20_mb_note_is_indexed(ws):
    line = "- a long log line about routine operations and nothing in particular\n"
    body = line * (20 * 1024 * 1024 // len(line))
    (ws / "memory/2025-12-03.md").write_text("# big\n\n" + body + "- the needle is a cassowary\n")
    t = time.monotonic()
    assert index_warnings(ws) == []
    elapsed = time.monotonic() - t
    hit = recall_json(ws, "cassowary")["results"][0]
    assert hit["path"] == "memory/2025-12-03.md" and "cassowary" in hit["snippet"]
    assert elapsed < 120
    still_works(ws)


def test_one_very_long_line_does_not_crowd_out_other_hits(ws):
    """A 5,000-word line is cut into many chunks that share one citation; recall still returns k
    distinct hits, the other matching notes included."""
    words = " ".join(f"photo backup server word{i}" for i in range(1250))
    write(ws, "memory/2025-11-20.md", "# 2025-11-20\n\n- The photo backup server is the old NAS.\n")
    write(ws, "memory/2025-11-21.md", f"# 2025-11-21\n\n{words}\n")
    write(ws, "memory/2025-11-22.md", "# 2025-11-22\n\n- A server for photos: backup nightly.\n")
    commit_all(ws)
    hits = recall_json(ws, "photo backup server", "--k", "3")["results"]
    assert len(hits) == 3 and len({h["citation"] for h in hits}) == 3
    assert {"memory/2025-11-20.md", "memory/2025-11-22.md"} <= {h["path"] for h in hits}


def test_a_line_longer_than_a_snippet_is_shown_around_the_query_word(ws):
    line = " ".join(f"word{i}" for i in range(3000))
    write(ws, "memory/2025-11-23.md", f"# 2025-11-23\n\n{line}\n")
    commit_all(ws)
    hit = recall_json(ws, "word1999")["results"][0]
    assert hit["start_line"] == hit["end_line"] == 3 and len(hit["snippet"]) <= 700
    assert "word1999" in hit["snippet"] and hit["snippet"].startswith("…") and hit["snippet"].endswith("…")
    whole = run(["-C", str(ws), "get", hit["citation"]]).stdout
    assert hit["snippet"].strip("…") in whole  # the cited line holds what the snippet shows


@pytest.mark.slow
def test_fifty_thousand_bullets_with_exact_line_numbers(ws):
    lines = ["# many", ""] + [f"- bullet {i}" for i in range(50_000)]
    lines[49_000] = "- the rare ocelot bullet"
    (ws / "memory/2025-12-04.md").write_text("\n".join(lines) + "\n")
    hit = recall_json(ws, "ocelot")["results"][0]
    assert hit["start_line"] <= 49_001 <= hit["end_line"]
    res = run(["-C", str(ws), "get", "memory/2025-12-04.md", "--from", "49001", "--lines", "1"])
    assert res.stdout == "- the rare ocelot bullet\n"


def test_unterminated_fence_front_matter_and_empty_file(ws):
    write(ws, "memory/2025-12-05.md", "---\ntitle: x\ntags: [a]\n---\n# t\n\n- before the fence about ibexes\n\n"
          "```python\nprint('never closed')\n# a heading inside code\n")
    write(ws, "memory/2025-12-06.md", "")
    assert index_warnings(ws) == []
    assert recall_json(ws, "ibexes")["results"]
    assert recall_json(ws, "never closed")["results"]
    still_works(ws)


def test_bare_repository_is_refused_with_a_hint(tmp_path):
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    (bare / "zmem.toml").write_text("")
    res = run(["-C", str(bare), "recall", "x"])
    assert res.exit_code == 1 and "bare repository" in res.stderr and "hint:" in res.stderr


def test_workspace_path_with_spaces_and_non_ascii(tmp_path):
    root = tmp_path / "my notes ünïcødé 笔记"
    assert run(["init", "--no-hooks", str(root)]).exit_code == 0
    write(root, "memory/2025-12-07.md", "# x\n\n- a note about flamingos\n")
    commit_all(root)
    hit = recall_json(root, "flamingos")["results"][0]
    assert run(["-C", str(root), "get", hit["citation"]]).stdout == hit["snippet"] + "\n"
    assert "flamingos" in hit["snippet"]


def test_index_opens_read_only_under_a_path_with_uri_characters(tmp_path):
    """Read-only connections (the parallel vector scan, rebuilds) open a file: URI; '?', '#' and '%'
    in a workspace path must not change which file that is."""
    from zmem import db
    path = tmp_path / "notes?v=1 #2 100%41" / "index.sqlite"
    path.parent.mkdir()
    conn = db.connect(path)
    conn.execute("CREATE TABLE t(a)")
    conn.execute("INSERT INTO t VALUES (7)")
    conn.close()
    ro = db.connect(path, readonly=True)
    assert ro.execute("SELECT a FROM t").fetchall() == [(7,)]
    ro.close()


HOSTILE = ['"', '"unbalanced', "(((", "a AND b OR NOT c", "NEAR(a b)", "*", "-", "title:foo", "^x", "🙂🙃",
           "!!!", "a" * 5000, " ".join(["word"] * 1000), "'; DROP TABLE chunks; --", "col:val AND (x", "\\", "\x00"]


@pytest.mark.slow
def test_hostile_queries_never_raise(ws):
    for q in HOSTILE:
        res = run(["-C", str(ws), "recall", q, "--json"])
        assert res.exit_code == 0, (q, res.output)
        assert isinstance(json.loads(res.stdout)["results"], list)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=200))
def test_any_text_is_a_safe_query(ws, query):
    from zmem.indexer import open_index
    from zmem.search import recall
    from zmem.workspace import find_workspace
    if not query.strip():
        return
    conn = open_index(find_workspace(ws))
    try:
        assert isinstance(recall(conn, query, k=3).results, list)
    finally:
        conn.close()


def test_languages(ws):
    write(ws, "memory/2025-12-08.md", "# x\n\n- 東京で会議がありました。\n- El aniversário de la abuela.\n"
          "- The gateway crashed twice yesterday.\n")
    assert recall_json(ws, "北京")["results"][0]["path"] == "memory/2025-11-27.md"
    assert recall_json(ws, "東京")["results"][0]["path"] == "memory/2025-12-08.md"
    assert recall_json(ws, "会議")["results"][0]["path"] == "memory/2025-12-08.md"
    assert recall_json(ws, "aniversario")["results"][0]["path"] == "memory/2025-12-08.md"  # accents folded
    assert recall_json(ws, "crashes")["results"][0]["path"] == "memory/2025-12-08.md"  # English stemming
    assert recall_json(ws, "esta marrakech")["results"][0]["path"] == "memory/2025-11-27.md"


def test_get_refusals_are_clear(ws, tmp_path):
    write(tmp_path, "outside.md", "x\n")
    write(ws, "README.md", "x\n")
    write(ws, "memory/x.txt", "x\n")
    os.symlink(ws / "memory/2025-11-24.md", ws / "memory/link.md")
    for path, word in [("../outside.md", "escapes"), (str(tmp_path / "outside.md"), "outside"),
                       ("memory/link.md", "symlink"), ("memory/x.txt", "Markdown"), ("README.md", "not a memory file"),
                       ("memory/nope.md", "no such"), ("memory/2025-11-24.md#Lx", "bad line range")]:
        res = run(["-C", str(ws), "get", path])
        assert res.exit_code == 1 and word in res.stderr and "hint:" in res.stderr, (path, res.stderr)
        assert "Traceback" not in res.output
    res = run(["-C", str(ws), "get", "memory/2025-11-24.md", "--from", "999"])
    assert res.exit_code == 1 and "hint:" in res.stderr
    assert run(["-C", str(ws), "get", "memory/2025-11-24.md#L3-L5"]).stdout == \
        "## Notes\n\n- Set up the gateway on the Mac Studio.\n"


@pytest.mark.slow
def test_arguments_that_are_not_utf8_are_a_usage_error_and_write_nothing(ws):
    from helpers.workspace import zmem_proc
    today = ws / "memory" / f"{dt.date.today().isoformat()}.md"
    for args in (["recall", "x", "--path", b"\xff".decode("utf-8", "surrogateescape")],
                 ["append", b"caf\xe9".decode("utf-8", "surrogateescape")]):
        proc = zmem_proc("-C", str(ws), *args)
        assert proc.returncode == 2 and proc.stderr.startswith("zmem: an argument is not valid UTF-8"), proc.stderr
    assert not today.exists()


def test_broken_config_is_a_clear_error(ws):
    (ws / "zmem.toml").write_text("[index\nchunk_tokens = 'x'\n")
    res = run(["-C", str(ws), "recall", "Mac"])
    assert res.exit_code == 1 and "zmem.toml" in res.stderr and "hint:" in res.stderr
    (ws / "zmem.toml").write_text("[index]\nchunk_tokens = 'x'\n")
    res = run(["-C", str(ws), "recall", "Mac"])
    assert res.exit_code == 1 and "index.chunk_tokens" in res.stderr
    for outside in ("../elsewhere", "/etc", "."):  # would be silently left out of the index
        (ws / "zmem.toml").write_text(f'extra_paths = ["notes", "{outside}"]\n')
        res = run(["-C", str(ws), "recall", "Mac"])
        assert res.exit_code == 1 and f"`extra_paths` entry '{outside}'" in res.stderr and "hint:" in res.stderr


def test_a_directory_named_like_a_note_may_become_a_file_and_back(ws):
    """The stat snapshot records directories: one that vanished or turned into a file, or a note
    that turned into a directory, counts as changed, and the catch-up indexes what is there now."""
    import shutil
    (ws / "memory/odd.md").mkdir()
    assert run(["-C", str(ws), "index", "--full"]).exit_code == 0  # records memory/odd.md as a directory
    (ws / "memory/odd.md").rmdir()
    write(ws, "memory/odd.md", "- a note about wombats\n")
    assert recall_json(ws, "wombats")["results"][0]["path"] == "memory/odd.md"
    (ws / "memory/odd.md").unlink()
    write(ws, "memory/odd.md/inner.md", "- a note about quokkas\n")
    assert recall_json(ws, "quokkas")["results"][0]["path"] == "memory/odd.md/inner.md"
    assert not recall_json(ws, "wombats")["results"]
    shutil.rmtree(ws / "memory/odd.md")
    assert not recall_json(ws, "quokkas")["results"]
    still_works(ws)


def test_dates_out_of_range_are_clear_errors(ws):
    write(ws, "memory/2025-11-28.md", "# 2025-11-28\n\n## Retain\n\n- W @Peter lives in Lisbon.\n")
    commit_all(ws)
    for args in (["recall", "Mac", "--since", "3000y"], ["recall", "Mac", "--until", "9999999w"],
                 ["recall", "Mac", "--as-of", "99999999d"], ["log", "@Peter", "--since", "99999999d"],
                 ["diff", "99999999d", "HEAD"], ["reflect", "--since", "99999999d", "--dry-run"]):
        res = run(["-C", str(ws), *args])
        span = next(a for a in args if a[0].isdigit())
        assert res.exit_code == 1 and span in res.stderr and "hint:" in res.stderr, (args, res.output)
    # the last day a date can name is after every commit: memory as it stands
    assert recall_json(ws, "Mac Studio", "--as-of", "9999-12-31")["results"]
    res = run(["-C", str(ws), "diff", "9999-12-31", "HEAD"])
    assert res.exit_code == 0, res.output


def test_config_that_is_not_utf8_is_a_clear_error(ws, tmp_path):
    (ws / "zmem.toml").write_bytes(b"\xff\xfe")
    res = run(["-C", str(ws), "recall", "Mac"])
    assert res.exit_code == 1 and "zmem.toml" in res.stderr and "UTF-8" in res.stderr and "hint:" in res.stderr
    (ws / "zmem.toml").write_text("")
    user = tmp_path / "home-config" / "zmem" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_bytes(b'k = "caf\xe9"\n')
    os.environ["XDG_CONFIG_HOME"] = str(user.parent.parent)  # the autouse fixture restores it
    res = run(["-C", str(ws), "recall", "Mac"])
    assert res.exit_code == 1 and str(user) in res.stderr and "UTF-8" in res.stderr


def test_state_dir_that_is_a_file_is_a_clear_error(ws):
    import shutil
    shutil.rmtree(ws / ".zmem", ignore_errors=True)
    (ws / ".zmem").write_text("not a directory\n")
    for args in (["recall", "Mac"], ["index"], ["status"]):
        res = run(["-C", str(ws), *args])
        assert res.exit_code == 1 and ".zmem" in res.stderr and "move it aside" in res.stderr, (args, res.output)
    (ws / ".zmem").unlink()
    still_works(ws)
