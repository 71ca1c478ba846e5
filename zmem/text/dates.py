"""Dates written inside a fact -> an event-time range (pure functions).

Understands what people write in English, Portuguese, Spanish and Chinese notes:
  2025-11-27 · Nov 27, 2025 · November 27 · 27 Nov 2025 · Nov 27–30, 2025 · Nov 27–Dec 1, 2025
  27 de novembro de 2025 · 27–30 de noviembre · 2025年11月27日 · 11月27日至12月1日
A missing year is taken from the daily log's day (the fact's context): the year that puts the date
nearest that day ("Dec 30" in a Jan 2 log is last December). Impossible dates are ignored.
"""
from __future__ import annotations

import datetime as dt
import re

from zmem.errors import ZmemError
from zmem.text.lazyre import LazyPattern

_MONTHS = {
    # English
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4, "may": 5,
    "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8, "sep": 9, "sept": 9, "september": 9,
    "oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
    # Portuguese
    "janeiro": 1, "fev": 2, "fevereiro": 2, "março": 3, "marco": 3, "abr": 4, "abril": 4, "mai": 5, "maio": 5,
    "junho": 6, "julho": 7, "ago": 8, "agosto": 8, "set": 9, "setembro": 9, "out": 10, "outubro": 10,
    "novembro": 11, "dez": 12, "dezembro": 12,
    # Spanish
    "ene": 1, "enero": 1, "febrero": 2, "marzo": 3, "mayo": 5, "junio": 6, "julio": 7, "septiembre": 9,
    "setiembre": 9, "octubre": 10, "noviembre": 11, "dic": 12, "diciembre": 12,
}
_MONTH = r"(?P<{g}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{g}>[0-3]?\d)(?:st|nd|rd|th|º|°)?"
_YEAR = r"(?P<{g}>(?:19|20)\d\d)"
_DASH = r"\s*(?:–|—|-|to|until|till|through|thru|a|al|ao|até|hasta|y|and|e)\s*"


def _p(template: str, **groups: str) -> str:
    return template.format(**{k: v.format(g=k) for k, v in groups.items()})


# Each pattern yields groups m1 d1 [y1] [m2] d2 [y2]; the order matters (longest forms first).
_PATTERNS = [LazyPattern(p, re.IGNORECASE) for p in (  # ~6 ms to compile: only when dates are read
    # ISO dates, optionally a range
    r"(?P<y1>(?:19|20)\d\d)-(?P<m1>[01]?\d)-(?P<d1>[0-3]?\d)(?:" + _DASH
    + r"(?:(?P<y2>(?:19|20)\d\d)-)?(?:(?P<m2>[01]?\d)-)?(?P<d2>[0-3]?\d)\b)?",
    # Chinese: 2025年11月27日, 11月27日至12月1日, 11月27日-30日
    r"(?:(?P<y1>(?:19|20)\d\d)\s*年\s*)?(?P<m1>[01]?\d)\s*月\s*(?P<d1>[0-3]?\d)\s*[日号](?:\s*(?:至|到|-|–|—|~)\s*"
    r"(?:(?P<y2>(?:19|20)\d\d)\s*年\s*)?(?:(?P<m2>[01]?\d)\s*月\s*)?(?P<d2>[0-3]?\d)\s*[日号])?",
    # Month D[, YYYY] [– [Month] D[, YYYY]]
    r"\b" + _p("{m1}\\s+{d1}\\b(?:,?\\s*{y1})?", m1=_MONTH, d1=_DAY, y1=_YEAR)
    + r"(?:" + _DASH + _p("(?:{m2}\\s+)?{d2}\\b(?:,?\\s*{y2})?", m2=_MONTH, d2=_DAY, y2=_YEAR) + r")?",
    # D [de] Month [[de] YYYY] [– D [de] Month [[de] YYYY]]   and   D–D [de] Month [[de] YYYY]
    r"\b" + _p("{d1}(?:" + _DASH + "{d2})?\\s+(?:de\\s+)?{m1}(?:,?\\s+(?:de\\s+)?{y1})?\\b", d1=_DAY, d2=_DAY, m1=_MONTH,
               y1=_YEAR)
    + r"(?:" + _DASH + _p("{d3}\\s+(?:de\\s+)?{m3}(?:,?\\s+(?:de\\s+)?{y3})?\\b", d3=_DAY, m3=_MONTH, y3=_YEAR) + r")?",
)]
_DIGIT = re.compile(r"\d")  # what \d in _PATTERNS matches (any Unicode decimal digit)


def _month(value: str | None) -> int | None:
    if value is None:
        return None
    return int(value) if value.isdigit() else _MONTHS.get(value.lower().rstrip("."))


def _date(y: int | None, m: int | None, d: int | None) -> dt.date | None:
    try:
        return dt.date(y, m, d) if y and m and d else None
    except ValueError:
        return None


def _nearest_year(month: int | None, day: int, context: dt.date) -> int:
    """The year that puts month/day nearest the log's day: "Dec 30" in a Jan 2 log is last
    December, "Jan 3" in a Dec 28 log is next January."""
    best = context.year
    for year in (context.year - 1, context.year + 1):
        d, cur = _date(year, month, day), _date(best, month, day)
        if d and (cur is None or abs((d - context).days) < abs((cur - context).days)):
            best = year
    return best


def _span(g: dict, default_year: int | dt.date | None) -> tuple[dt.date, dt.date] | None:
    first = (g.get("y1"), g["m1"], g["d1"])
    if g.get("d3"):  # "27 de novembro a 1 de dezembro de 2025"
        second = (g.get("y3"), g["m3"], g["d3"])
    elif g.get("d2") and "m2" in g:  # "Nov 27–Dec 1", "Nov 27–30", "2025-11-27 to 2025-12-01"
        second = (g.get("y2"), g.get("m2") or g["m1"], g["d2"])
    elif g.get("d2"):  # "27–30 de novembro"
        second = (g.get("y1"), g["m1"], g["d2"])
    else:
        second = None
    y2 = int(second[0]) if second and second[0] else None
    if isinstance(default_year, dt.date):  # the log's day: the nearest year, else its own year
        default_year = _nearest_year(_month(first[1]), int(first[2]), default_year)
    y1 = int(first[0]) if first[0] else (y2 or default_year)
    start = _date(y1, _month(first[1]), int(first[2]))
    if start is None:
        return None
    if second is None:
        return start, start
    end = _date(y2 or start.year, _month(second[1]), int(second[2]))
    if end is not None and end < start and y2 is None:  # "Dec 30–Jan 2": across the new year
        end = _date(start.year + 1, end.month, end.day)
    elif end is not None and end < start and not first[0]:  # "Dec 30–Jan 2, 2027": the year is the end's
        start = _date(y2 - 1, start.month, start.day) or start
    return (start, end) if end is not None and end >= start else (start, start)


def context_day(day: str | None) -> dt.date | int | None:
    """A log's ISO day as a date (its year when only the year is readable), for event_range."""
    if not day:
        return None
    try:
        return dt.date.fromisoformat(day[:10])
    except ValueError:
        return int(day[:4]) if day[:4].isdigit() else None


def _ambiguous(m: re.Match) -> bool:
    """"10 out of 12", "5 may", "3 set": a month word that is also an everyday word counts only when
    capitalized, or with a year or "de" beside it."""
    g = m.groupdict()
    for key in ("m1", "m2", "m3"):
        word = g.get(key)
        if word and not word.isdigit() and word.lower().rstrip(".") in _EVERYDAY and not word[0].isupper():
            if not (g.get("y1") or g.get("y2") or g.get("y3") or re.search(r"\bde\b", m.group(0), re.I)):
                return True
    return False


_EVERYDAY = {"may", "mar", "set", "out", "ago", "a"}


def event_range(text: str, default_year: int | dt.date | str | None = None) -> tuple[str, str] | None:
    """The earliest start and latest end of the dates written in `text`, as ISO days, or None.
    default_year: the year of dates written without one; or the log's day (a date or ISO string),
    and then the year that puts each such date nearest that day."""
    if not _DIGIT.search(text):  # every pattern needs a digit: most facts hold no date
        return None
    if isinstance(default_year, str):
        default_year = context_day(default_year)
    spans = []
    taken: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            if _ambiguous(m):
                continue
            span = _span(m.groupdict(), default_year)
            if span:
                spans.append(span)
                taken.append((m.start(), m.end()))
    if not spans:
        return None
    return min(s for s, _ in spans).isoformat(), max(e for _, e in spans).isoformat()


def commit_time(t: int) -> dt.datetime:
    """A git time (seconds since the epoch) as an aware datetime in the local time zone, as
    `git log --date=local` shows it (the days of --as-of and spans are local days too). git accepts
    dates Python cannot hold (before year 1, after 9999): those are clamped rather than crash."""
    try:
        return dt.datetime.fromtimestamp(t, dt.timezone.utc).astimezone()
    except (OverflowError, OSError, ValueError):
        return (dt.datetime.max if t > 0 else dt.datetime.min).replace(tzinfo=dt.timezone.utc)


def day_start(day: dt.date) -> int:
    """Local midnight at the start of `day`, in seconds since the epoch: a user's "2025-07-10"
    includes their evening, as git's --until=2025-07-10 does."""
    try:
        return int(dt.datetime.combine(day, dt.time()).astimezone().timestamp())
    except (OverflowError, OSError, ValueError):  # the far ends of the calendar: UTC is close enough
        return int(dt.datetime.combine(day, dt.time(), dt.timezone.utc).timestamp())


def day_end(day: dt.date) -> int:
    """Local midnight at the end of `day` (exclusive), in seconds since the epoch."""
    if day == dt.date.max:
        return day_start(day) + 86400
    return day_start(day + dt.timedelta(days=1))


def parse_when(value: str, *, today: dt.date | None = None, end: bool = False, param: str = "since") -> str:
    """`7d`, `2w`, `3m`, `1y`, `today`, `yesterday` or `YYYY-MM-DD` -> an ISO day. param: the
    parameter the value came in (since, until, as_of), which an error names."""
    today = today or dt.date.today()
    v = value.strip().lower()
    m = re.fullmatch(r"(\d+)\s*([dwmy])", v)
    if m:
        n, unit = int(m.group(1)), m.group(2)
        days = {"d": 1, "w": 7, "m": 30, "y": 365}[unit] * n
        try:
            return (today - dt.timedelta(days=days)).isoformat()
        except OverflowError:
            raise ZmemError(f"{value!r} reaches before the year 1", param=param,
                            hint="use a shorter span, e.g. 30d or 5y, or a day like 2025-11-27") from None
    if v in ("today", "yesterday"):
        return (today - dt.timedelta(days=v == "yesterday")).isoformat()
    try:
        return dt.date.fromisoformat(v).isoformat()
    except ValueError:
        raise ZmemError(f"cannot read the date {value!r}", param=param,
                        hint="use a span like 7d, 2w, 3m, 1y, or a day like 2025-11-27") from None
