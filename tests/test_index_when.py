"""Dates in a query read as time windows against a fixed "now" (`bot.index.when`)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from bot.index.when import resolve

NOW = datetime(2026, 3, 18, 15, 30, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(
    ("query", "start", "end", "rest"),
    [
        ("what did we do yesterday?", date(2026, 3, 17), date(2026, 3, 18), "what did we do ?"),
        ("the day before yesterday", date(2026, 3, 16), date(2026, 3, 17), ""),
        ("plans for today", date(2026, 3, 18), date(2026, 3, 19), "plans for"),
        ("what did Maria say last May", date(2025, 5, 1), date(2025, 6, 1), "what did Maria say"),
        ("in March 2026", date(2026, 3, 1), date(2026, 4, 1), ""),
        ("what happened in March", date(2026, 3, 1), date(2026, 4, 1), "what happened"),
        ("trips in May", date(2025, 5, 1), date(2025, 6, 1), "trips"),
        ("May 2025 trip", date(2025, 5, 1), date(2025, 6, 1), "trip"),
        ("in 2025", date(2025, 1, 1), date(2026, 1, 1), ""),
        ("dinner on the 3rd", date(2026, 3, 3), date(2026, 3, 4), "dinner"),
        ("on the 25th", date(2026, 2, 25), date(2026, 2, 26), ""),  # not yet this month
        ("the 4th of March", date(2026, 3, 4), date(2026, 3, 5), ""),
        ("March 20th", date(2025, 3, 20), date(2025, 3, 21), ""),  # the latest one passed
        ("June 2, 2024", date(2024, 6, 2), date(2024, 6, 3), ""),
        ("notes from 2026-01-04", date(2026, 1, 4), date(2026, 1, 5), "notes from"),
        ("what Tom said on Monday", date(2026, 3, 16), date(2026, 3, 17), "what Tom said"),
        ("last Wednesday", date(2026, 3, 11), date(2026, 3, 12), ""),
        ("last week", date(2026, 3, 9), date(2026, 3, 16), ""),
        ("this week", date(2026, 3, 16), date(2026, 3, 23), ""),
        ("last weekend", date(2026, 3, 14), date(2026, 3, 16), ""),
        ("last month", date(2026, 2, 1), date(2026, 3, 1), ""),
        ("this year", date(2026, 1, 1), date(2027, 1, 1), ""),
        ("three days ago", date(2026, 3, 15), date(2026, 3, 16), ""),
        ("two weeks ago", date(2026, 2, 28), date(2026, 3, 8), ""),
        ("in the past 3 days", date(2026, 3, 15), date(2026, 3, 19), ""),
    ],
)
def test_time_expressions_become_windows(query: str, start: date, end: date, rest: str) -> None:
    dated = resolve(query, NOW)
    assert dated.window is not None, query
    assert (dated.window.start.date(), dated.window.end.date()) == (start, end)
    assert dated.rest == rest


@pytest.mark.parametrize(
    "query",
    [
        "what did Maria say about the flat",
        "may I ask about the flat",  # "may" the verb
        "two weeks after the trip",  # relative to an event: searched by its words
        "February 30th",  # no such day
        "room 2026",
        "",
    ],
)
def test_a_query_without_a_time_is_left_as_it_is(query: str) -> None:
    dated = resolve(query, NOW)
    assert dated.window is None
    assert dated.rest == query


def test_the_window_is_in_the_time_zone_of_now() -> None:
    tokyo = timezone(timedelta(hours=9))
    window = resolve("yesterday", datetime(2026, 3, 18, 1, 0, tzinfo=tokyo)).window
    assert window is not None
    assert window.start == datetime(2026, 3, 17, tzinfo=tokyo)
    assert window.holds(datetime(2026, 3, 17, 12, tzinfo=tokyo).timestamp())
    assert not window.holds(datetime(2026, 3, 18, 0, 30, tzinfo=tokyo).timestamp())
