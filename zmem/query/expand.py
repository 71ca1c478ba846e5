"""What recall knows beyond the query's words: the days a question names.

"What did Tim recommend on 8th December, 2023?", "what did we decide on 2025-06-02", "the offer John got in
January 2024", "what happened yesterday", "last June": a question naming a day, a month or a year asks about
the notes of those days. The date is resolved as the Retain facts' dates are (zmem.text.dates.event_range:
full dates in EN/PT/ES/ZH), plus a month with its year, a year alone (`in 2024`), and relative days counted
from today (`yesterday`, `the day before yesterday`, `today`, `N days ago`, `last week`, `last month`, `last
year`, `last <month>`; in Portuguese, Spanish and Chinese too: `ontem`, `há 3 dias`, `la semana pasada`,
`junio pasado`, `昨天`, `上个月`, `去年`). Days counted from another day or from an event: `the week before August 3,
2023`, `two days after 2025-06-02`, `the day after the outage`, `a semana depois da mudança`, `el día después
de la boda`, `搬家后的第二天`: a day written after before/after is that day, with the days of the span before or
after it (the day itself too: a note often tells the week that came before it); anything else is an event, and
its day is the day of the daily log whose words match it best (find_day), the span before or after it without
that day (its log is about the event itself). The chunks of daily logs within the range then rank before every
other hit, in their own order, and those the keyword list had not reached are searched within the range (their
own BM25 order); a hit of the range scores 0.5 + 0.5 x its score, every other hit half its score (as
search.entity_first scores a named entity's hits). An explicit --since/--until wins: then nothing here
applies.
"""
from __future__ import annotations

import datetime as dt
import re

from zmem.text.dates import _MONTHS, event_range
from zmem.text.lazyre import LazyPattern

_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
# Compiled at the first query that may name a day: one holding a digit (a date, a year, `3 days ago`) or one of
# _RELATIVE, without which no pattern below but those needing a digit can match (~3 ms of every fresh recall)
_RELATIVE = ("yesterday", "today", "last", "ontem", "hoje", "hoy", "ayer", "antier", "passad", "pasad", "前天", "前日",
             "昨", "今天", "今日", "上周", "上週", "上个", "上個", "上星期", "上礼拜", "上禮拜", "上月", "去年",
             "before", "after", "following", "prior", "antes", "depois", "despu", "前", "后", "後")
_MONTH_YEAR = LazyPattern(rf"\b({_MONTH_NAMES})\.?,?\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_YEAR = LazyPattern(r"\b(?:in|during|em|en|of)\s+((?:19|20)\d\d)\b(?![-/.]\d)", re.IGNORECASE)
# relative days in the languages zmem's users write (English, Portuguese, Spanish, Chinese), accents optional
_BEFORE_YESTERDAY = LazyPattern(r"\b(?:the day before yesterday|anteontem|anteayer|antes de ayer|antier)\b|前天|前日",
                                re.IGNORECASE)
_YESTERDAY = LazyPattern(r"\b(?:yesterday|ontem|ayer)\b|昨天|昨日", re.IGNORECASE)
_TODAY = LazyPattern(r"\b(?:today|hoje|hoy)\b|今天|今日", re.IGNORECASE)
_AGO = LazyPattern(r"\b(\d{1,3})\s+(?:days?\s+ago|dias?\s+atr[aá]s)\b|\b(?:h[aá]|hace)\s+(\d{1,3})\s+d[ií]as?\b"
                   r"|(\d{1,3})\s*天前", re.IGNORECASE)
_LAST_WEEK = LazyPattern(r"\b(?:last week|semana passada|semana pasada)\b"
                         r"|上周|上週|上个?星期|上個星期|上个?礼拜|上個?禮拜", re.IGNORECASE)
_LAST_MONTH = LazyPattern(r"\b(?:last month|m[eê]s passado|mes pasado)\b|上个月|上個月|上月", re.IGNORECASE)
_LAST_YEAR = LazyPattern(r"\b(?:last year|ano passado|a[ñn]o pasado)\b|去年", re.IGNORECASE)
# `last June`, `junho passado`, `el pasado junio`: months by their full names (`last set of tests` is no September)
_ENGLISH_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                   "november", "december")
_OTHER_MONTHS = "|".join(m for m in sorted(_MONTHS, key=len, reverse=True)
                         if len(m) > 3 and m not in (*_ENGLISH_MONTHS, "sept"))
_LAST_MONTH_NAME = LazyPattern(rf"\blast\s+({'|'.join(_ENGLISH_MONTHS)})\b|\bpasado\s+({_OTHER_MONTHS})\b"
                               rf"|\b({_OTHER_MONTHS})\s+(?:passado|pasado)\b", re.IGNORECASE)
# `the week before August 3, 2023`, `two days after the move`, `a semana depois da mudança`, `el día después de
# la boda`: a count (a number or a word; none or an article is one) of a unit, then before/after and what it is
# counted from, up to the end of the clause (a comma before a digit is a date's). A plural unit without a count
# (`how many days after the fire`) asks for the span, not about its days.
_SPAN_DAYS = {"day": 1, "days": 1, "dia": 1, "dias": 1, "día": 1, "días": 1, "week": 7, "weeks": 7, "weekend": 7,
              "semana": 7, "semanas": 7, "fim de semana": 7, "fin de semana": 7, "month": 31, "months": 31, "mês": 31,
              "mes": 31, "meses": 31}  # a weekday: 7 (the Sunday before a day is within the week before it)
_PLURAL = frozenset(("days", "dias", "días", "weeks", "semanas", "months", "meses"))
_WEEKDAYS = ("monday|tuesday|wednesday|thursday|friday|saturday|sunday|segunda|terça|terca|quarta|quinta|sexta|"
             "sábado|sabado|domingo|lunes|martes|miércoles|miercoles|jueves|viernes")
_COUNTS = {"a": 1, "an": 1, "one": 1, "the": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "um": 1,
           "uma": 1, "o": 1, "dois": 2, "duas": 2, "três": 3, "tres": 3, "el": 1, "la": 1, "un": 1, "una": 1,
           "dos": 2}
_AROUND = LazyPattern(
    rf"\b(?:(?P<n>\d{{1,2}}|{'|'.join(_COUNTS)})\s+)?(?P<unit>days?|weeks?|weekend|months?|{_WEEKDAYS}|dias?|días?"
    r"|semanas?|fim de semana|fin de semana|m[eê]s|meses)\s+(?P<dir>before|after|following|prior to|antes|depois"
    r"|despu[eé]s)(?:\s+(?:d[aoe]s?|del?|the))?\s+(?P<anchor>(?:[^?.!;,]|,\s*\d)+)", re.IGNORECASE)
# 搬家后的第二天, 搬家前一天, 搬家之后那周: what the span is counted from is the CJK text before 前/后 (not 最后一天,
# the last day)
_AROUND_ZH = LazyPattern(r"(?P<anchor>[\u3400-\u9fff]{1,8}?)(?:之|以)?(?<![最然])(?P<dir>前|后|後)(?:的)?(?P<unit>第二天|一天|那天|"
                         r"一周|一週|那周|那週|一个星期|一個星期|那个星期|一个月|一個月|那个月)")
_ZH_SPAN = {"第二天": 1, "一天": 1, "那天": 1, "一周": 7, "一週": 7, "那周": 7, "那週": 7, "一个星期": 7,
            "一個星期": 7, "那个星期": 7, "一个月": 31, "一個月": 31, "那个月": 31}


def query_days(query: str, today: dt.date | None = None, find_day=None) -> tuple[str, str] | None:
    """The (first, last) ISO days a query names, or None. find_day(words) -> the ISO day of the daily log that
    best matches an event's words, or None (without it, only spans counted from a written day are resolved)."""
    low = query.lower()
    if not any(c.isdigit() for c in query) and not any(w in low for w in _RELATIVE):
        return None
    today = today or dt.date.today()
    around = None if _BEFORE_YESTERDAY.search(query) else _around(query, today, find_day)
    if around is not None:
        return around
    return _named_days(query, today)


def _around(query: str, today: dt.date, find_day) -> tuple[str, str] | None:
    """The days of a span counted from a day or an event (_AROUND, _AROUND_ZH), or None."""
    m = _AROUND.search(query)
    if m:
        unit, n = m.group("unit").lower(), m.group("n")
        if n is None and unit in _PLURAL:
            return None  # `how many days after`: a span asked for, not days asked about
        count = int(n) if n and n.isdigit() else _COUNTS.get((n or "a").lower(), 1)
        days = count * _SPAN_DAYS.get(unit, 7)
        after = m.group("dir").lower() not in ("before", "prior to", "antes")
        anchor = m.group("anchor").strip()
    else:
        m = _AROUND_ZH.search(query)
        if not m:
            return None
        days, after, anchor = _ZH_SPAN[m.group("unit")], m.group("dir") != "前", m.group("anchor")
    try:
        written = _named_days(anchor, today)
        if written is not None:  # the span with the day it is counted from (a note may tell it on that day)
            first, last = (dt.date.fromisoformat(d) for d in written)
            return ((first.isoformat(), (last + dt.timedelta(days=days)).isoformat()) if after
                    else ((first - dt.timedelta(days=days)).isoformat(), last.isoformat()))
        day = find_day(anchor) if find_day is not None else None
        if day is None:
            return None
        d = dt.date.fromisoformat(day)  # the event's own log is about the event: the span without it
        return (((d + dt.timedelta(days=1)).isoformat(), (d + dt.timedelta(days=days)).isoformat()) if after
                else ((d - dt.timedelta(days=days)).isoformat(), (d - dt.timedelta(days=1)).isoformat()))
    except (OverflowError, ValueError):  # counted past the calendar's ends (year 1, 9999)
        return None


def _named_days(query: str, today: dt.date) -> tuple[str, str] | None:
    """The days a text names by a date, a month, a year or relative to today."""
    for pattern, back in ((_BEFORE_YESTERDAY, 2), (_YESTERDAY, 1), (_TODAY, 0)):
        if pattern.search(query):
            d = today - dt.timedelta(days=back)
            return d.isoformat(), d.isoformat()
    m = _AGO.search(query)
    if m:
        d = today - dt.timedelta(days=int(next(g for g in m.groups() if g)))
        return d.isoformat(), d.isoformat()
    if _LAST_WEEK.search(query):
        monday = today - dt.timedelta(days=today.weekday() + 7)
        return monday.isoformat(), (monday + dt.timedelta(days=6)).isoformat()
    if _LAST_MONTH.search(query):
        last = today.replace(day=1) - dt.timedelta(days=1)
        return last.replace(day=1).isoformat(), last.isoformat()
    if _LAST_YEAR.search(query):
        return f"{today.year - 1}-01-01", f"{today.year - 1}-12-31"
    m = _LAST_MONTH_NAME.search(query)
    if m:
        month = _MONTHS[next(g for g in m.groups() if g).lower()]
        year = today.year if month < today.month else today.year - 1
        return _month_range(year, month)
    found = event_range(query)
    if found:
        return found
    m = _MONTH_YEAR.search(query)
    if m:
        return _month_range(int(m.group(2)), _MONTHS[m.group(1).lower()])
    m = _YEAR.search(query)
    if m:
        return f"{m.group(1)}-01-01", f"{m.group(1)}-12-31"
    return None


def _month_range(year: int, month: int) -> tuple[str, str]:
    first = dt.date(year, month, 1)
    nxt = dt.date(year + (month == 12), month % 12 + 1, 1)
    return first.isoformat(), (nxt - dt.timedelta(days=1)).isoformat()


def days_first(conn, query: str, ranked: list[tuple[int, float]], search, *, n: int,
               today: dt.date | None = None, days_of=None,
               find_day=None) -> tuple[list[tuple[int, float]], tuple[str, str] | None]:
    """ranked with the chunks of the days the query names first (module docstring). search(since, until)
    -> [(chunk id, score)] best first: the keyword search within those days. days_of(ids) -> {id: day}: the
    hits' days (default: the chunks table's; `recall --as-of` ranks hits of past versions). find_day: see
    query_days. Returns (ranked, the days)."""
    days = query_days(query, today, find_day)
    if days is None:
        return ranked, None
    since, until = days
    ids = [cid for cid, _ in ranked]
    day_of = days_of(ids) if days_of is not None else chunk_days(conn, ids)
    inside = [(cid, s) for cid, s in ranked if day_of.get(cid) and since <= day_of[cid] <= until]
    if len(inside) < n:
        have = {cid for cid, _ in inside}
        inside += [(cid, s) for cid, s in search(since, until) if cid not in have][:n - len(inside)]
    if not inside:
        return ranked, days
    first = {cid for cid, _ in inside}
    scored = [(cid, 0.5 + 0.5 * s) for cid, s in sorted(inside, key=lambda x: (-x[1], x[0]))]
    return scored + [(cid, 0.5 * s) for cid, s in ranked if cid not in first], days


def chunk_days(conn, ids: list[int]) -> dict[int, str | None]:
    """The day of each chunk (id -> its daily log's day, or None)."""
    out: dict[int, str | None] = {}
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        out.update(conn.execute(f"SELECT id, day FROM chunks WHERE id IN ({','.join('?' * len(part))})", part))
    return out
