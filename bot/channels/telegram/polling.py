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
from typing import Any

import structlog
from telegram import Bot, BotCommand, Update
from telegram.error import Conflict, InvalidToken, RetryAfter, TelegramError
from telegram.ext import ExtBot
from telegram.request import HTTPXRequest

from bot.channels.telegram.budget import AnswersFirst
from bot.channels.telegram.buttons import Presses
from bot.channels.telegram.drafts import DraftingReplier, DraftSupport
from bot.channels.telegram.errors import TOKEN_REJECTED, startup_error
from bot.channels.telegram.files import TelegramFiles
from bot.channels.telegram.inbound import CHANNEL, to_inbound, update_id_of
from bot.channels.telegram.replies import TelegramReplier
from bot.errors import StartupError
from bot.models import Inbound
from bot.storage.files import atomic_write_text
from bot.storage.heartbeat import Heartbeat
from bot.storage.inbox import wire_hook
from bot.turn.commands.handler import COMMANDS
from bot.turn.intake import Intake, IntakeFactory, MemoryIntake
from bot.turn.router import Router
from bot.usage import OwnerLine

log = structlog.get_logger(__name__)

# the updates we ask for: new messages (not edits, not channel posts), presses of our buttons
ALLOWED = ["message", "callback_query"]
BACKOFF = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)  # seconds between failing polls; the last repeats
REJECTED_POLLS = 4  # a token rejected this many polls in a row ends the run


@dataclass(frozen=True)
class Showing:
    """How a turn shows itself in the chat while it runs."""

    stream: bool = True  # replies shown while they are written (`drafts`)
    interval: float = 1.0  # seconds between two showings
    reaction: str = ""  # set on a message when its turn starts ("": none)


class TelegramChannel:
    intake: IntakeFactory = MemoryIntake  # how what is received is queued (bot.app.channel)

    def __init__(
        self,
        router: Router,
        *,
        token: str,
        base_url: str,
        poll_timeout: int,
        typing_interval: float,
        state_path: Path,
        shutdown_grace: float = 8.0,
        heartbeat: Heartbeat | None = None,  # beaten after every poll (`python -m bot health`)
        showing: Showing | None = None,  # how a turn shows itself while it runs
        proxy: str | None = None,  # an http(s):// or socks5:// proxy for every request
        debounce: float = 0.0,  # seconds a chat's first turn waits for follow-ups
        owner_line: OwnerLine | None = None,  # connected: caps on spending tell the owners
    ) -> None:
        self.owner_line = owner_line
        self.debounce = debounce
        self.router = router
        self.proxy = proxy
        self.token = token
        self.base_url = base_url
        self.poll_timeout = poll_timeout
        self.typing_interval = typing_interval
        self.offset = Offset(state_path)
        self.shutdown_grace = shutdown_grace
        self.heartbeat = heartbeat
        self.serving = asyncio.Event()  # set once updates are taken (the start is over)
        showing = showing or Showing()
        self.stream = showing.stream
        self.stream_interval = showing.interval
        self.drafts = DraftSupport()
        self.reaction = showing.reaction

    async def run(self, stop: asyncio.Event) -> None:
        """Start, answer what a stop left in the journal, poll until `stop` is set, then give
        the running turns `shutdown_grace` seconds (what is left stays journaled)."""
        bot = ExtBot(
            self.token,
            base_url=self.base_url,
            base_file_url=file_url(self.base_url),
            rate_limiter=AnswersFirst(max_retries=3),
            request=request_via(self.proxy),
            get_updates_request=request_via(self.proxy),
        )
        await started(bot, self.base_url)
        self._connect(bot)
        await self._beat()
        try:
            intake = self._intake(bot)
            replayed = await intake.start()
            log.info("telegram_started", bot=bot.username, replayed=len(replayed))
            self.serving.set()
            journaled = (update_id_of(entry.inbound.id) for entry in replayed)
            receipts = self.router.receipts
            presses = Presses(bot, receipts.press if receipts is not None else None)
            try:
                after = max(filter(None, journaled), default=0)
                await self._poll(bot, intake, presses, stop, after=after)
            finally:
                log.info("telegram_stopping", backlog=intake.backlog())
                await presses.close(self.shutdown_grace)
                await intake.close(self.shutdown_grace)
        finally:
            with contextlib.suppress(TelegramError):
                await bot.shutdown()

    def _connect(self, bot: Bot) -> None:
        """Hand `bot` to what reaches Telegram outside a turn: media downloads, owner lines."""
        if self.router.media is not None:
            self.router.media.connect(CHANNEL, TelegramFiles(bot))
        if self.owner_line is not None:
            self.owner_line.connect(lambda chat_id, text: self._tell(bot, chat_id, text))

    def _intake(self, bot: Bot) -> Intake:
        """The chats' queues over the router, answering through `bot`; owners told in private."""
        self.router.turns.alerts.connect(lambda chat_id: self._private(bot, chat_id))
        return self.intake(
            self.router,
            lambda i: self._replier(bot, i),
            channel=CHANNEL,
            reach=lambda chat_id: self._private(bot, chat_id),
            debounce=self.debounce,
        )

    async def _poll(
        self, bot: Bot, intake: Intake, presses: Presses, stop: asyncio.Event, *, after: int
    ) -> None:
        """Fetch, journal, confirm, until `stop`. Updates up to `after` are in the journal
        already (a stop came between journaling them and saving the offset)."""
        saved = await asyncio.to_thread(self.offset.load)
        offset = max(saved or 0, after + 1) if after else saved
        outage = Outage()
        while not stop.is_set():
            fetch = asyncio.ensure_future(
                bot.get_updates(offset=offset, timeout=self.poll_timeout, allowed_updates=ALLOWED)
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
                await self._take(bot, intake, messages)
                offset = updates[-1].update_id + 1
                await asyncio.to_thread(self.offset.save, offset)

    async def _beat(self) -> None:
        if self.heartbeat is not None:
            await asyncio.to_thread(self.heartbeat.beat)

    async def _take(self, bot: Bot, intake: Intake, updates: Sequence[Update]) -> None:
        inbounds = (to_inbound(update, bot_username=bot.username) for update in updates)
        await intake.receive([inbound for inbound in inbounds if inbound is not None])

    async def _tell(self, bot: Bot, chat_id: int, text: str) -> None:
        """One short message to a private chat, outside any turn (`SendFailed` if it fails)."""
        replier = self._private(bot, chat_id)
        for part in replier.parts(text):
            await replier.send_part(part)

    def _private(self, bot: Bot, chat_id: int) -> TelegramReplier:
        """A replier for a private chat (a user's chat id is their user id)."""
        return TelegramReplier(bot, chat_id, None, typing_interval=self.typing_interval)

    def _replier(self, bot: Bot, inbound: Inbound) -> TelegramReplier:
        """A replier answering `inbound`: it reacts to it, in a group replies to it, and
        shows the reply while it is written unless streaming is off."""
        answering: dict[str, Any] = {
            "typing_interval": self.typing_interval,
            "message_id": inbound.message_id,
            "threaded": not inbound.is_private,
            "reaction": self.reaction,
        }
        if self.stream:
            return DraftingReplier(
                bot,
                inbound.chat_id,
                inbound.thread_id,
                support=self.drafts,
                interval=self.stream_interval,
                **answering,
            )
        return TelegramReplier(bot, inbound.chat_id, inbound.thread_id, **answering)


class Offset:
    """The next update id to ask Telegram for, in a small JSON file under `state/`."""

    def __init__(self, path: Path) -> None:
        self.path = path

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


async def started(bot: Bot, base_url: str) -> None:
    """Initialise the bot (getMe) and set its command menu; a `StartupError` when that fails."""
    try:
        await bot.initialize()
        await bot.set_my_commands([BotCommand(name, text) for name, text in COMMANDS])
    except TelegramError as exc:
        stopped = startup_error(exc, base_url=base_url)
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


async def check_token(token: str, base_url: str, proxy: str | None = None) -> str:
    """The bot's @username, proving the token and base URL (and proxy) work."""
    bot = Bot(
        token, base_url=base_url, base_file_url=file_url(base_url), request=request_via(proxy)
    )
    async with bot:
        return f"@{bot.username}"


def request_via(proxy: str | None, *, wired: bool = False) -> HTTPXRequest | None:
    """PTB's own HTTP client, through `proxy`; None (PTB's default) without one. `wired`: each
    request runs its turn's check at the wire (`bot.storage.inbox.wire_hook`, replicas)."""
    if wired:
        hooks = {"event_hooks": {"request": [wire_hook]}}
        return HTTPXRequest(proxy=proxy, httpx_kwargs=hooks)
    return HTTPXRequest(proxy=proxy) if proxy else None


def file_url(base_url: str) -> str:
    head, sep, _ = base_url.rstrip("/").rpartition("/bot")
    return f"{head}/file/bot" if sep else base_url
