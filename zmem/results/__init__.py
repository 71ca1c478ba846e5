"""The typed results of zmem.Memory's methods (zmem.memory). Each to_json() gives exactly what the
command of the same name prints with --json (and the MCP tool returns). Kept apart from
zmem.memory, and each group in its own module imported on first use, so that a fresh command builds
only the classes it returns (a dataclass costs ~0.3 ms to create)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zmem.results.history import BeliefDiff, Blame, Log
    from zmem.results.index import IndexReport, embed_json
    from zmem.results.status import Check, Status
    from zmem.results.structured import EntityReport, Facts, Neighbourhood, Opinions
    from zmem.results.writing import Appended

__all__ = ["Appended", "BeliefDiff", "Blame", "Check", "EntityReport", "Facts", "IndexReport", "Log", "Neighbourhood",
           "Opinions", "Status", "embed_json"]


def __getattr__(name: str):
    """A result class, imported with its module when first asked for."""
    if name == "Appended":
        from zmem.results import writing as module
    elif name in ("Facts", "EntityReport", "Neighbourhood", "Opinions"):
        from zmem.results import structured as module
    elif name in ("Blame", "Log", "BeliefDiff"):
        from zmem.results import history as module
    elif name in ("IndexReport", "embed_json"):
        from zmem.results import index as module
    elif name in ("Status", "Check"):
        from zmem.results import status as module
    else:
        raise AttributeError(f"module 'zmem.results' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value
