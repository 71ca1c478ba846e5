"""Files that vanish or appear while a full index scans (catchup._full_listing and the second read of
the files it does not hold, KEEP_BYTES): a vanished file's rows go, an appeared one is indexed by the
next check, and no check calls the index fresh in between. Real files, real git, real SQLite."""
from __future__ import annotations

from helpers.workspace import commit_all, indexed_paths, write
from zmem.index import catchup as indexer
from zmem.memory import Memory
from zmem.workspace.core import find_workspace


def _resettle(root) -> None:
    """Make the next catch-up a full scan over the index's rows (new settings: every file again)."""
    with Memory.open(root) as mem:
        mem.catch_up()
        mem.conn.execute("UPDATE meta SET value = 'other' WHERE key = 'fingerprint'")


def test_files_vanishing_and_appearing_between_the_scan_and_the_second_read(ws, monkeypatch):
    for i in range(4):
        write(ws, f"memory/2024/2024-01-0{i + 1}.md", f"# {i}\n\n- the okapi number {i}\n")
    commit_all(ws, "four")
    _resettle(ws)
    monkeypatch.setattr(indexer, "KEEP_BYTES", 0)  # every file is read again as it is inserted
    real, reads = indexer._read_memory_file, []

    def read(w, rel, *args):
        reads.append(rel)
        if rel == "memory/2024/2024-01-02.md" and reads.count(rel) == 1:  # the scan read it; then:
            (ws / "memory/2024/2024-01-01.md").unlink()  # one scanned already goes before its second read
            write(ws, "memory/2024/2024-01-09.md", "# 9\n\n- the okapi arrived late\n")  # one appears
        return real(w, rel, *args)
    monkeypatch.setattr(indexer, "_read_memory_file", read)
    indexer.catch_up(find_workspace(ws))
    monkeypatch.setattr(indexer, "_read_memory_file", real)
    assert "memory/2024/2024-01-01.md" not in indexed_paths(ws)
    with Memory.open(ws) as mem:
        assert not mem.fresh().stale
        hits = {h.path for h in mem.recall("okapi", k=20).results}
    assert "memory/2024/2024-01-09.md" in hits and "memory/2024/2024-01-01.md" not in hits
