"""`TelegramChannel`: long polling of our own, so that no update is confirmed before it is
journaled.

Telegram drops an update once a `getUpdates` call asks for a later offset. The loop asks for the
next batch only after the last one is in the journal (`Intake.receive`) and the next offset is
saved in `state/` (so a restart does not take a journaled or answered update again). Everything
else happens in the chats' workers, never in this loop.

Outages: a failing poll is tried again with backoff and logged once per outage (one warning when
it starts, one line when it is over, no tracebacks). A token Telegram keeps rejecting ends the
run with a `StartupError` (one line; a supervisor restarts the process), as it does at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from telegram import Bot, BotCommand, Update
from telegram.error import Conflict, InvalidToken, RetryAfter, TelegramError

from bot.channels.telegram.budget import Pace
from bot.channels.telegram.buttons import Presses
from bot.channels.telegram.connect import telegram_bot
from bot.channels.telegram.drafts import DraftingReplier, DraftSupport
from bot.channels.telegram.errors import TOKEN_REJECTED, startup_error
from bot.channels.telegram.files import TelegramFiles
from bot.channels.telegram.inbound import ALLOWED, CHANNEL, to_inbound, update_id_of
from bot.channels.telegram.replies import TelegramReplier
from bot.errors import StartupError
from bot.models import Inbound
from bot.settings import TelegramSettings
from bot.storage.files import atomic_write_text
from bot.storage.heartbeat import Heartbeat
from bot.turn.commands.handler import COMMANDS
from bot.turn.intake import Intake, IntakeFactory, MemoryIntake
from bot.turn.router import Router
from bot.usage import OwnerLine

if TYPE_CHECKING:
    from bot.channels.telegram.webhook import Hook

log = structlog.get_logger(__name__)

BACKOFF = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)  # seconds between failing polls; the last repeats
REJECTED_POLLS = 4  # a token rejected this many polls in a row ends the run


@dataclass(frozen=True)
class Showing:
    """How a turn shows itself in the chat while it runs."""

    stream: bool = True  # replies shown while they are written (`drafts`)
    interval: float = 1.0  # seconds between two showings
    reaction: str = ""  # set on a message when its turn starts ("": none)
    typing: float = 4.0  # seconds between two "typing…" actions

    @classmethod
    def from_settings(cls, telegram: TelegramSettings) -> Showing:
        return cls(
            stream=telegram.stream,
            interval=telegram.stream_interval,
            reaction=telegram.reaction,
            typing=telegram.typing_interval,
        )


class TelegramChannel:
    """The chats on Telegram over `router`, through `bot` (built once, by `from_settings`:
    `connect.telegram_bot`); updates taken by long polling (`run_polling`) or by webhooks
    (`run_webhook`, replicated mode)."""

    def __init__(
        self,
        bot: Bot,
        router: Router,
        *,
        intake: IntakeFactory = MemoryIntake,  # how what is received is queued
        showing: Showing | None = None,  # how a turn shows itself while it runs
        debounce: float = 0.0,  # seconds a chat's first turn waits for follow-ups
        heartbeat: Heartbeat | None = None,  # beaten after every poll (`python -m bot health`)
        owner_line: OwnerLine | None = None,  # connected: caps on spending tell the owners
    ) -> None:
        self.bot = bot
        self.router = router
        self.intake = intake
        self.showing = showing or Showing()
        self.debounce = debounce
        self.heartbeat = heartbeat
        self.owner_line = owner_line
        self.serving = asyncio.Event()  # set once updates are taken (the start is over)
        self.drafts = DraftSupport()

    @classmethod
    def from_settings(
        cls,
        telegram: TelegramSettings,
        router: Router,
        intake: IntakeFactory,
        *,
        token: str,
        heartbeat: Heartbeat | None = None,
        owner_line: OwnerLine | None = None,
        pace: Pace | None = None,  # webhooks: the send rate the replicas share
    ) -> TelegramChannel:
        """The channel over its `Bot`, built here once: polling (`telegram.mode`), or
        webhooks sent at the shared `pace`."""
        webhook = telegram.mode == "webhook"
        bot = telegram_bot(
            token,
            base_url=telegram.base_url,
            proxy=telegram.proxy,
            pace=pace if webhook else None,
            polls=not webhook,
        )
        return cls(
            bot,
            router,
            intake=intake,
            showing=Showing.from_settings(telegram),
            debounce=telegram.debounce,
            heartbeat=heartbeat,
            owner_line=owner_line,
        )

    async def run_polling(
        self, stop: asyncio.Event, *, offset_path: Path, poll_timeout: int, grace: float = 8.0
    ) -> None:
        """Start, answer what a stop left in the journal, poll (`poll_timeout`: seconds a poll
        waits) until `stop` is set, then give the running turns `grace` seconds (what is left
        stays journaled). The next offset is saved at `offset_path`."""
        bot = self.bot
        intake = await self.open()
        try:
            await self._beat()
            replayed = await intake.start()
            log.info("telegram_started", bot=bot.username, replayed=len(replayed))
            self.serving.set()
            journaled = (update_id_of(entry.inbound.id) for entry in replayed)
            receipts = self.router.receipts
            presses = Presses(bot, receipts.press if receipts is not None else None)
            try:
                after = max(filter(None, journaled), default=0)
                polls = Polls(Offset(offset_path), poll_timeout)
                await self._poll(polls, intake, presses, stop, after=after)
            finally:
                log.info("telegram_stopping", backlog=intake.backlog())
                await presses.close(grace)
                await intake.close(grace)
        finally:
            with contextlib.suppress(TelegramError):
                await bot.shutdown()

    async def run_webhook(self, stop: asyncio.Event, hook: Hook, *, grace: float = 8.0) -> None:
        """Start, set the webhook, serve until `stop` is set, then give the running turns
        `grace` seconds (the rest stay queued for the other replicas)."""
        from bot.channels.telegram.webhook import serve  # aiohttp: the `replicas` extra

        intake = await self.open()
        await intake.start()
        try:
            await serve(self.bot, intake, hook, stop, serving=self.serving)
        finally:
            log.info("telegram_stopping", running=intake.backlog())
            await intake.close(grace)
            await self.bot.shutdown()

    async def open(self) -> Intake:
        """Initialise the bot and hand it to what reaches Telegram outside a turn (media
        downloads, owner lines, alerts); the chats' queues, answering through it."""
        bot = self.bot
        await started(bot)
        if self.router.media is not None:
            self.router.media.connect(CHANNEL, TelegramFiles(bot))
        if self.owner_line is not None:
            self.owner_line.connect(self._tell)
        self.router.turns.alerts.connect(self._private)
        return self.intake(
            self.router,
            self._replier,
            channel=CHANNEL,
            reach=self._private,
            debounce=self.debounce,
        )

    async def _poll(
        self, polls: Polls, intake: Intake, presses: Presses, stop: asyncio.Event, *, after: int
    ) -> None:
        """Fetch, journal, confirm, until `stop`. Updates up to `after` are in the journal
        already (a stop came between journaling them and saving the offset)."""
        saved = await asyncio.to_thread(polls.offset.load)
        offset = max(saved or 0, after + 1) if after else saved
        outage = Outage()
        while not stop.is_set():
            fetch = asyncio.ensure_future(
                self.bot.get_updates(offset=offset, timeout=polls.timeout, allowed_updates=ALLOWED)
            )
            if not await _first(fetch, stop):
                return
            await self._beat()
            try:
                updates = fetch.result()
            except TelegramError as exc:
                await _pause(outage.failed(exc), stop)
                continue
            outage.over()
            if updates:
                messages = [update for update in updates if not presses.take(update)]
                await self._take(intake, messages)
                offset = updates[-1].update_id + 1
                await asyncio.to_thread(polls.offset.save, offset)

    async def _beat(self) -> None:
        if self.heartbeat is not None:
            await asyncio.to_thread(self.heartbeat.beat)

    async def _take(self, intake: Intake, updates: Sequence[Update]) -> None:
        inbounds = (to_inbound(update, bot_username=self.bot.username) for update in updates)
        await intake.receive([inbound for inbound in inbounds if inbound is not None])

    async def _tell(self, chat_id: int, text: str) -> None:
        """One short message to a private chat, outside any turn (`SendFailed` if it fails)."""
        replier = self._private(chat_id)
        for part in replier.parts(text):
            await replier.send_part(part)

    def _private(self, chat_id: int) -> TelegramReplier:
        """A replier for a private chat (a user's chat id is their user id)."""
        return TelegramReplier(self.bot, chat_id, None, typing_interval=self.showing.typing)

    def _replier(self, inbound: Inbound) -> TelegramReplier:
        """A replier answering `inbound`: it reacts to it, in a group replies to it, and
        shows the reply while it is written unless streaming is off."""
        showing, bot = self.showing, self.bot
        where = (bot, inbound.chat_id, inbound.thread_id)
        threaded = not inbound.is_private
        if showing.stream:
            return DraftingReplier(
                *where,
                support=self.drafts,
                interval=showing.interval,
                typing_interval=showing.typing,
                message_id=inbound.message_id,
                threaded=threaded,
                reaction=showing.reaction,
            )
        return TelegramReplier(
            *where,
            typing_interval=showing.typing,
            message_id=inbound.message_id,
            threaded=threaded,
            reaction=showing.reaction,
        )


@dataclass(frozen=True)
class Polls:
    """A run's long polls: where the next offset is kept, and how long a poll waits."""

    offset: Offset
    timeout: int  # seconds


@dataclass(eq=False)
class Offset:
    """The next update id to ask Telegram for, in a small JSON file under `state/`."""

    path: Path

    def load(self) -> int | None:
        try:
            return int(json.loads(self.path.read_text(encoding="utf-8"))["next_update_id"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("telegram_offset_unreadable", path=str(self.path), reason=str(exc))
            return None

    def save(self, next_update_id: int) -> None:
        atomic_write_text(self.path, json.dumps({"next_update_id": next_update_id}))


class Outage:
    """A run of failing polls: one warning when it starts, one line when it ends, the backoff
    in between; a token rejected `REJECTED_POLLS` times in a row is a `StartupError`."""

    def __init__(self) -> None:
        self.failures = 0
        self.rejected = 0
        self.since = 0.0

    def failed(self, exc: TelegramError) -> float:
        """Seconds to wait before the next poll."""
        self.rejected = self.rejected + 1 if isinstance(exc, InvalidToken) else 0
        if self.rejected >= REJECTED_POLLS:
            raise StartupError(TOKEN_REJECTED)
        if self.failures == 0:
            self.since = time.monotonic()
            event = "telegram_conflict" if isinstance(exc, Conflict) else "telegram_unreachable"
            log.warning(event, error=type(exc).__name__, detail=str(exc)[:200])
        self.failures += 1
        if isinstance(exc, RetryAfter):
            after = exc.retry_after
            return after.total_seconds() if isinstance(after, timedelta) else float(after)
        return BACKOFF[min(self.failures - 1, len(BACKOFF) - 1)]

    def over(self) -> None:
        if self.failures:
            down = round(time.monotonic() - self.since, 1)
            log.info("telegram_reachable_again", failed_polls=self.failures, down_s=down)
        self.failures = self.rejected = 0


async def started(bot: Bot) -> None:
    """Initialise the bot (getMe) and set its command menu; a `StartupError` when that fails."""
    try:
        await bot.initialize()
        await bot.set_my_commands([BotCommand(name, text) for name, text in COMMANDS])
    except TelegramError as exc:
        shown = bot.base_url.replace(bot.token, "")  # the Bot API's address, not the token
        stopped = startup_error(exc, base_url=shown)
        if stopped is None:
            raise
        raise stopped from None


async def _first(fetch: asyncio.Future[tuple[Update, ...]], stop: asyncio.Event) -> bool:
    """Wait for the poll or the stop; False (the poll cancelled) when the stop came first."""
    stopping = asyncio.ensure_future(stop.wait())
    either: list[asyncio.Future[Any]] = [fetch, stopping]
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if fetch.done():
        return True
    fetch.cancel()
    with contextlib.suppress(asyncio.CancelledError, TelegramError):
        await fetch
    return False


async def _pause(seconds: float, stop: asyncio.Event) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
