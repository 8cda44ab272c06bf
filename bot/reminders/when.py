"""Reading when an item is due, the one format the tool and the commands share:

    "in 20 minutes", "in 2 hours", "in 3 days"      relative to now
    "2026-11-27 09:00"                              one local date and time
    "09:00"                                         the next 09:00, local
    "0 8 * * 1" (or "cron 0 8 * * 1")               every time the cron expression matches

Local means the person's zone; `RuleError` says in words what was not understood. A relative
time is kept to the second ("in 1 minute" asked at 21:36:54 is 21:37:54, not 21:37:00), and
counts from when the person asked (`asked`: the message's time, so a model slow to call the
tool does not make it late), unless that is not within the span before now (a message answered
after a restart, or a clock that disagrees): then from now. A date or a clock time is a minute.
"""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from bot.reminders.model import Rule, RuleError, placed

FORMATS = "'in 20 minutes', '2026-11-27 09:00', '09:00' or a cron expression like '0 8 * * 1'"
_RELATIVE = re.compile(r"^in\s+(\d{1,5})\s*(m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def read_when(when: str, now: datetime, zone: ZoneInfo, *, asked: datetime | None = None) -> Rule:
    """The rule `when` says, read at `now` (aware) in `zone`, a relative one from `asked` (when
    the person asked, if within its span before now); a one-off must be in the future."""
    spoken = " ".join(when.strip().lower().split())
    local_now = now.astimezone(zone).replace(tzinfo=None)
    if match := _RELATIVE.match(spoken):
        delta = timedelta(**{_UNITS[match.group(2)[0]]: int(match.group(1))})
        since = asked if asked is not None and now - delta < asked <= now else now
        return Rule(at=(since + delta).astimezone(zone).replace(microsecond=0))
    spoken = spoken.removeprefix("cron ").strip()
    if len(spoken.split()) == 5 and not re.search(r"\d{4}-", spoken):
        return Rule(cron=spoken)
    at = _moment(spoken, local_now)
    if at <= local_now:
        raise RuleError(f"{at:%Y-%m-%d %H:%M} has passed already (it is {local_now:%H:%M} now)")
    return Rule(at=placed(at, zone).astimezone(zone))


def _moment(spoken: str, local_now: datetime) -> datetime:
    try:
        return datetime.fromisoformat(spoken.replace(" ", "T", 1)).replace(tzinfo=None)
    except ValueError:
        pass
    try:
        clock = time.fromisoformat(spoken)
    except ValueError:
        raise RuleError(f"cannot read {spoken!r} as a time; use {FORMATS}") from None
    today = datetime.combine(local_now.date(), clock)
    return today if today > local_now else today + timedelta(days=1)
