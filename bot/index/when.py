"""Dates in a query: the one owner of reading "yesterday", "last May", "in March 2026", "on
the 3rd", "two weeks ago" or "2026-03-04" as a time window.

`resolve(query, now)` finds the first time expression in the query and gives its `Window`
(start inclusive, end exclusive, in `now`'s time zone) and the query without it, so the words
"yesterday" or "May" are not searched for as words. A date without a year is the latest one
not after `now` (memory is about the past): "in May" asked in March 2026 is May 2025. "May"
alone is a verb too: it is a month only after "in", "last", "this", "since", "of", "during",
beside a day number or before a year. What it reads:

    2026-03-04, 4 March [2026], March 4th [2026], on the 3rd        that day
    today, tonight, this morning, yesterday, the day before yesterday
    [on|last] Monday                                               the latest Monday before today
    [in|last|this] May [2026], March 2026, in 2025                 that month, that year
    this|last|past|previous week|weekend|month|year
    N|a|two… days|weeks|months|years ago                           a window around that time
    in the last|past N days|weeks|months                           from then until now

Relative to an event ("two weeks after the trip") is not read: the event's date is in memory,
not in the query, so such a query is searched by its words alone. Parsing is a few regular
expressions (~20 µs a query); no library reads dates out of free text both well and fast.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")  # fmt: skip
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_COUNT = (
    r"(\d{1,3}|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|"
    r"seven|eight|nine|ten|eleven|twelve)"
)
_UNIT = r"(day|week|month|year)s?"
_DAY_NUMBER = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d{2})"
_MONTH_CUE = r"(in|last|this|since|of|during|from|early|late|mid)"


@dataclass(frozen=True)
class Window:
    start: datetime  # inclusive
    end: datetime  # exclusive
    phrase: str  # the words that named it, as written

    def holds(self, epoch: float) -> bool:
        return self.start.timestamp() <= epoch < self.end.timestamp()


@dataclass(frozen=True)
class Dated:
    """A query read for time: its window (None when it names no time) and the rest of it."""

    window: Window | None
    rest: str


def resolve(query: str, now: datetime) -> Dated:
    """The query's first time expression as a window around `now`, and the query without it."""
    lowered = query.lower()
    best: tuple[int, int, Window] | None = None
    for pattern, read in _READERS:
        for match in pattern.finditer(lowered):
            window = _window(read, match, now, query)
            if window is not None and (best is None or match.start() < best[0]):
                best = (match.start(), match.end(), window)
            if window is not None:
                break
    if best is None:
        return Dated(None, query)
    start, end, window = best
    return Dated(window, " ".join((query[:start] + " " + query[end:]).split()))


def _window(read: _Reader, match: re.Match[str], now: datetime, query: str) -> Window | None:
    try:
        span = read(match, _midnight(now))
    except (ValueError, OverflowError):  # "February 30th", a year out of range
        return None
    if span is None:
        return None
    return Window(span[0], span[1], query[match.start() : match.end()].strip())


# ----------------------------------------------------------------------------- the readers

_Span = tuple[datetime, datetime]
_Reader = Callable[[re.Match[str], datetime], "_Span | None"]


def _midnight(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def _day(at: datetime) -> _Span:
    return at, at + timedelta(days=1)


def _month_number(word: str) -> int:
    return next(n for n, name in enumerate(MONTHS, start=1) if name.startswith(word[:3]))


def _month(year: int, month: int, today: datetime) -> _Span:
    start = today.replace(year=year, month=month, day=1)
    after = start.replace(year=year + month // 12, month=month % 12 + 1)
    return start, after


def _latest_month(month: int, today: datetime, *, before_this: bool) -> _Span:
    """The latest such month not after today's (strictly before it for "last May")."""
    this_year = month < today.month or (month == today.month and not before_this)
    return _month(today.year if this_year else today.year - 1, month, today)


def _months_back(back: int, today: datetime) -> _Span:
    year, month = divmod(today.year * 12 + today.month - 1 - back, 12)
    return _month(year, month + 1, today)


def _year_span(year: int, today: datetime) -> _Span:
    return today.replace(year=year, month=1, day=1), today.replace(year=year + 1, month=1, day=1)


def _latest_day(month: int, day: int, today: datetime) -> _Span:
    at = today.replace(month=month, day=day)
    if at > today:
        at = at.replace(year=today.year - 1)
    return _day(at)


def _iso(match: re.Match[str], today: datetime) -> _Span:
    return _day(today.replace(year=int(match[1]), month=int(match[2]), day=int(match[3])))


def _day_month(match: re.Match[str], today: datetime) -> _Span:
    day, month, year = int(match[1]), _month_number(match[2]), match[3]
    if year:
        return _day(today.replace(year=int(year), month=month, day=day))
    return _latest_day(month, day, today)


def _month_day(match: re.Match[str], today: datetime) -> _Span:
    month, day, year = _month_number(match[1]), int(match[2]), match[3]
    if year:
        return _day(today.replace(year=int(year), month=month, day=day))
    return _latest_day(month, day, today)


def _named_day(match: re.Match[str], today: datetime) -> _Span:
    back = {"today": 0, "tonight": 0, "this morning": 0, "this evening": 0, "yesterday": 1}
    return _day(today - timedelta(days=back.get(match[0], 2)))  # the day before yesterday


def _weekday(match: re.Match[str], today: datetime) -> _Span:
    back = (today.weekday() - _WEEKDAYS.index(match[1])) % 7 or 7
    return _day(today - timedelta(days=back))


def _nth_of_month(match: re.Match[str], today: datetime) -> _Span:
    day = int(match[1])
    if day <= today.day:
        return _day(today.replace(day=day))
    previous = today.replace(day=1) - timedelta(days=1)
    return _day(previous.replace(day=day))


def _month_year(match: re.Match[str], today: datetime) -> _Span:
    return _month(int(match[2]), _month_number(match[1]), today)


def _cued_month(match: re.Match[str], today: datetime) -> _Span:
    return _latest_month(_month_number(match[2]), today, before_this=match[1] == "last")


def _year(match: re.Match[str], today: datetime) -> _Span:
    return _year_span(int(match[1]), today)


def _this_or_last(match: re.Match[str], today: datetime) -> _Span:
    back = 0 if match[1] == "this" else 1
    unit = match[2]
    if unit in ("week", "weekend"):
        monday = today - timedelta(days=today.weekday() + 7 * back)
        if unit == "weekend":
            return monday + timedelta(days=5), monday + timedelta(days=7)
        return monday, monday + timedelta(days=7)
    if unit == "month":
        return _months_back(back, today)
    return _year_span(today.year - back, today)


def _ago(match: re.Match[str], today: datetime) -> _Span:
    count = _count(match[1])
    unit = match[2]
    if unit == "day":
        return _day(today - timedelta(days=count))
    width = {"week": 7, "month": 30, "year": 365}[unit]
    middle = today - timedelta(days=count * width)
    half = timedelta(days=width // 2 + 1)
    return middle - half, middle + half


def _within_last(match: re.Match[str], today: datetime) -> _Span:
    days = {"day": 1, "week": 7, "month": 31, "year": 366}[match[2]] * _count(match[1])
    return today - timedelta(days=days), today + timedelta(days=1)


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


_READERS: tuple[tuple[re.Pattern[str], _Reader], ...] = tuple(
    (re.compile(pattern), reader)
    for pattern, reader in (
        (r"\b(\d{4})-(\d{2})-(\d{2})\b", _iso),
        (rf"\b(?:on )?(?:the )?{_DAY_NUMBER}(?: of)? {_MONTH}\b(?:,? {_YEAR}\b)?", _day_month),
        (rf"\b(?:on )?{_MONTH} {_DAY_NUMBER}\b(?!:)(?:,? {_YEAR}\b)?", _month_day),
        (r"\b(?:the day before yesterday|yesterday|today|tonight|this (?:morning|evening))\b",
         _named_day),
        (rf"\b(?:on |last )?({'|'.join(_WEEKDAYS)})\b", _weekday),
        (r"\bon the (\d{1,2})(?:st|nd|rd|th)\b", _nth_of_month),
        (rf"\b(?:in )?{_MONTH},? {_YEAR}\b", _month_year),
        (rf"\b{_MONTH_CUE} {_MONTH}\b", _cued_month),
        (rf"\b(?:in |during ){_YEAR}\b", _year),
        (r"\b(this|last|past|previous) (week|weekend|month|year)\b", _this_or_last),
        (rf"\b{_COUNT} {_UNIT} ago\b", _ago),
        (rf"\b(?:in|over|during) the (?:last|past) {_COUNT} {_UNIT}\b", _within_last),
    )
)  # fmt: skip
