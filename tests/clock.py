"""A settable clock for tests: call it for the time, assign `at` to move time."""

from __future__ import annotations

from datetime import datetime


class Clock:
    def __init__(self, start: datetime) -> None:
        self.at = start

    def __call__(self) -> datetime:
        return self.at
