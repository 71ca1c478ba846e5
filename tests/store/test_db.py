"""The SQLite connection itself: a read-only connection opens the file it names whatever the path holds."""
from __future__ import annotations


def test_index_opens_read_only_under_a_path_with_uri_characters(tmp_path):
    """Read-only connections (the parallel vector scan, rebuilds) open a file: URI; '?', '#' and '%'
    in a workspace path must not change which file that is."""
    from zmem.store import db
    path = tmp_path / "notes?v=1 #2 100%41" / "index.sqlite"
    path.parent.mkdir()
    conn = db.connect(path)
    conn.execute("CREATE TABLE t(a)")
    conn.execute("INSERT INTO t VALUES (7)")
    conn.close()
    ro = db.connect(path, readonly=True)
    assert ro.execute("SELECT a FROM t").fetchall() == [(7,)]
    ro.close()
