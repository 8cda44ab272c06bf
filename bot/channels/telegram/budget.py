"""Answers first: the bot's Telegram requests counted as they go, so what only decorates a
reply (the 👀 reaction, a draft update, "typing") gives way while the budget is tight, before
any answer waits behind it.

Telegram allows a bot about 30 requests a second (PTB's `AIORateLimiter` holds the rest back).
`AnswersFirst` is that limiter, counting the requests of the last second and those waiting, and
the answers on their way (turns running, `answering(bot)`: each will need a request); past
`TIGHT` requests, or when those and the answers on their way would take the whole `BUDGET`,
`tight(bot)` says so and the decorations skip their request (a skipped draft update is made by
the next one, a skipped reaction or typing is not missed). 64 chats answered at once: no
decoration spends a request their answers need.

With replicas the 30 a second (and the 20 a minute into a group) are the bot's, not each
replica's: given a `Pace` (one shared by every replica, `bot.replicas.pace`), each request that
names a chat waits for its slots there, in place of the limiter's own overall and group limits
(its retries after a 429 stay). A request that had to wait there (`PACED`) says the bot's budget
is spent across the replicas: `tight` for the next `WINDOW`, though this replica sent little.

A request looks first (`bot.storage.inbox.look_first`): a replica's turn checks that it still
holds its chat's message right before each request goes out, after any wait for its slots, so a
turn given away meanwhile sends nothing more.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

from telegram import Bot
from telegram.ext import AIORateLimiter

from bot.storage.inbox import look_first

WINDOW = 1.0  # seconds the recent requests are counted over
TIGHT = 15  # requests in the window (or waiting): half of Telegram's ~30 a second
BUDGET = 30  # Telegram's requests a second (AIORateLimiter's default): answers on their way first
PACED = 0.05  # seconds a request waited for its shared slots, past which the budget is tight
# waits for a request's slots: the bot's, and its group's when given the group's chat id
Pace = Callable[[int | str | None], Awaitable[None]]


class AnswersFirst(AIORateLimiter):
    def __init__(self, *, pace: Pace | None = None, max_retries: int = 0) -> None:
        if pace is None:
            super().__init__(max_retries=max_retries)
        else:  # the shared pace holds the bot's and each group's rate
            super().__init__(overall_max_rate=0, group_max_rate=0, max_retries=max_retries)
        self.pace = pace
        self._recent: deque[float] = deque()  # when each recent request started (monotonic)
        self._waiting = 0  # requests not answered yet (held by the limiter, or on the wire)
        self.coming = 0  # answers on their way: turns running (`answering`)
        self._paced_until = 0.0  # a request waited for its shared slots: tight until then

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
            if self.pace is not None and (chat := data.get("chat_id")) is not None:
                asked = time.monotonic()
                await self.pace(group_of(chat))
                if (now := time.monotonic()) - asked > PACED:
                    self._paced_until = now + WINDOW
            callback = _after_look(callback)
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
        recent = len(self._recent)
        paced = time.monotonic() < self._paced_until
        return paced or max(recent, self._waiting) >= TIGHT or recent + self.coming >= BUDGET


def _after_look(callback: Any) -> Any:
    async def looked(*args: Any, **kwargs: Any) -> Any:
        await look_first()
        return await callback(*args, **kwargs)

    return looked


def group_of(chat_id: object) -> int | str | None:
    """The chat id when it is a group's (negative, or an @name, as PTB's limiter tells)."""
    with contextlib.suppress(ValueError, TypeError):
        chat_id = int(chat_id)  # type: ignore[call-overload]
    if isinstance(chat_id, int):
        return chat_id if chat_id < 0 else None
    return str(chat_id)


def tight(bot: Bot) -> bool:
    """Whether `bot`'s Telegram budget is tight (never, with another limiter or none)."""
    limiter = getattr(bot, "rate_limiter", None)
    return isinstance(limiter, AnswersFirst) and limiter.tight()


@contextmanager
def answering(bot: Bot) -> Iterator[None]:
    """While a turn runs: its answer is on its way, and the decorations leave it room."""
    limiter = getattr(bot, "rate_limiter", None)
    if not isinstance(limiter, AnswersFirst):
        yield
        return
    limiter.coming += 1
    try:
        yield
    finally:
        limiter.coming -= 1
