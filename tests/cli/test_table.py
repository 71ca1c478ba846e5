"""zmem's own table printer (cli/table.py) prints what tabulate's "simple" format printed for the cells
the CLI gives it: compared with tabulate itself (a test dependency only) on random tables."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zmem.cli.table import simple_table

tabulate = pytest.importorskip("tabulate").tabulate


def _tabulate(rows, headers, numeric):
    """What the CLI printed before (terminal.echo_table with tabulate)."""
    return tabulate(rows, headers=headers, disable_numparse=[i for i in range(len(headers)) if i not in numeric])


# one-line text as notes hold it: any character but line breaks and control characters (tabulate measures
# ANSI codes apart, and with wcwidth counts a control character as -1 columns); CJK, emoji, accents included
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
NUMBER = st.one_of(
    st.just(""),
    st.floats(0, 1, allow_nan=False).map(lambda c: f"{c:.2f}"),  # facts' confidence
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda s: f"{s:.4g}"),  # recall's score
    st.integers(-10**6, 10**6).map(str),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_same_table_as_tabulate(data):
    width = data.draw(st.integers(1, 6))
    numeric = tuple(i for i in range(width) if data.draw(st.booleans()))
    headers = [data.draw(st.text("abcdefgh ", min_size=1, max_size=9)) for _ in range(width)]
    rows = data.draw(st.lists(st.tuples(*[NUMBER if i in numeric else TEXT for i in range(width)]), min_size=1, max_size=8))
    assert simple_table(rows, headers, numeric) == _tabulate(rows, headers, numeric)


@pytest.mark.parametrize("rows", [
    [("memory/2025-11-24.md#L7", "opinion", "0.50", "2025-11-24", "Peter", "Prefers short answers.")],
    [("a#L1", "world", "", "", "Ana, Peter", "x"), ("b#L2", "opinion", "1.00", "2025-01-01", "", "  y  ")],
    [("a#L1", "world", "", "", "", "2425273e94"), ("b#L2", "world", "", "", "", "1e10")],  # text stays text
])
def test_facts_tables_as_before(rows):
    headers = ["source", "kind", "c", "day", "entities", "text"]
    assert simple_table(rows, headers, (2,)) == _tabulate(rows, headers, (2,))


def test_no_rows_is_the_header_and_its_rule():  # (tabulate raised IndexError: the CLI never asked)
    assert simple_table([], ["source", "c"], (1,)).splitlines() == ["source    c", "--------  ---"]


def test_a_line_break_in_a_cell_is_a_space():
    assert simple_table([("a\nb", "1")], ["x", "n"], (1,)).splitlines() == ["x      n", "---  ---", "a b    1"]


def _columns_start_at_the_same_display_column(table: str) -> None:
    from wcwidth import wcswidth
    lines = table.splitlines()
    starts = [i for i, ch in enumerate(lines[1]) if ch == "-" and (i == 0 or lines[1][i - 1] == " ")]
    for line in lines[2:]:
        at = [wcswidth(line[:i]) for i, ch in enumerate(line) if ch != " " and (i == 0 or line[i - 1] == " ")]
        assert set(starts[1:]) <= set(at) or not line.strip(), (table, starts, at)


@pytest.mark.parametrize("cells", [
    [("王伟", "北京"), ("Peter", "Marrakech")],                                # CJK: two columns each
    [("👍 done", "x"), ("plain", "y"), ("👨‍👩‍👧 family", "z")],                        # emoji, a ZWJ sequence
    [("café", "e\u0301t\u00e9"), ("cafe", "ete")],                                # a combining accent: none
])
def test_wide_and_zero_width_characters_keep_the_columns_aligned(cells):
    rows = [(a, b, "0.5") for a, b in cells]
    table = simple_table(rows, ["source", "text", "c"], (2,))
    assert table == _tabulate(rows, ["source", "text", "c"], (2,))  # tabulate measures with wcwidth
    _columns_start_at_the_same_display_column(table)
