"""A zmem.toml with no settings (comments and [table] headers, as `zmem init` writes it) is read
without importing tomllib; whatever the shortcut answers must be exactly what tomllib answers, and
anything it does not know goes to tomllib (with tomllib's errors)."""
from __future__ import annotations

import random
import tomllib

import pytest

from zmem.errors import ConfigError
from zmem.workspace.config import DEFAULT_TOML, _read_toml, _tables_only

KNOWN = [
    DEFAULT_TOML,
    "# synthetic benchmark workspace\n",
    "",
    "\n\n",
    "[index]",
    "  [ index ]  # a comment with ] and [ and # inside\n[recall]\r\n# crlf\r\n",
    "# ünïcode comment 中文\n\t[watch]\t\n",
    "[a-b_C9]\n[123]\n",
]
OTHERS = [
    "k = 1\n",
    "[index]\nchunk_tokens = 300\n",
    "[a.b]\n",
    '["quoted"]\n',
    "[[array]]\n",
    "[index]\n[index]\n",          # a table defined twice: tomllib's error
    "[]\n",
    "[index\n",
    "[index] x\n",
    "\ufeff# a byte order mark\n",
    "# a lone \r carriage return\n",
    "# a control \x01 character\n",
    "[index]\x7f\n",
    "# ok\n[ä]\n",
]


@pytest.mark.parametrize("text", KNOWN)
def test_settings_free_files_are_read_as_tomllib_reads_them(text):
    assert _tables_only(text) == tomllib.loads(text)


@pytest.mark.parametrize("text", OTHERS)
def test_anything_else_is_left_to_tomllib(text):
    assert _tables_only(text) is None


def test_random_lines_agree_with_tomllib():
    pieces = ["", " ", "\t", "#", "# c", "[", "]", "x", "=", "1", "[a]", "[ b ]", "[a]#c", "[c] # d", "\r", "\r\n",
              "\n", "\x00", "[a.b]", "'", '"', "-", "é"]
    rng = random.Random(14)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        got = _tables_only(text)
        if got is None:
            continue
        assert got == tomllib.loads(text), repr(text)


def test_invalid_files_keep_their_messages(tmp_path):
    bad = tmp_path / "twice.toml"
    bad.write_text("[index]\n[index]\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        _read_toml(bad)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"# caf\xe9\n")
    with pytest.raises(ConfigError, match=r"not UTF-8 text \(byte 5\)"):
        _read_toml(latin)
    ok = tmp_path / "zmem.toml"
    ok.write_text(DEFAULT_TOML)
    assert _read_toml(ok) == tomllib.loads(DEFAULT_TOML)
