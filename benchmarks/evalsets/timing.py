"""How the synthetic evalset's dated questions name a time: a phrase relative to the day the
question is asked ("yesterday", "two weeks ago", "last May", "on the 3rd", "on Tuesday"), and
that day, chosen so the phrase points at the session that told the fact (as `bot.index.when`
reads it). `benchmarks.evalsets.synthetic` asks the questions; `TOPICS` is what each fact is
about, in the words a question would use.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import date, timedelta

Phrase = tuple[str, date]  # (the time as the question names it, the day it is asked)

TOPICS = {  # the topic names of `benchmarks.evalsets.phrasebook` → how a question names it
    "job": ("work", "the job", "the new job"),
    "home": ("the flat", "the move", "where they live"),
    "car": ("the car", "cars"),
    "instrument": ("music lessons", "music"),
    "sport": ("sport", "training"),
    "pet": ("the dog", "the puppy"),
    "allergy": ("the doctor", "allergies"),
    "food": ("food", "restaurants"),
    "book": ("books", "reading"),
    "race": ("the race", "running"),
}
ABOUT = (  # a fact asked by its person, its topic and when it was told
    "What did {X} say about {topic} {when}?",
    "{when}, what did {X} tell me about {topic}?",
    "what news did {X} have about {topic} {when}",
    "Remind me what {X} told me {when} about {topic}.",
)
HAPPENED = (  # everything one session told, asked by its day alone
    "What happened {when}?",
    "what did {A} and {B} talk about {when}",
    "{when}, any news from {A} or {B}?",
)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_NUMBERS = ("two", "three", "four", "five", "six")


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _yesterday(rng: random.Random, told: date) -> Phrase:
    back = rng.choice((1, 2))
    return ("yesterday" if back == 1 else "the day before yesterday"), told + timedelta(back)


def _days_ago(rng: random.Random, told: date) -> Phrase:
    back = rng.randint(3, 6)
    count = rng.choice((str(back), _NUMBERS[back - 2]))
    return f"{count} days ago", told + timedelta(back)


def _weekday(rng: random.Random, told: date) -> Phrase:
    name = _WEEKDAYS[told.weekday()]
    return f"{rng.choice(('on', 'last'))} {name}", told + timedelta(rng.randint(1, 6))


def _nth(rng: random.Random, told: date) -> Phrase:
    return f"on the {_ordinal(told.day)}", told + timedelta(rng.randint(1, 20))


def _month_day(rng: random.Random, told: date) -> Phrase:
    named = rng.choice(
        (f"{told:%B} {_ordinal(told.day)}", f"the {_ordinal(told.day)} of {told:%B}")
    )
    return f"on {named}", told + timedelta(rng.randint(5, 150))


def _weeks_ago(rng: random.Random, told: date) -> Phrase:
    weeks = rng.randint(2, 4)
    return f"{_NUMBERS[weeks - 2]} weeks ago", told + timedelta(7 * weeks + rng.randint(-2, 2))


def _month_ago(rng: random.Random, told: date) -> Phrase:
    return "a month ago", told + timedelta(30 + rng.randint(-5, 5))


def _last_week(rng: random.Random, told: date) -> Phrase:
    return "last week", told + timedelta(7 - told.weekday() + rng.randint(0, 6))


def _later_month(told: date, months: int, day: int) -> date:
    year, month = divmod(told.year * 12 + told.month - 1 + months, 12)
    return date(year, month + 1, day)


def _month(rng: random.Random, told: date) -> Phrase:
    cue = rng.choice(("in", "last", "back in"))
    return f"{cue} {told:%B}", _later_month(told, rng.randint(1, 4), rng.randint(1, 28))


def _last_month(rng: random.Random, told: date) -> Phrase:
    return "last month", _later_month(told, 1, rng.randint(1, 28))


Reading = Callable[[random.Random, date], Phrase]
ONE_DAY: Sequence[Reading] = (_yesterday, _days_ago, _weekday, _nth, _month_day)
WIDER: Sequence[Reading] = (_weeks_ago, _month_ago, _last_week, _month, _last_month)


def phrase(rng: random.Random, told: date, *, one_day: bool = False) -> Phrase:
    """A time that names `told` from a later day, and that day; `one_day`: a phrase that
    names that day alone ("yesterday", "on the 3rd"), not a week or a month around it."""
    return rng.choice(ONE_DAY if one_day else (*ONE_DAY, *WIDER))(rng, told)
