"""What `zmem index` (and `zmem embed`) did."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zmem.index.embedding import EmbedReport
    from zmem.index.history import HistoryUpdate
    from zmem.index.catchup import CatchUp
    from zmem.query.sessions import SessionUpdate


@dataclass
class IndexReport:
    """What `zmem index` did: the catch-up (or rebuild), and the embeddings, session transcripts
    and history it brought up to date (None: not run)."""
    catch_up: CatchUp
    full: bool
    warnings: list[str] = field(default_factory=list)
    embeddings: EmbedReport | None = None
    sessions: SessionUpdate | None = None
    history: HistoryUpdate | None = None
    sessions_only: bool = False

    def to_json(self) -> dict:
        result, sess, hist = self.catch_up, self.sessions, self.history
        return {"head": result.head, "previous": result.previous, "full": self.full or result.full_scan,
                "updated": result.updated, "removed": result.removed, "warnings": self.warnings,
                "stale": result.stale, "seconds": round(result.seconds, 4),
                "embeddings": embed_json(self.embeddings),
                "sessions": None if sess is None else {"files": sess.files, "messages": sess.messages,
                                                        "bytes": sess.bytes, "seconds": round(sess.seconds, 3)},
                "history": None if hist is None else {"commits": hist.commits, "blobs": hist.blobs,
                                                      "rewound": hist.rewound, "shallow": hist.shallow,
                                                      "seconds": round(hist.seconds, 3)}}

def embed_json(report: EmbedReport | None) -> dict | None:
    """An embedding run as `zmem embed --json` (and `index --json`'s "embeddings") print it."""
    if report is None:
        return None
    return {"provider": report.provider, "embedded": report.embedded, "from_cache": report.from_cache,
            "pending": report.pending, "error": report.error, "reembedded_all": report.reset}
