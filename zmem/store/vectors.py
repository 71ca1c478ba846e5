"""Vector storage and search: sqlite-vec's vec0 when the extension loads, else an exact
in-process cosine over the same stored vectors (same results, slower on large indexes); a
long-running process's vectors, and a small index's when numpy is loaded, in one numpy matrix."""
from __future__ import annotations

import array
import sys

from zmem.store import db
from zmem.errors import IndexUnusable

SCAN_PARTS = 2  # vec0 partitions, scanned in parallel (rowid % SCAN_PARTS)
# windows up to which a search reads every stored vector into numpy (when a local model has loaded it) instead of
# asking vec0: a vec0 knn costs ~1.4 ms a partition however few vectors it holds (it reads whole 1024-vector
# chunks) and each scan thread's connection ~0.9 ms, where reading 200 windows and one matrix product take
# 0.4 ms; the two cost the same between 1,700 and 3,200 windows (bench/README.md, "Small indexes")
SMALL_INDEX = 1500
KNN_LIMIT = 4096  # sqlite-vec refuses a knn query for more neighbours than this ("k value ... too large")


def pack(vector: list[float]) -> bytes:
    return array.array("f", vector).tobytes()


def unpack(blob: bytes) -> list[float]:
    return array.array("f", blob).tolist()


class VectorMatrix:
    """Every stored vector in one numpy matrix, kept by a long-running process (the MCP server):
    a search is then one matrix product instead of a scan of the vec0 table (26 ms at 27k windows),
    with the same exact results. Reloaded whenever the stored vectors change."""

    def __init__(self):
        self.key = None
        self.matrix = None
        self.meta: list[tuple[int, int, int]] = []   # row -> (chunk id, start, end)
        self.rows_of: dict[int, list[int]] = {}      # chunk id -> rows

    def fresh(self, conn):
        """self, loaded with the vectors in conn now; None without numpy."""
        try:
            import numpy as np
        except ImportError:
            return None
        # ids are AUTOINCREMENT, never reused: any add raises max(id), a removal lowers count(*)
        key = (*conn.execute("SELECT count(*), max(id) FROM chunk_vectors").fetchone(), db.get_meta(conn, "vec_fingerprint"))
        if key != self.key:
            rows = conn.execute("SELECT chunk_id, start_line, end_line, vector FROM chunk_vectors ORDER BY id").fetchall()
            self.meta = [r[:3] for r in rows]
            self.matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(len(rows), -1) \
                if rows else None
            self.rows_of = {}
            for i, (cid, _, _) in enumerate(self.meta):
                self.rows_of.setdefault(cid, []).append(i)
            self.key = key
        return self

    def search(self, query: list[float], n: int) -> list[tuple[tuple[int, int, int], float]]:
        import numpy as np
        if self.matrix is None:
            return []
        # einsum, not `@`: BLAS gemv wakes OpenBLAS threads that keep spinning after it and slowed the
        # next query embedding by llama.cpp from 3 to ~60 ms on 2 cores; einsum is one thread, 2.5 ms
        sims = np.einsum("ij,j->i", self.matrix, np.asarray(query, dtype=np.float32))
        n = min(n, len(sims))
        top = np.argpartition(-sims, n - 1)[:n]
        top = top[np.lexsort((top, -sims[top]))]  # best first, ties by storage order as a scan would
        return [(self.meta[i], float(sims[i])) for i in top]

    def windows_of(self, chunk_ids: list[int], query: list[float]) -> dict[int, list[tuple[int, int, float]]]:
        import numpy as np
        rows = [i for cid in chunk_ids for i in self.rows_of.get(cid, ())]
        if not rows or self.matrix is None:
            return {}
        sims = np.einsum("ij,j->i", self.matrix[rows], np.asarray(query, dtype=np.float32))
        out: dict[int, list[tuple[int, int, float]]] = {}
        for i, sim in zip(rows, sims.tolist()):
            cid, a, b = self.meta[i]
            out.setdefault(cid, []).append((a, b, sim))
        return out


class VectorStore:
    def __init__(self, conn, matrix: VectorMatrix | None = None):
        """matrix: a long-running caller's VectorMatrix, used for searches when numpy is there."""
        self.conn = conn
        self.vec_loaded, self.detail = db.load_vec(conn)
        self.matrix = matrix.fresh(conn) if matrix is not None else None
        self._small: VectorMatrix | None = None
        self._sized = False  # whether _in_memory has asked if the index is small (once per store)

    def _in_memory(self) -> VectorMatrix | None:
        """The vectors to search in memory: a long-running caller's matrix, or a small index's (SMALL_INDEX) read
        now, when numpy is loaded already (by a local model: it is not imported for this), as they stand now."""
        if self.matrix is not None:
            return self.matrix
        if not self._sized:
            self._sized = True
            if "numpy" in sys.modules and self.count() <= SMALL_INDEX:
                self._small = VectorMatrix()
        return self._small.fresh(self.conn) if self._small is not None else None

    def fingerprint(self) -> str | None:
        return db.get_meta(self.conn, "vec_fingerprint")

    def dims(self) -> int | None:
        v = db.get_meta(self.conn, "vec_dims")
        return int(v) if v else None

    def _has_vec_table(self) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunk_vec'").fetchone() is not None

    def _partitioned(self) -> bool:
        """Was chunk_vec made with the scan partitions (indexes before 2026-11-23 were not)?"""
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunk_vec'").fetchone()
        return row is not None and "partition key" in row[0]

    def layout_outdated(self) -> bool:
        """Is chunk_vec an older index's, made before the scan partitions?"""
        return self.vec_loaded and self._has_vec_table() and not self._partitioned()

    def upgrade_layout(self) -> None:
        """Rebuild an outdated chunk_vec with the scan partitions, from chunk_vectors (the caller
        holds the transaction)."""
        if not self.layout_outdated():
            return
        self.conn.execute("DROP TABLE chunk_vec")
        self._create_vec_table(self.dims() or 0)
        self.conn.execute(f"INSERT INTO chunk_vec(rowid, part, embedding) "
                          f"SELECT id, id % {SCAN_PARTS}, vector FROM chunk_vectors")

    def _create_vec_table(self, dims: int) -> None:
        self.conn.execute(f"CREATE VIRTUAL TABLE chunk_vec USING vec0(part integer partition key, "
                          f"embedding float[{dims}] distance_metric=cosine)")

    def reset(self, fingerprint: str | None) -> None:
        """Forget all vectors (a new provider or model): they are re-embedded from the cache or anew."""
        self.conn.execute("DELETE FROM chunk_vectors")
        if self._has_vec_table():
            if not self.vec_loaded:
                raise db.OperationalError("sqlite-vec is needed to drop the vec0 table")
            self.conn.execute("DROP TABLE chunk_vec")
        db.set_meta(self.conn, "vec_fingerprint", fingerprint)
        db.set_meta(self.conn, "vec_dims", None)

    def add(self, items: list[tuple[int, int, int, list[float]]]) -> None:
        """Store (chunk id, start line, end line, vector) windows of chunks that still exist
        (the caller holds the transaction)."""
        if not items:
            return
        dims = self.dims()
        if dims is None:
            dims = len(items[0][3])
            db.set_meta(self.conn, "vec_dims", str(dims))
        if self.vec_loaded and not self._has_vec_table():
            self._create_vec_table(dims)
        self.upgrade_layout()
        for cid, start, end, vector in items:
            cur = self.conn.execute("INSERT INTO chunk_vectors(chunk_id, start_line, end_line, vector) "
                                    "SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?1)",
                                    (cid, start, end, pack(vector)))
            if self.vec_loaded and cur.rowcount:
                self.conn.execute("INSERT INTO chunk_vec(rowid, part, embedding) VALUES(?, ?, ?)",
                                  (cur.lastrowid, cur.lastrowid % SCAN_PARTS, pack(vector)))

    def remove(self, chunk_ids: list[int]) -> None:
        if not chunk_ids:
            return
        for i in range(0, len(chunk_ids), 500):
            part = chunk_ids[i:i + 500]
            marks = ",".join("?" * len(part))
            if self.vec_loaded and self._has_vec_table():
                self.conn.execute(f"DELETE FROM chunk_vec WHERE rowid IN (SELECT id FROM chunk_vectors "
                                  f"WHERE chunk_id IN ({marks}))", part)
            self.conn.execute(f"DELETE FROM chunk_vectors WHERE chunk_id IN ({marks})", part)

    def count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0]

    def search(self, query: list[float], k: int) -> list[tuple[int, float, int, int]]:
        """Chunks by their best window: (chunk id, cosine similarity, window start, window end),
        best first, at most k chunks."""
        return self.start_search(query, k)()

    def start_search(self, query: list[float], k: int):
        """search(query, k), begun now; returns the function that finishes it. A vec0 scan runs in
        threads, one per partition, each on its own connection: SQLite releases the GIL while it
        scans, so the partitions are scanned in parallel and the caller's keyword search runs
        meanwhile (docs/benchmarks.md, "Hybrid recall's cost")."""
        n = k * 4  # windows per chunk vary: fetch enough windows to fill k chunks
        matrix = self._in_memory()
        if matrix is not None:
            hits = matrix.search(query, n)
            return lambda: _best_windows(hits, k)
        if not (self.vec_loaded and self._has_vec_table()):
            hits = self._search_in_process(query, n)
            return lambda: _best_windows(hits, k)
        if n > KNN_LIMIT:  # more neighbours than a knn query answers (a recall for hundreds of hits): every window
            hits = self._exact(query, n)
            return lambda: _best_windows(hits, k)
        sql = "SELECT v.rowid, v.distance FROM chunk_vec v WHERE v.embedding MATCH ? AND k = ?"
        queries = [(sql + " AND v.part = ?", (pack(query), n, part)) for part in range(SCAN_PARTS)] \
            if self._partitioned() else [(sql, (pack(query), n))]
        path = self.conn.execute("PRAGMA database_list").fetchone()[2]
        # a second connection would not see this one's uncommitted vectors
        scans = [_BackgroundQuery(path, *q) for q in queries] if path and not self.conn.in_transaction else []

        def finish():
            rows = []
            for i, (q, args) in enumerate(queries):
                got = scans[i].result() if scans else None
                rows += got if got is not None else self.conn.execute(q, args).fetchall()
            rows = sorted(rows, key=lambda r: (r[1], r[0]))[:n]
            meta = self._windows([wid for wid, _ in rows])
            return _best_windows([(meta[wid], 1.0 - dist) for wid, dist in rows if wid in meta], k)
        return finish

    def windows_of(self, chunk_ids: list[int], query: list[float]) -> dict[int, list[tuple[int, int, float]]]:
        """Every window of these chunks with its similarity to the query: chunk -> [(start, end, sim)]."""
        matrix = self._in_memory()
        if matrix is not None:
            return matrix.windows_of(chunk_ids, query)
        out: dict[int, list[tuple[int, int, float]]] = {}
        if not chunk_ids:
            return out
        sql = (f"SELECT chunk_id, start_line, end_line, {{sim}} FROM chunk_vectors WHERE chunk_id IN "
               f"({','.join('?' * len(chunk_ids))})")
        for cid, a, b, sim in self.similarities(sql, "vector", tuple(chunk_ids), query):
            out.setdefault(cid, []).append((a, b, sim))
        return out

    def similarities(self, sql: str, column: str, args: tuple, query: list[float]) -> list[tuple]:
        """Rows of `sql`, whose last selected column is written `{sim}`, with the similarity of the
        vector `column` to the query there (None where the vector is NULL): computed by sqlite-vec
        when it is loaded, else here."""
        if self.vec_loaded:
            sim = f"CASE WHEN {column} IS NULL THEN NULL ELSE 1.0 - vec_distance_cosine({column}, ?) END"
            return self.conn.execute(sql.format(sim=sim), (pack(query), *args)).fetchall()
        return [(*r[:-1], None if r[-1] is None else sum(x * y for x, y in zip(query, unpack(r[-1]))))
                for r in self.conn.execute(sql.format(sim=column), args)]

    def _exact(self, query: list[float], n: int):
        """The n windows nearest the query, each scored by sqlite-vec in one scan of chunk_vectors."""
        sql = ("SELECT chunk_id, start_line, end_line, s FROM (SELECT id, chunk_id, start_line, end_line, {sim} AS s "
               "FROM chunk_vectors) ORDER BY s DESC, id LIMIT ?")
        return [(r[:3], r[3]) for r in self.similarities(sql, "vector", (n,), query)]

    def _windows(self, ids: list[int]) -> dict[int, tuple[int, int, int]]:
        if not ids:
            return {}
        return {r[0]: r[1:] for r in self.conn.execute(
            f"SELECT id, chunk_id, start_line, end_line FROM chunk_vectors WHERE id IN ({','.join('?' * len(ids))})", ids)}

    def _search_in_process(self, query: list[float], n: int):
        rows = self.conn.execute("SELECT chunk_id, start_line, end_line, vector FROM chunk_vectors").fetchall()
        if not rows:
            return []
        try:
            import numpy as np
        except ImportError:  # pure Python: exact, slow
            scored = [(r[:3], sum(a * b for a, b in zip(query, unpack(r[3])))) for r in rows]
            scored.sort(key=lambda x: -x[1])
            return scored[:n]
        matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        sims = matrix @ np.asarray(query, dtype=np.float32)
        top = np.argsort(-sims, kind="stable")[:n]
        return [(rows[i][:3], float(sims[i])) for i in top]


def _best_windows(hits, k: int) -> list[tuple[int, float, int, int]]:
    """Windows (best first) -> each chunk once, by its best window, at most k chunks."""
    out: dict[int, tuple[int, float, int, int]] = {}
    for (cid, start, end), sim in hits:
        if cid not in out:
            out[cid] = (cid, sim, start, end)
    return list(out.values())[:k]


class _BackgroundQuery:
    """One read query on its own connection to the database at path, in a thread."""

    def __init__(self, path: str, sql: str, args: tuple):
        import threading
        self.path, self.sql, self.args = path, sql, args
        self.rows = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            conn = db.connect(self.path, readonly=True)
        except IndexUnusable:  # the caller runs the query itself
            return
        try:
            if db.load_vec(conn)[0]:
                self.rows = conn.execute(self.sql, self.args).fetchall()
        except db.Error:
            pass
        finally:
            conn.close()

    def result(self):
        """The rows, or None when the query could not run there."""
        self.thread.join()
        return self.rows
