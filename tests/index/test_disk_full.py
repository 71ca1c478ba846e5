"""A full disk: the index cannot be opened for writing (its write-ahead log cannot be made), yet it is
whole. Recall answers from it as it is, says stale and why, and answers fresh once space is free. A real
tmpfs of 8 MB (needs mount permission: skipped without it)."""
from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from helpers.workspace import commit_all, recall_json, run, write


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True)
    if proc.returncode:
        pytest.skip("cannot mount a tmpfs here: " + proc.stderr.decode(errors="replace").strip())
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(mnt):
    """Every byte of the disk taken; the files that took them."""
    files = []
    for size in (1 << 16, 512, 1):
        path = mnt / f"fill-{uuid.uuid4().hex}"
        files.append(path)
        try:
            with open(path, "wb") as f:
                while True:
                    f.write(b"\0" * size)
                    f.flush()
        except OSError:
            pass
    return files


@pytest.mark.slow
def test_a_full_disk_gives_a_stale_answer_not_a_broken_index(small_disk):
    ws = small_disk / "ws"
    assert run(["init", "--no-hooks", str(ws)]).exit_code == 0
    write(ws, "memory/2025-01-01.md", "- the tokbase note\n")
    commit_all(ws)
    assert recall_json(ws, "tokbase")["results"]
    files = _fill(small_disk)
    with open(ws / "memory/2025-01-01.md", "w") as f:  # an edit that fits in a block already there
        f.write("- the tokfull note\n")
    out = recall_json(ws, "tokbase")
    assert out["stale"] is True and any("no space left on the disk" in w for w in out["warnings"]), out
    assert [h["citation"] for h in out["results"]] == ["memory/2025-01-01.md#L1-L1"]
    for path in files:
        os.unlink(path)
    out = recall_json(ws, "tokfull")
    assert not out["stale"] and [h["citation"] for h in out["results"]] == ["memory/2025-01-01.md#L1-L1"]
