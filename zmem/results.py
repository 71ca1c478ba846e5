"""The typed results of zmem.Memory's methods (zmem.memory). Each to_json() gives exactly what the
command of the same name prints with --json (and the MCP tool returns). Kept apart from
zmem.memory so that a fresh `zmem recall` or `zmem get` does not build classes it does not return."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from zmem.history.blame import BlamedRange
    from zmem.index.embedding import EmbedReport
    from zmem.query.entities import Entity, FactRow
    from zmem.index.history import HistoryUpdate
    from zmem.index.catchup import CatchUp
    from zmem.text.opinions import Opinion
    from zmem.query.sessions import SessionUpdate


@dataclass
class Appended:
    """What `zmem append` wrote: lines line..end_line of path, and whether it was committed."""
    path: str
    line: int
    end_line: int
    citation: str
    text: str
    committed: bool
    commit: str | None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "end_line": self.end_line, "citation": self.citation,
                "text": self.text, "committed": self.committed, "commit": self.commit, "warnings": self.warnings}


@dataclass
class Facts:
    """Typed facts of `## Retain` sections, newest first; warnings: what indexing said about files."""
    facts: list[FactRow]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"facts": [f.to_json() for f in self.facts]}


@dataclass
class EntityReport:
    """Everything `zmem entity NAME` shows: the entity, its page, its facts newest first, its
    opinions, its related entities, and suspected duplicate spellings of it."""
    entity: Entity
    page_text: str | None
    facts: list[FactRow]
    opinions: list[Opinion]
    related: list[dict]
    suspected_duplicates: list[tuple[str, str, float]]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"entity": self.entity.to_json(), "page_text": self.page_text, "facts": [f.to_json() for f in self.facts],
                "opinions": [o.to_json() for o in self.opinions], "related": self.related,
                "suspected_duplicates": self.suspected_duplicates}


@dataclass
class Neighbourhood:
    """An entity, the entities within `depth` hops of it, and the edges among them (`zmem graph`).
    private: with a group scope, what tells a private file (its evidence is left out of to_json)."""
    entity: Entity
    depth: int
    entities: dict = field(default_factory=dict)
    reached: set = field(default_factory=set)
    edges: list = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    private: Callable[[str], bool] | None = None

    def to_json(self) -> dict:
        """What `zmem graph NAME --json` prints (the MCP tool graph_search adds the warnings)."""
        out = {"entity": self.entity.to_json(), "depth": self.depth,
               "nodes": [self.entities[k].to_json() for k in sorted(self.reached) if k in self.entities],
               "edges": [e.to_json(self.entities) for e in self.edges]}
        return _public_graph(self.private, out) if self.private else out


@dataclass
class Opinions:
    """The opinions of bank/opinions.md (about one entity, or all), and how many `O` facts await
    `zmem reflect`. exists: whether bank/opinions.md exists."""
    opinions: list[Opinion]
    awaiting_reflect: int
    exists: bool
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"opinions": [o.to_json() for o in self.opinions], "awaiting_reflect": self.awaiting_reflect}


@dataclass
class Blame:
    """Who wrote each line of the target, when, in which commit; with the evidence chain."""
    target: str
    ranges: list[BlamedRange]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"target": self.target, "ranges": [r.to_json() for r in self.ranges], "warnings": self.warnings}


@dataclass
class Log:
    """A timeline (`zmem log`): of an entity (type "entity") or of a memory file (type "file", path
    its workspace-relative path), newest first unless reversed."""
    target: str
    type: str
    events: list[dict]
    path: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"target": self.target, "type": self.type, "events": self.events, "warnings": self.warnings}


@dataclass
class BeliefDiff:
    """What memory believed differently at one commit than at another (`zmem diff`): since and
    until are {"commit", "date"}, facts the added/retracted/changed/confidence/moved lists."""
    since: dict
    until: dict
    facts: dict
    opinions: list[dict]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"from": self.since, "to": self.until, "facts": self.facts, "opinions": self.opinions,
                "warnings": self.warnings}


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


@dataclass
class Status:
    """The workspace and its index as they are (`zmem status`; nothing is caught up)."""
    workspace: str
    head: str | None
    indexed_commit: str | None
    indexed: bool
    stale: bool
    read_only: bool
    read_only_reason: str | None
    dirty: list[str]
    files: int
    chunks: int
    db_bytes: int
    driver: str
    sqlite_version: str
    vector_store: str
    sqlite_vec: bool
    shallow: bool
    hooks: dict
    file_warnings: list[str]
    embeddings: dict
    sessions: dict

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Check:
    """One line of `zmem doctor`: level ok, warn or fail."""
    level: str
    name: str
    detail: str


def _public_graph(private: Callable[[str], bool], g: dict) -> dict:
    """The neighbourhood as the non-private files show it: evidence from private files dropped,
    edges left without evidence dropped, and the nodes they alone reached."""
    def public(citation: str) -> bool:
        return not private(citation.split("#", 1)[0])
    edges = []
    for e in g["edges"]:
        evidence = [c for c in e["evidence"] if public(c)]
        if evidence:
            edges.append({**e, "evidence": evidence, "count": len(evidence)})
    keep = {g["entity"]["key"]} | {e["source"] for e in edges} | {e["target"] for e in edges}
    scrub = lambda n: {**n, "page": n["page"] if n["page"] and public(n["page"]) else None}  # noqa: E731
    return {**g, "entity": scrub(g["entity"]), "nodes": [scrub(n) for n in g["nodes"] if n["key"] in keep],
            "edges": edges}
