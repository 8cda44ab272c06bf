"""Answers first: the bot's Telegram requests counted as they go, so what only decorates a
reply (the 👀 reaction, a draft update, "typing") gives way while the budget is tight, before
any answer waits behind it.

Telegram allows a bot about 30 requests a second (PTB's `AIORateLimiter` holds the rest back).
`AnswersFirst` is that limiter, counting the requests of the last second and those waiting;
past `TIGHT` of them, `tight(bot)` says so and the decorations skip their request (a skipped
draft update is made by the next one, a skipped reaction or typing is not missed).

With replicas the 30 a second are the bot's, not each replica's: given a `Pace` (one shared by
every replica, `bot.replicas.pace`), each request that names a chat waits for its slot there,
in place of the limiter's own overall limit (the per-group limit and the retries stay).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from telegram import Bot
from telegram.ext import AIORateLimiter

WINDOW = 1.0  # seconds the recent requests are counted over
TIGHT = 15  # requests in the window (or waiting): half of Telegram's ~30 a second
Pace = Callable[[], Awaitable[None]]  # waits for the next slot of the bot's overall rate


class AnswersFirst(AIORateLimiter):
    def __init__(self, *, pace: Pace | None = None, **limits: Any) -> None:
        super().__init__(**({"overall_max_rate": 0} if pace else {}), **limits)
        self.pace = pace
        self._recent: deque[float] = deque()  # when each recent request started (monotonic)
        self._waiting = 0  # requests not answered yet (held by the limiter, or on the wire)

    async def process_request(
        self,
        callback: Any,
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: Any,
    ) -> Any:
        if endpoint != "getUpdates":  # the long poll waits by design
            self._recent.append(time.monotonic())
            self._waiting += 1
        try:
            if self.pace is not None and data.get("chat_id") is not None:
                await self.pace()
            call: Coroutine[Any, Any, Any] = super().process_request(
                callback, args, kwargs, endpoint, data, rate_limit_args
            )
            return await call
        finally:
            if endpoint != "getUpdates":
                self._waiting -= 1

    def tight(self) -> bool:
        """Whether the budget is tight: decorations should skip their request now."""
        edge = time.monotonic() - WINDOW
        while self._recent and self._recent[0] < edge:
            self._recent.popleft()
        return len(self._recent) >= TIGHT or self._waiting >= TIGHT


def tight(bot: Bot) -> bool:
    """Whether `bot`'s Telegram budget is tight (never, with another limiter or none)."""
    limiter = getattr(bot, "rate_limiter", None)
    return isinstance(limiter, AnswersFirst) and limiter.tight()
