"""The package's architecture, drawn by its imports: no import cycles, and layers that read bottom
to top, each module importing only from its own layer or those below. Imports inside functions and
under TYPE_CHECKING count too: a lazy import is still a dependency, only a later one."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "zmem"

# Bottom to top: each layer is a package (or a few top-level modules) and imports only from its own
# layer or those below. A new module goes into the package whose job it does; a new package or
# top-level module needs a place here (the test names modules that are in no layer).
LAYERS = [
    ("base", {"version", "errors", "install"}),
    ("text", {"text"}),
    ("workspace", {"workspace"}),
    ("store", {"store"}),
    ("providers", {"embedders"}),
    ("git", {"git"}),
    ("index", {"index"}),
    ("query", {"query"}),
    ("history", {"history"}),
    ("reflect", {"reflect"}),
    # zmem.hookrun is where the installed hook shims point (`python -m zmem.hookrun`): it cannot move
    ("front", {"zmem", "memory", "sync", "results", "status", "hookrun", "__main__", "cli", "mcp"}),
]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("zmem", *parts))


@functools.cache  # parsed once per run: the tests below only read it
def import_graph() -> dict[str, dict[str, int]]:
    """module -> {zmem module it imports: the first line doing so}, modules named as `zmem.x.y`.
    `from zmem.x import y` imports the module zmem.x.y when there is one, else (a name) zmem.x."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str:
        while name not in files:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges = graph[module] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: from the package, or `level - 1` packages up
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in files else source
                           for alias in node.names]
            else:
                continue
            for target in targets:
                if target == "zmem" or target.startswith("zmem."):
                    target = resolve(target)
                    if target != module:
                        edges.setdefault(target, node.lineno)
    return graph


def find_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def _layer_of(modules) -> dict[str, int]:
    """Each module's layer: the layer naming it or the package it is in."""
    named = {("zmem" if m == "zmem" else f"zmem.{m}"): n for n, (_, entries) in enumerate(LAYERS) for m in entries}
    layer = {}
    for module in modules:
        name = module
        while name not in named and "." in name:
            name = name.rpartition(".")[0]
        if name in named and (name != "zmem" or module == "zmem"):  # the package's own layer is not a default
            layer[module] = named[name]
    return layer


def test_the_package_has_no_import_cycles():
    graph = import_graph()
    described = []
    for cycle in find_cycles(graph):
        arrows = [f"  {a} line {line} imports {b}" for a in cycle for b, line in sorted(graph[a].items()) if b in cycle]
        described.append(" <-> ".join(cycle) + "\n" + "\n".join(arrows))
    assert not described, "import cycles:\n" + "\n".join(described)


def test_every_module_imports_only_from_its_layer_or_below():
    graph = import_graph()
    layer = _layer_of(graph)
    assert sorted(set(graph) - set(layer)) == [], "modules in no layer of LAYERS (place them)"
    named = {("zmem" if m == "zmem" else f"zmem.{m}") for _, entries in LAYERS for m in entries}
    assert sorted(named - set(graph)) == [], "LAYERS names modules or packages that do not exist"
    upward = [f"{a} ({LAYERS[layer[a]][0]}) line {line} imports {b} ({LAYERS[layer[b]][0]})"
              for a in sorted(graph) for b, line in sorted(graph[a].items()) if layer[b] > layer[a]]
    assert upward == [], "imports from a higher layer:\n" + "\n".join(upward)


def test_the_checker_sees_imports_inside_functions_relative_imports_and_cycles():
    """The graph is the one the tests above judge: a lazy import and a relative one are edges, and
    a cycle through them is found."""
    graph = import_graph()
    assert "zmem.memory" in graph["zmem.cli.common"]  # imported inside functions only
    assert "zmem.embedders.base" in graph["zmem.embedders"]
    assert find_cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]
