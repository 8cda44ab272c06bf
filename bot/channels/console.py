"""The console channel: `python -m bot chat` talks to the same turn runner in a terminal."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from typing import TextIO

from bot.models import Inbound
from bot.turn.access import LOCAL_USER_ID
from bot.turn.runner import TurnRunner

CHANNEL = "console"
PROMPT = "you> "


class ConsoleReplier:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def parts(self, text: str) -> Sequence[str]:
        return [text]

    async def send_part(self, part: object) -> None:
        self.out.write(f"mnemo> {part}\n")
        self.out.flush()

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        yield


class ConsoleChannel:
    def __init__(
        self, runner: TurnRunner, *, now: Callable[[], datetime], stdin: TextIO, stdout: TextIO
    ) -> None:
        self.runner = runner
        self.now = now
        self.stdin = stdin
        self.replier = ConsoleReplier(stdout)

    async def run(self) -> None:
        """Replay, then read lines until end of input."""
        await self.runner.replay(lambda _: self.replier, channel=CHANNEL)
        while True:
            self.replier.out.write(PROMPT)
            self.replier.out.flush()
            line = await asyncio.to_thread(self.stdin.readline)
            if not line:
                return
            if text := line.strip():
                await self.runner.handle(self._inbound(text), self.replier)

    def _inbound(self, text: str) -> Inbound:
        return Inbound(
            id=f"{CHANNEL}:{uuid.uuid4().hex}",
            channel=CHANNEL,
            chat_id=0,
            user_id=LOCAL_USER_ID,
            text=text,
            received_at=self.now(),
        )
