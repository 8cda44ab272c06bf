"""`ProgressNotice`: what a slow command (/new, /compact, /forget) is doing, said once it has
taken longer than `NOTICE_AFTER` seconds — the typing indicator shows from its start
(`bot.turn.router`), and the command's own answer says what was done.

The command may name what it does (`doing`, e.g. "Saving this conversation to memory…");
otherwise the notice is `WORKING`. A command done in time sends nothing more; a notice already
on its way is finished before the answer goes out, so the two never cross.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType

import structlog

log = structlog.get_logger(__name__)

WORKING = "Working on it…"
NOTICE_AFTER = 2.0  # seconds


class ProgressNotice:
    def __init__(self, say: Callable[[str], Awaitable[None]], *, after: float) -> None:
        self.say = say
        self.after = after
        self.text = WORKING
        self._task: asyncio.Task[None] | None = None
        self._sending = False

    def doing(self, text: str) -> None:
        """What the notice will say, if it comes to one."""
        self.text = text

    async def __aenter__(self) -> ProgressNotice:
        self._task = asyncio.create_task(self._later())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._task is None:
            return
        if not self._sending or exc_type is not None:
            self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # we are being stopped ourselves, not just the notice

    async def _later(self) -> None:
        await asyncio.sleep(self.after)
        self._sending = True
        try:
            await self.say(self.text)
        except Exception:  # a notice is a courtesy: the answer still goes out
            log.exception("progress_notice_failed")
