"""Readers of Retain bullets that never use a fact's event range (opinions, append's check of a
fact, quoted facts) parse them with dates=False: the date patterns are not compiled for them (~7 ms
of a fresh `zmem entity` when an opinion holds a digit), and the rest of the fact is the same."""
from __future__ import annotations

import subprocess
import sys

from zmem.text.retain import parse_bullet

CHECK = """
from zmem.text import dates, opinions
parsed = opinions.parse("# Opinions\\n\\n- O(c=0.7) @Peter: Retries too often on 429s since Nov 27, 2025.\\n")
assert [o.statement for o in parsed.opinions] == ["Retries too often on 429s since Nov 27, 2025."]
print(sum(p._compiled is not None for p in dates._PATTERNS))
"""


def test_opinions_are_read_without_compiling_the_date_patterns():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0"


def test_without_dates_only_the_event_range_is_left_out():
    for body in ("O(c=0.7) @Peter: Flies to Porto on Nov 27, 2025.", "R @Peter lives_in @Porto: since 2025-11-27",
                 "W @Ana: no date here", "X not a fact"):
        with_dates, why = parse_bullet(body, 3, 3, 2025)
        without, why_without = parse_bullet(body, 3, 3, 2025, dates=False)
        assert why == why_without
        if with_dates is not None:
            assert with_dates.event is not None or "date" in body
            with_dates.event = None
            assert with_dates == without
