"""What `zmem append` wrote."""
from __future__ import annotations

from dataclasses import dataclass, field


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
