"""What a full index holds per file from the scan to the end: the path and a pointer or two, never
contents, blob ids or stat signatures of files it will read again (issue 14: peak RSS <= 150 MB
whatever the workspace size). And a full scan over an index that already has rows (no snapshot, a
history rewrite) still keeps what is unchanged, replaces what changed and drops what is gone."""
from __future__ import annotations

import gc
import tracemalloc

import pytest

from helpers.workspace import commit_all, indexed_paths, write
from zmem.index import catchup as indexer
from zmem.store import db
from zmem.workspace.core import find_workspace


def _logs(root, start: int, count: int) -> None:
    for i in range(start, start + count):
        write(root, f"memory/2024/2024-01-01-{i:05d}.md", f"# note {i}\n\n- the okapi number {i} was seen\n")


def _held_before_the_pool(root, monkeypatch) -> int:
    """Bytes traced in this process when the scan is done and the files are handed to the pool,
    of a first index of the workspace (no index yet)."""
    for suffix in ("", "-wal", "-shm"):
        (root / ".zmem" / f"index.sqlite{suffix}").unlink(missing_ok=True)
    held = []
    real = indexer.prepare_all

    def measure(ws, items, files, size):
        gc.collect()
        held.append(tracemalloc.get_traced_memory()[0])
        yield from real(ws, items, files, size)
    monkeypatch.setattr(indexer, "prepare_all", measure)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = indexer.catch_up(find_workspace(root))
    finally:
        tracemalloc.stop()
    assert result.full_scan and held
    return held[0] - before


@pytest.mark.slow
def test_a_full_index_holds_about_a_path_per_file_until_it_inserts(ws, monkeypatch):
    monkeypatch.setattr(indexer, "KEEP_BYTES", 0)  # every content read again: only the bookkeeping is left
    monkeypatch.setattr(indexer, "POOL_MIN_FILES", 10 ** 9)  # measured in this process
    _logs(ws, 0, 200)
    _held_before_the_pool(ws, monkeypatch)  # caches and first-use costs out of the way
    small = _held_before_the_pool(ws, monkeypatch)
    _logs(ws, 200, 1800)
    large = _held_before_the_pool(ws, monkeypatch)
    per_file = (large - small) / 1800
    # the path (~80 bytes) and list slots; a blob id, a stat signature and a tuple per file were ~500
    assert per_file < 200, f"{per_file:.0f} bytes per file"


def test_a_full_scan_over_an_index_with_rows_keeps_replaces_and_drops(ws):
    _logs(ws, 0, 12)
    # names whose order must be the same in Python and in SQLite (UTF-8 bytes): the scan merges both
    for name in ("é", "中", "\U0001F600", "\ue000", "Z", "a b"):
        write(ws, f"memory/2024/{name}.md", f"# {name}\n\n- the okapi named {name}\n")
    commit_all(ws, "logs")
    indexer.catch_up(find_workspace(ws))
    write(ws, "memory/2024/2024-01-01-00003.md", "# changed\n\n- the okapi became a giraffe\n")
    (ws / "memory/2024/2024-01-01-00007.md").unlink()
    (ws / "memory/2024/\u4e2d.md").unlink()
    write(ws, "memory/2024/2024-01-01-00099.md", "# new\n\n- a zebra joined\n")
    (ws / ".gitignore").write_text(".zmem/\nmemory/2024/2024-01-01-00005.md\n")
    conn = indexer.open_index(find_workspace(ws))
    try:  # without a snapshot, the catch-up lists and reads every file (as after a history rewrite)
        with db.write_transaction(conn):
            conn.execute("DELETE FROM meta WHERE key = 'snapshot_ns'")
    finally:
        conn.close()
    result = indexer.catch_up(find_workspace(ws))
    assert result.full_scan
    assert result.updated == ["memory/2024/2024-01-01-00003.md", "memory/2024/2024-01-01-00099.md"]
    assert result.removed == ["memory/2024/2024-01-01-00005.md", "memory/2024/2024-01-01-00007.md",
                              "memory/2024/\u4e2d.md"]
    assert indexed_paths(ws) == set(find_workspace(ws).memory_files()) - {"memory/2024/2024-01-01-00005.md"}
    again = indexer.catch_up(find_workspace(ws))
    assert again.updated == [] and again.removed == []


def test_deferring_a_full_scan_counts_the_files_on_disk_and_in_the_index(ws):
    _logs(ws, 0, 5)
    indexer.catch_up(find_workspace(ws))
    indexed = len(indexed_paths(ws))
    (ws / "memory/2024/2024-01-01-00000.md").unlink()
    _logs(ws, 5, 1)
    conn = indexer.open_index(find_workspace(ws))
    try:
        with db.write_transaction(conn):
            conn.execute("DELETE FROM meta WHERE key = 'snapshot_ns'")
    finally:
        conn.close()
    # as many on disk as in the index (one gone, one new): one path more in all
    assert indexer.catch_up(find_workspace(ws), max_inline=indexed).deferred
    result = indexer.catch_up(find_workspace(ws), max_inline=indexed + 1)
    assert not result.deferred and result.full_scan
    assert result.updated == ["memory/2024/2024-01-01-00005.md"]
    assert result.removed == ["memory/2024/2024-01-01-00000.md"]
