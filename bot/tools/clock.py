"""`current_time`: the date and time where the user lives."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.models import ToolSpec
from bot.tools.registry import ToolContext

TIME_FORMAT = "%A %Y-%m-%d %H:%M %Z"  # the time as the model is told it, here and each turn


@dataclass(eq=False)
class CurrentTime:
    spec = ToolSpec(
        name="current_time",
        description="The current date, time and weekday in the user's time zone.",
        parameters={"type": "object", "properties": {}, "additionalProperties": False},
    )

    now: Callable[[], datetime]

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return self.now().strftime(TIME_FORMAT).strip()
