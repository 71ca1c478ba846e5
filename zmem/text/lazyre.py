"""Regular expressions compiled on first use, for the module-level patterns a fresh process would
otherwise compile at import. `re` expands every code point of a character class's ranges while
compiling, so a class spanning the CJK blocks (~40k code points) costs ~3 ms each time; the commands
that import a module without ever matching such a pattern should not pay for it."""
from __future__ import annotations

import re


class LazyPattern:
    """Stands in for `re.compile(pattern, flags)`: the pattern's methods and attributes, compiled at
    the first use."""
    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0):
        self._args = (pattern, flags)
        self._compiled = None

    def __getattr__(self, name: str):
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)
