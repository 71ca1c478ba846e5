"""The kinds of Retain facts, defined once for the parser, the CLI and the MCP server: each has a
one-letter code (`- W @Peter: …`) and a name (`--kind world`). Nothing imported, so the CLI pays
nothing for it at startup."""
from __future__ import annotations

KINDS = {"W": "world", "B": "experience", "O": "opinion", "S": "observation", "R": "relation"}
KIND_CODES = {name: code for code, name in KINDS.items()}
