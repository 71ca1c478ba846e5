"""Tables as the CLI prints them (`facts`, `recall --format table`, `model list`): tabulate's
"simple" format, written here because importing tabulate costs a fresh process 15-20 ms (it reads
its own version through importlib.metadata) and its column typing ~1 s for 50,000 facts.

The output is tabulate's for the cells the CLI passes (one line each): a header, a rule of dashes
under each column, columns two spaces apart, each at least two wider than its header, and trailing
spaces dropped. Text columns are left-aligned with their cells stripped. A numeric column is read as
tabulate reads one: when every non-empty cell is an integer it is printed as given; when every one
is a number it is printed as a float in `g` form (`0.50` as `0.5`), right-aligned on the decimal
point; any other cell makes it a text column. Widths are display widths, as tabulate measures them
with wcwidth installed: a CJK character or an emoji takes two columns, a combining accent none.
Three things differ, on purpose: a line break inside a cell is printed as a space (a row stays one
line); escape sequences are counted as characters (tabulate leaves ANSI colour codes out of the
width); and a cell holding a control character wcwidth cannot measure (it says -1) counts its
characters (tabulate would count -1 and misalign the row).

Display width comes from wcwidth (a dependency): the table of East Asian widths, emoji and zero-width
characters is Unicode's and changes with each version, so a well-kept library measures it rather than
a hand-written copy. It is imported only for a table with a non-ASCII cell (~10-30 ms: it imports
typing, hashlib, re's compiler): the everyday ASCII table, where width is len, pays nothing."""
from __future__ import annotations

_LINE_BREAKS = {ord("\n"): " ", ord("\r"): " "}


def _number(cell: str) -> type | None:
    """int, float or str, as tabulate's column typing reads a cell; None for an empty one."""
    if not cell:
        return None
    for kind in (int, float):
        try:
            kind(cell)
            return kind
        except ValueError:
            pass
    return str


def _after_point(cell: str) -> int:
    """How many characters follow the decimal point (or the exponent's `e`); -1 for none or no number."""
    try:
        int(cell)
        return -1
    except ValueError:
        pass
    try:
        float(cell)
    except ValueError:
        return -1
    point = cell.rfind(".")
    point = cell.lower().rfind("e") if point < 0 else point
    return len(cell) - point - 1 if point >= 0 else -1


def simple_table(rows, headers: list[str], numeric: tuple[int, ...] = ()) -> str:
    """rows (sequences of cells, as many as headers) as text; the columns at the positions in
    numeric are read as numbers, the others as text whatever they hold."""
    columns = [["" if c is None else str(c).translate(_LINE_BREAKS) for c in column]
               for column in zip(*rows)] if rows else [[] for _ in headers]
    out_columns, right = [], []
    for i, cells in enumerate(columns):
        kinds = {_number(c) for c in cells} - {None} if i in numeric else {str}
        if kinds and kinds <= {int, float}:
            if float in kinds:
                cells = [format(float(c), "g") if c else c for c in cells]
            points = [_after_point(c) for c in cells]
            most = max(points, default=-1)
            cells = [c + " " * (most - p) for c, p in zip(cells, points)]
            right.append(True)
        else:
            cells = [c.strip() for c in cells]
            right.append(False)
        out_columns.append(cells)
    def width(cell: str) -> int:
        return len(cell) if cell.isascii() else _display_width(cell)
    widths = [max([width(h) + 2] + [width(c) for c in cells]) for h, cells in zip(headers, out_columns)]

    def pad(cell: str, w: int, to_right: bool) -> str:
        fill = " " * (w - width(cell))
        return fill + cell if to_right else cell + fill

    def line(cells) -> str:
        return "  ".join(pad(c, w, r) for c, w, r in zip(cells, widths, right)).rstrip()

    lines = [line(headers), line(["-" * w for w in widths])]
    lines.extend(line(row) for row in zip(*out_columns))
    return "\n".join(lines)


def _display_width(text: str) -> int:
    """Columns `text` takes on a terminal (wcwidth); its length where wcwidth cannot tell (a control character)."""
    from wcwidth import wcswidth
    w = wcswidth(text)
    return w if w >= 0 else len(text)
