"""Facts, entities, the graph and opinions: `zmem facts`, `entity`, `graph`, `opinions`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from zmem.query.entities import Entity, FactRow
    from zmem.text.opinions import Opinion


@dataclass
class Facts:
    """Typed facts of `## Retain` sections, newest first; warnings: what indexing said about files;
    total: how many facts passed the filters (more than `facts` holds when a limit cut them)."""
    facts: list[FactRow]
    warnings: list[str] = field(default_factory=list)
    total: int | None = None

    def to_json(self) -> dict:
        return {"facts": [f.to_json() for f in self.facts],
                "total": len(self.facts) if self.total is None else self.total}

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
