"""The suite's own rule: test modules share code through tests/helpers only, never by importing another
test module or conftest.py (pytest loads conftest as a plugin; importing it by name loads a second copy),
and conftest.py imports no test module either."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, inside functions too."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((node.lineno, "." * node.level + (node.module or "")))
    return out


@pytest.mark.slow
def test_no_test_module_imports_another_test_module_or_conftest():
    wrong = []
    for path in sorted(TESTS.rglob("*.py")):
        for line, module in _imports(path):
            parts = module.split(".")
            if module.startswith(".") or parts[0] in ("conftest", "tests") or parts[-1].startswith("test_"):
                wrong.append(f"{path.relative_to(TESTS)}:{line}: imports {module}")
    assert not wrong, ("shared code goes in tests/helpers (helpers.workspace has git, write, commit_all, run, "
                       "recall_json, zmem_proc, ...):\n" + "\n".join(wrong))
