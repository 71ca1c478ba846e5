"""zmem: a git-native memory for AI agents.

The Python API is zmem.Memory (see zmem.memory) and the typed results its methods return
(zmem.results, and search.Recall, reading.Lines, context.Context, reflect.ReflectResult):

    import zmem
    with zmem.Memory.open("path/to/workspace") as mem:
        hits = mem.recall("where does Peter live").results

`import zmem` stays cheap: the exports are imported on first use (a fresh `zmem recall` loads no
more than it needs)."""
from zmem.version import __version__

__all__ = ["Appended", "BeliefDiff", "Blame", "Check", "Context", "EntityReport", "FactHit", "Facts", "Hit", "IndexReport",
           "Lines", "Log", "Memory", "Neighbourhood", "Opinions", "Recall", "ReflectResult", "Status", "ZmemError",
           "__version__"]


def __getattr__(name: str):
    """The exports, imported when first asked for."""
    if name in ("Recall", "Hit", "FactHit"):
        from zmem.query import search as module
    elif name == "ReflectResult":
        from zmem.reflect import run as module
    elif name == "ZmemError":
        from zmem import errors as module
    elif name == "Memory":
        from zmem import memory as module
    elif name == "Lines":
        from zmem.query import reading as module
    elif name == "Context":
        from zmem.query import context as module
    elif name in __all__ and name != "__version__":
        from zmem import results as module
    else:
        raise AttributeError(f"module 'zmem' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value
