"""A full index streams the files: the contents held between reading and inserting are bounded
(KEEP_BYTES; the rest is read again), the worker pool gets a few groups ahead, rows go in table by
table. Whatever the path, the index holds the same rows with the same ids as one file at a time."""
from __future__ import annotations

import random

import pytest

from helpers.workspace import commit_all, write
from zmem.index import catchup as indexer
from zmem.workspace.core import find_workspace

WORDS = ("gateway relay backup replica webhook certificate deploy runner Lisbon Porto Peter Ana Lucía "
         "北京 出差 数据库 reunião mañana").split()


def _notes(root, files: int = 60) -> None:
    rnd = random.Random(3)
    for i in range(files):
        lines = [f"# 2025-03-{1 + i % 28:02d}", "", "## Notes", ""]
        lines += ["- " + " ".join(rnd.choice(WORDS) for _ in range(10)) for _ in range(rnd.randint(3, 40))]
        lines += ["", "## Retain", "", f"- W @Peter: lives in Lisbon since March {1 + i % 28}",
                  f"- O(c=0.8) @Ana: prefers {rnd.choice(WORDS)}", "- R @Peter works_with @Ana"]
        write(root, f"memory/2025/2025-03-{1 + i % 28:02d}-{i}.md", "\n".join(lines) + "\n")
    commit_all(root, "many notes")


def _dump(root) -> dict[str, list]:
    conn = indexer.open_index(find_workspace(root))
    try:
        return {
            "files": conn.execute("SELECT path, blob, size, day, chunks, lines, warning FROM files ORDER BY path").fetchall(),
            "chunks": conn.execute("SELECT * FROM chunks ORDER BY id").fetchall(),
            "facts": conn.execute("SELECT * FROM facts ORDER BY id").fetchall(),
            "fact_entities": conn.execute("SELECT * FROM fact_entities ORDER BY entity, fact_id").fetchall(),
            "relations": conn.execute("SELECT * FROM relations ORDER BY rowid").fetchall(),
            "sequence": conn.execute("SELECT * FROM sqlite_sequence ORDER BY name").fetchall(),
            "chunks_fts": conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'gateway OR 北京' "
                                       "ORDER BY rank, rowid").fetchall(),
            "facts_fts": conn.execute("SELECT rowid FROM facts_fts WHERE facts_fts MATCH 'Lisbon' ORDER BY rowid").fetchall(),
        }
    finally:
        conn.close()


def _rebuild_dump(root) -> dict[str, list]:
    indexer.rebuild(find_workspace(root))
    return _dump(root)


def _one_file_at_a_time(monkeypatch) -> None:
    """The reference: every file prepared in this process and inserted alone."""
    monkeypatch.setattr(indexer, "POOL_MIN_FILES", 10 ** 9)
    monkeypatch.setattr(indexer, "GROUP_FILES", 1)


def test_pool_re_reading_and_batches_give_the_rows_of_one_file_at_a_time(ws, monkeypatch):
    _notes(ws)
    with monkeypatch.context() as m:
        _one_file_at_a_time(m)
        reference = _rebuild_dump(ws)
    assert len(reference["chunks"]) > 60 and reference["relations"] and reference["chunks_fts"]
    # the pool with tiny groups, nearly every content read again, batches of several files
    monkeypatch.setattr(indexer, "POOL_MIN_FILES", 1)
    monkeypatch.setattr(indexer, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(indexer, "GROUP_FILES", 3)
    monkeypatch.setattr(indexer, "KEEP_BYTES", 5000)
    assert _rebuild_dump(ws) == reference
    # and a first index (no index yet) is the same too
    for suffix in ("", "-wal", "-shm"):
        (ws / ".zmem" / f"index.sqlite{suffix}").unlink(missing_ok=True)
    result = indexer.catch_up(find_workspace(ws))
    assert result.full_scan and len(result.updated) == len(reference["files"])
    assert _dump(ws) == reference


def test_ids_continue_after_deleted_rows_as_sqlite_would_give_them(ws, monkeypatch):
    """AUTOINCREMENT ids are never reused: rows inserted after deletions continue above every id given."""
    _notes(ws, files=12)
    indexer.catch_up(find_workspace(ws))
    before = _dump(ws)
    for rel in ("memory/2025/2025-03-01-0.md", "memory/2025/2025-03-05-4.md"):
        (ws / rel).unlink()
    write(ws, "memory/2025/2025-03-09-8.md", "# changed\n\n## Retain\n\n- W @Ana: moved to Porto\n")
    commit_all(ws, "edits")
    monkeypatch.setattr(indexer, "GROUP_FILES", 1)
    indexer.catch_up(find_workspace(ws))
    after = _dump(ws)
    top_chunk = max(row[0] for row in before["chunks"])
    top_fact = max(row[0] for row in before["facts"])
    new_chunks = [row for row in after["chunks"] if row[1] == "memory/2025/2025-03-09-8.md"]
    new_facts = [row for row in after["facts"] if row[2] == "memory/2025/2025-03-09-8.md"]
    assert [row[0] for row in new_chunks] == [top_chunk + 1]
    assert [row[0] for row in new_facts] == [top_fact + 1]
    sequence = dict(after["sequence"])
    assert (sequence["chunks"], sequence["facts"]) == (top_chunk + 1, top_fact + 1)


@pytest.mark.parametrize("change", ["edited", "deleted"])
def test_a_file_changed_between_the_scan_and_its_second_read_is_indexed_as_read(ws, monkeypatch, change):
    """Contents beyond KEEP_BYTES are read again when their turn comes: what is indexed is what was
    read then (a later edit shows in its stat signature, taken before that read); a file gone by then
    is not indexed."""
    _notes(ws, files=8)
    monkeypatch.setattr(indexer, "KEEP_BYTES", 0)
    target = "memory/2025/2025-03-04-3.md"
    real = indexer.prepare_all

    def change_first(ws_, items, files, size):
        if change == "edited":
            write(ws, target, "# edited\n\n- the okapi moved in after the scan\n")
        else:
            (ws / target).unlink()
        yield from real(ws_, items, files, size)
    monkeypatch.setattr(indexer, "prepare_all", change_first)
    result = indexer.catch_up(find_workspace(ws))
    monkeypatch.undo()
    rows = {row[0]: row for row in _dump(ws)["files"]}
    if change == "edited":
        assert target in result.updated
        assert rows[target][1] == indexer.git_blob_id((ws / target).read_bytes())
        again = indexer.catch_up(find_workspace(ws))
        assert again.updated == [] and again.removed == []  # the stat signature matches what was indexed
    else:
        assert target not in rows and target not in result.updated
        assert {f"memory/2025/2025-03-{1 + i:02d}-{i}.md" for i in range(8)} - set(rows) == {target}
