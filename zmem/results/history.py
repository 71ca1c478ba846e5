"""Who wrote what, timelines and belief diffs: `zmem blame`, `log`, `diff`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zmem.history.blame import BlamedRange


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
