"""Getting a reply out: the `Replier` a channel gives for one chat, and `Delivery`, which sends a
journaled reply part by part and records each part sent in the inbox (the outbound ledger).

A part that fails is tried again with backoff (`BACKOFF`, or the channel's own `retry_after`):
only this chat waits, and the reply is never dropped for a passing failure. It is given up
only when the channel says it can never go out (`SendFailed.permanent`: the user blocked the
bot) or after `UNEXPECTED_TRIES` failures nobody expected (a bug must not stall a chat forever).

One attempt and, when the channel took the part, its record in the ledger are shielded from a
stop: a stop that cancels a chat never cuts between the two (the part would go out again after
the restart), and the cancelled turn ends only once they are done, so nothing else takes its
message up while its part is still on its way; `settle` waits for such attempts before the bot
exits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Protocol

import structlog

from bot.errors import SendFailed
from bot.models import Document, Keyed
from bot.storage.inbox import Entry, Fenced, Journal

log = structlog.get_logger(__name__)

BACKOFF = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)  # seconds before each retry; the last repeats
UNEXPECTED_TRIES = 3
SEND_SETTLE = 10.0  # seconds a reply part under way at a stop gets to be sent and recorded


class Replier(Protocol):
    """How a channel answers one chat."""

    def parts(self, text: str) -> Sequence[object]:
        """The pieces `text` goes out in: the same pieces every time, so a restart can resume."""
        ...

    async def send_part(self, part: object) -> None:
        """Send one piece (or a `Document`, as a file; a `Keyed`, with its buttons or, where the
        channel has none, `Keyed.as_text`); `SendFailed` when it did not go out."""
        ...

    def typing(self) -> AbstractAsyncContextManager[None]: ...

    async def acknowledge(self) -> None:
        """Show that work on the message began (Telegram: a reaction); never raises, and
        returns within seconds."""
        ...


class Delivery:
    def __init__(
        self,
        inbox: Journal,
        *,
        backoff: Sequence[float] = BACKOFF,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.inbox = inbox
        self.backoff = backoff
        self.sleep = sleep
        self._attempts: set[asyncio.Future[None]] = set()

    async def deliver(self, entry: Entry, replier: Replier) -> None:
        """Send the entry's recorded reply from its first part not recorded as sent."""
        parts = replier.parts(entry.reply or "")
        for index in range(entry.sent, len(parts)):
            done = index + 1

            async def record(entry: Entry = entry, done: int = done) -> None:
                await self.inbox.part_sent(entry, done)

            if not await self._send(parts[index], replier, record=record):
                return
            entry = replace(entry, sent=done)

    async def settle(self) -> None:
        """Wait for the attempts a stop left running (shielded; each is bounded by the
        channel's own timeouts), `SEND_SETTLE` seconds at the most."""
        if self._attempts:
            await asyncio.wait(self._attempts, timeout=SEND_SETTLE)

    async def notice(self, message: str | Document | Keyed, replier: Replier) -> None:
        """A short message, or a file, or a message with buttons, outside the ledger (a notice
        before the reply, a refusal, /context's file, a memory receipt)."""
        if isinstance(message, Document | Keyed):
            await self._send(message, replier)
            return
        for part in replier.parts(message):
            if not await self._send(part, replier):
                return

    async def _send(
        self, part: object, replier: Replier, *, record: Callable[[], Awaitable[None]] | None = None
    ) -> bool:
        """True once the part went out (and `record` ran); False when it never will."""
        failures = 0
        while True:
            try:
                await self._attempt(part, replier, record)
            except SendFailed as exc:
                if exc.permanent:
                    log.warning("reply_undeliverable", reason=str(exc)[:200])
                    return False
                wait = exc.retry_after or self._wait(failures)
                reason = str(exc)[:200]
            except Fenced:  # another worker has the entry now: this one sends no more
                raise
            except Exception:
                if failures + 1 >= UNEXPECTED_TRIES:
                    log.exception("reply_send_crashed")
                    return False
                wait, reason = self._wait(failures), "unexpected error"
            else:
                if failures:
                    log.info("reply_sent_after_retry", tries=failures + 1)
                return True
            if failures == 0:
                log.warning("reply_send_failed_retrying", reason=reason, wait_s=wait)
            failures += 1
            await self.sleep(wait)

    async def _attempt(
        self, part: object, replier: Replier, record: Callable[[], Awaitable[None]] | None
    ) -> None:
        """One send and, once the channel took the part, its record: shielded together."""

        async def send_and_record() -> None:
            await replier.send_part(part)
            if record is not None:
                await record()

        attempt = asyncio.ensure_future(send_and_record())
        self._attempts.add(attempt)
        attempt.add_done_callback(self._attempts.discard)
        try:
            await asyncio.shield(attempt)
        except asyncio.CancelledError:  # a stop: the turn ends once the part went and is recorded
            await asyncio.wait([attempt])  # (a queued job goes back for another replica then)
            raise

    def _wait(self, failures: int) -> float:
        return self.backoff[min(failures, len(self.backoff) - 1)]
