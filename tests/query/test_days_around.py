"""Days counted from another day or from an event: `the week before August 3, 2023`, `the day after the outage`
(zmem.query.expand._around), in English, Portuguese, Spanish and Chinese, in current and as-of recall."""
from __future__ import annotations

import datetime as dt

import pytest

from helpers.workspace import commit_all, recall_json, write
from zmem.query.expand import query_days

TODAY = dt.date(2025, 3, 12)
EVENTS = {"outage": "2025-03-02", "move": "2025-02-10", "boda": "2024-09-14", "mudança": "2025-01-05",
          "搬家": "2025-01-20"}


def find_day(words: str) -> str | None:
    return next((day for word, day in EVENTS.items() if word in words), None)


@pytest.mark.parametrize("query, days", [
    # from a written day: the span and that day (a note may tell on that day what happened the week before)
    ("What did John do the week before August 3, 2023 involving his kids?", ("2023-07-27", "2023-08-03")),
    ("the puppy she got two weeks before August 11, 2023", ("2023-07-28", "2023-08-11")),
    ("Where was Tim in the week before 16 November 2023?", ("2023-11-09", "2023-11-16")),
    ("on the Sunday before October 25, 2022", ("2022-10-18", "2022-10-25")),
    ("the day after 2025-03-01", ("2025-03-01", "2025-03-02")),
    ("a semana antes de 10 de março de 2025", ("2025-03-03", "2025-03-10")),
    # from an event: the span without the event's own day
    ("what did we decide the day after the outage?", ("2025-03-03", "2025-03-03")),
    ("3 days after the outage", ("2025-03-03", "2025-03-05")),
    ("the week following the move", ("2025-02-11", "2025-02-17")),
    ("o que fizemos na semana depois da mudança", ("2025-01-06", "2025-01-12")),
    ("¿qué hicimos dos días después de la boda?", ("2024-09-15", "2024-09-16")),
    ("el martes antes de la boda", ("2024-09-07", "2024-09-13")),
    ("搬家后的第二天我们做了什么", ("2025-01-21", "2025-01-21")),
    ("我们搬家之前一周做了什么", ("2025-01-13", "2025-01-19")),
    ("搬家以后一周", ("2025-01-21", "2025-01-27")),
])
def test_a_span_counted_from_a_day_or_an_event(query, days):
    assert query_days(query, TODAY, find_day) == days


@pytest.mark.parametrize("query", [
    "How many days after the outage did we reopen?",  # asks for a span, not about its days
    "what happened after the road trip",  # no span
    "the day after the submarine launch",  # an event no note holds
    "最后一天",  # the last day
    "what did I do the day before?",  # nothing to count from
])
def test_no_span_without_a_count_or_what_it_counts_from(query):
    assert query_days(query, TODAY, find_day) is None


def test_a_span_past_the_calendars_ends_is_no_span():
    assert query_days("the day after the end", TODAY, lambda words: "9999-12-31") is None  # memory/9999-12-31.md
    assert query_days("the week before the start", TODAY, lambda words: "0001-01-03") is None


def test_the_day_before_yesterday_is_still_two_days_back():
    assert query_days("the day before yesterday", TODAY, find_day) == ("2025-03-10", "2025-03-10")
    assert query_days("the week after the move", TODAY) is None  # no find_day: an event is not resolved


@pytest.fixture
def incident(ws):
    logs = {
        "2025-03-02": "- The outage: the database went down at 09:00 and the outage lasted two hours.\n",
        "2025-03-03": "- Decided to add a read replica and to page the on-call engineer sooner.\n",
        "2025-03-10": "- Decided to rename the staging bucket.\n",
        "2025-03-20": "- Decided, in the outage review, to keep the backup schedule as it is.\n",
        "2025-01-05": "- A mudança para o apartamento novo: caixas por todo lado.\n",
        "2025-01-07": "- Decidimos pintar a sala de verde.\n",
        "2025-02-20": "- Decidimos trocar o sofá da sala.\n",
    }
    for day, text in logs.items():
        write(ws, f"memory/{day}.md", f"# {day}\n\n{text}")
    commit_all(ws)
    return ws


def test_recall_finds_the_note_of_the_day_after_an_event(incident):
    hit = recall_json(incident, "what did we decide the day after the outage?", "--k", "3")["results"][0]
    assert hit["path"] == "memory/2025-03-03.md", hit  # not the outage review, which holds both words
    hit = recall_json(incident, "o que decidimos na semana depois da mudança?", "--k", "3")["results"][0]
    assert hit["path"] == "memory/2025-01-07.md", hit


def test_as_of_recall_counts_from_the_event_in_the_commits_logs(incident):
    got = recall_json(incident, "what did we decide the day after the outage?", "--k", "3", "--as-of", "HEAD")
    assert got["results"][0]["path"] == "memory/2025-03-03.md", got["results"]
