"""zmem.toml and the user's config.toml: a file that is not TOML, not UTF-8, a directory or a dangling
symlink, a wrong value or a path outside the workspace is an error naming the file (exit 1, a hint);
a key no setting has is a warning naming file and key, and recall goes on."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers.workspace import recall_json, recall_proc, run, user_error, write, zmem_proc


@pytest.mark.slow
def test_unknown_config_keys_are_warnings_naming_the_file_and_key(ws):
    toml = ws / "zmem.toml"
    toml.write_text(toml.read_text().replace("[recall]\n", "[recall]\nbogus = 1\nmdoe = \"bm25\"\n", 1))
    got, err = recall_proc(ws, "gateway")
    assert got["results"]  # a typo never stops recall
    want = [f"{toml}: unknown key `recall.bogus` is ignored;",
            f"{toml}: unknown key `recall.mdoe` is ignored; did you mean `recall.mode`?"]
    for w in want:
        assert any(x.startswith(w) for x in got["warnings"]) and w in err
    st = json.loads(zmem_proc("-C", str(ws), "status", "--json").stdout)
    assert any("`recall.bogus`" in w for w in st["file_warnings"])
    doctor = zmem_proc("-C", str(ws), "doctor")
    assert f"[WARN] config: {toml}: unknown key `recall.bogus` is ignored" in doctor.stdout
    assert doctor.returncode == 0  # a warning, not a failure


@pytest.mark.slow
def test_a_top_level_key_under_the_last_table_says_where_it_belongs(ws):
    toml = ws / "zmem.toml"
    with open(toml, "a") as f:  # after the generated file's last table, [llm]
        f.write('extra_paths = ["notes"]\n')
    write(ws, "notes/ideas.md", "# ideas\n\n- the quokka plan\n")
    got, err = recall_proc(ws, "quokka")
    assert got["results"] == []  # not an extra path: it is llm.extra_paths
    msg = (f"{toml}: unknown key `llm.extra_paths` is ignored: extra_paths belongs at the top of the file, "
           "before any [table]")
    assert msg in got["warnings"] and msg in err
    assert "zmem trust" not in err  # trusting the file would change nothing
    # unknown tables too; a wrong value is still an error
    toml.write_text(toml.read_text() + "[recal]\nk = 3\n")
    _, err = recall_proc(ws, "quokka")
    assert f"{toml}: unknown table [recal] is ignored; did you mean [recall]?" in err
    toml.write_text(toml.read_text().replace("[recal]\nk = 3\n", "").replace("[recall]\n", "[recall]\nk = 0\n", 1))
    proc = zmem_proc("-C", str(ws), "recall", "quokka")
    assert proc.returncode == 1 and "`recall.k` must be at least 1" in proc.stderr and "hint:" in proc.stderr


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
            err = user_error(run(["-C", str(ws), *args]))
            assert f"zmem: {path}: " in err and what in err, (path, text, args, err)
    user.write_text("")
    toml.write_text(original)
    assert recall_json(ws, "Mac Studio")["results"]


def test_a_config_file_that_is_a_directory_or_a_dangling_symlink_is_an_error_naming_it(ws, tmp_path):
    user = _user_config("")
    user.unlink()
    user.mkdir()
    err = user_error(run(["-C", str(ws), "status"]))
    assert f"zmem: {user}: a directory" in err
    user.rmdir()
    user.symlink_to(tmp_path / "nowhere.toml")
    assert f"zmem: {user}: a symlink to a file that does not exist" in user_error(run(["-C", str(ws), "status"]))
    user.unlink()
    (ws / "zmem.toml").unlink()
    (ws / "zmem.toml").mkdir()
    assert f"zmem: {ws / 'zmem.toml'}: a directory" in user_error(run(["-C", str(ws), "status"]))
    (ws / "zmem.toml").rmdir()
    assert run(["-C", str(ws), "status"]).exit_code == 0  # no config at all: the defaults


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
