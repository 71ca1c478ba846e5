"""`zmem append -` takes standard input only as UTF-8, as the argument form does: bytes that are not UTF-8
were committed raw while --json reported U+FFFD, and every later command warned about the file. Now:
one line, a hint, exit 1, nothing written. Real processes, a real repository."""
from __future__ import annotations

import json
import subprocess

from helpers.workspace import git, zmem_exe


def _append(ws, data: bytes, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([zmem_exe(), "-C", str(ws), "append", "-", *args], input=data, capture_output=True,
                          timeout=120)


def test_standard_input_that_is_not_utf8_is_refused_and_nothing_is_written(ws):
    head = git(ws, "rev-parse", "HEAD")
    proc = _append(ws, b"x\xff\xfey", "--json")
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert proc.stderr.decode().splitlines() == [
        "zmem: standard input is not valid UTF-8: byte 0xff at offset 1 (line 1); nothing was written",
        "hint: convert it first, e.g. `iconv -f latin1 -t utf-8 FILE | zmem append -`"]
    assert git(ws, "rev-parse", "HEAD") == head and git(ws, "status", "--porcelain") == ""


def test_utf8_standard_input_is_written_as_reported(ws):
    text = "café ☕ 王伟\nsecond line"
    proc = _append(ws, text.encode("utf-8"), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    path = ws / out["path"]
    assert "café ☕ 王伟" in path.read_bytes().decode("utf-8") and "café ☕ 王伟" in out["text"]
    assert proc.stderr == b""


def test_a_byte_order_mark_before_standard_input_is_not_written_into_the_note(ws):
    proc = _append(ws, "\ufeffBooked the dentist".encode("utf-8"), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    data = (ws / out["path"]).read_bytes().decode("utf-8")
    assert "- Booked the dentist\n" in data and "\ufeff" not in data
    assert out["text"] == "Booked the dentist" or "\ufeff" not in out["text"]
