"""Vector storage and search: sqlite-vec's vec0 when the extension loads, else an exact
in-process cosine over the same stored vectors (same results, slower on large indexes)."""
from __future__ import annotations

import array
import math

from zmem import db


def pack(vector: list[float]) -> bytes:
    return array.array("f", vector).tobytes()


def unpack(blob: bytes) -> list[float]:
    return array.array("f", blob).tolist()


class VectorStore:
    def __init__(self, conn):
        self.conn = conn
        self.vec_loaded, self.detail = db.load_vec(conn)

    @property
    def backend(self) -> str:
        return "sqlite-vec" if self.vec_loaded else "in-process"

    def fingerprint(self) -> str | None:
        return db.get_meta(self.conn, "vec_fingerprint")

    def dims(self) -> int | None:
        v = db.get_meta(self.conn, "vec_dims")
        return int(v) if v else None

    def _has_vec_table(self) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunk_vec'").fetchone() is not None

    def reset(self, fingerprint: str | None) -> None:
        """Forget all vectors (a new provider or model): they are re-embedded from the cache or anew."""
        self.conn.execute("DELETE FROM chunk_vectors")
        if self._has_vec_table():
            if not self.vec_loaded:
                raise db.OperationalError("sqlite-vec is needed to drop the vec0 table")
            self.conn.execute("DROP TABLE chunk_vec")
        db.set_meta(self.conn, "vec_fingerprint", fingerprint)
        db.set_meta(self.conn, "vec_dims", None)

    def add(self, items: list[tuple[int, list[float]]]) -> None:
        """Store vectors of chunks that still exist (the caller holds the transaction)."""
        if not items:
            return
        dims = self.dims()
        if dims is None:
            dims = len(items[0][1])
            db.set_meta(self.conn, "vec_dims", str(dims))
        rows = [(cid, pack(v)) for cid, v in items]
        self.conn.executemany("INSERT OR REPLACE INTO chunk_vectors(chunk_id, vector) "
                              "SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?1)", rows)
        if self.vec_loaded:
            if not self._has_vec_table():
                self.conn.execute(f"CREATE VIRTUAL TABLE chunk_vec USING vec0(embedding float[{dims}] distance_metric=cosine)")
            ids = [(cid,) for cid, _ in items]
            self.conn.executemany("DELETE FROM chunk_vec WHERE rowid = ?", ids)  # vec0 ignores OR REPLACE
            self.conn.executemany("INSERT INTO chunk_vec(rowid, embedding) SELECT chunk_id, vector FROM chunk_vectors "
                                  "WHERE chunk_id = ?", ids)

    def remove(self, chunk_ids: list[int]) -> None:
        if not chunk_ids:
            return
        ids = [(c,) for c in chunk_ids]
        self.conn.executemany("DELETE FROM chunk_vectors WHERE chunk_id = ?", ids)
        if self.vec_loaded and self._has_vec_table():
            self.conn.executemany("DELETE FROM chunk_vec WHERE rowid = ?", ids)

    def count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0]

    def search(self, query: list[float], k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first, over chunks that still exist."""
        if self.vec_loaded and self._has_vec_table():
            rows = self.conn.execute(
                "SELECT v.rowid, v.distance FROM chunk_vec v WHERE v.embedding MATCH ? AND k = ? ORDER BY v.distance",
                (pack(query), k)).fetchall()
            live = self._live([cid for cid, _ in rows])
            return [(cid, 1.0 - dist) for cid, dist in rows if cid in live]
        return self._search_in_process(query, k)

    def _live(self, ids: list[int]) -> set[int]:
        if not ids:
            return set()
        return {r[0] for r in self.conn.execute(
            f"SELECT chunk_id FROM chunk_vectors WHERE chunk_id IN ({','.join('?' * len(ids))})", ids)}

    def _search_in_process(self, query: list[float], k: int) -> list[tuple[int, float]]:
        rows = self.conn.execute("SELECT chunk_id, vector FROM chunk_vectors").fetchall()
        if not rows:
            return []
        try:
            import numpy as np
        except ImportError:  # pure Python: exact, slow
            scored = [(cid, sum(a * b for a, b in zip(query, unpack(blob)))) for cid, blob in rows]
            scored.sort(key=lambda x: (-x[1], x[0]))
            return scored[:k]
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(len(rows), -1)
        sims = matrix @ np.asarray(query, dtype=np.float32)
        top = np.argsort(-sims, kind="stable")[:k]
        return [(rows[i][0], float(sims[i])) for i in top]


def cosine(a: list[float], b: list[float]) -> float:
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b)) / (na * nb) if na and nb else 0.0
