"""The router: what a message meets — nothing, the door or /stop at once, a command, or a turn.

channel ──Inbound──▶ `route`: "nothing" (chatter not kept), "at_once" (the door's, or /stop:
                     `answer_at_once`), or "journal" ─▶ inbox.accept (the journal) ─▶ `answer`:
                     the reply made (a command, or the turn: `TurnRunner`), recorded in the
                     entry, delivered part by part (`Delivery`), the entry closed

An entry whose reply is recorded is only delivered again, never made again. A channel that
polls (Telegram) queues entries per chat (`bot.turn.intake`); one that answers in line (the
console, tests) calls `handle`. Another intake plugs in here: `route` each message, journal
what it says, and call `answer` with each entry, one chat's entries in order.

Group chatter (a message not for the bot) is journaled like any message and kept for the chat's
next turn by `bot.storage.chatter`, only from people the bot talks to: anyone else's is dropped
before the journal, and never meets the door.

After the reply, the receipts of what it stored go out (`bot.receipts`: with buttons where the
channel has them); a `/receipt` command, or the next message of someone editing a fact, is
answered by the receipts' desk instead of a command or a turn.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

import structlog

from bot.conversation import speakers
from bot.errors import StoreAway
from bot.media.reader import MediaReader
from bot.models import Inbound
from bot.receipts import ReceiptDesk
from bot.storage.chatter import ChatterStore
from bot.storage.inbox import Entry, Fenced, Journal
from bot.turn.access import AccessPolicy
from bot.turn.commands.dispatch import Commands
from bot.turn.commands.handler import Command, parse_command
from bot.turn.delivery import Delivery, Replier
from bot.turn.door import Door, Reach
from bot.turn.progress import NOTICE_AFTER, ProgressNotice
from bot.turn.runner import TurnRunner

log = structlog.get_logger(__name__)
Route = Literal["nothing", "at_once", "journal"]

SORRY = "Sorry, something went wrong on my side. Please try again."


class Router:
    def __init__(
        self,
        *,
        inbox: Journal,
        access: AccessPolicy,
        door: Door,
        commands: Commands,
        turns: TurnRunner,
        delivery: Delivery,
        chatter: ChatterStore | None = None,  # None: group messages not for the bot are dropped
        notice_after: float = NOTICE_AFTER,  # seconds before a slow command says what it does
        receipts: ReceiptDesk | None = None,  # None: no memory receipts
        reset_triggers: Sequence[str] = (),  # whole messages that act as /new (seed 004)
    ) -> None:
        self.inbox = inbox
        self.access = access
        self.door = door
        self.commands = commands
        self.turns = turns
        self.delivery = delivery
        self.chatter = chatter
        self.notice_after = notice_after
        self.receipts = receipts
        self.reset_triggers = frozenset(trigger_text(t) for t in reset_triggers if t.strip())
        # an entry not sent by anyone (`Inbound.kind`, e.g. a scheduled task): its own turn
        self.kinds: dict[str, Callable[[Inbound, Replier], Awaitable[str]]] = {}
        # each running channel's queue, for entries journaled outside it (`bot.reminders`)
        self.outlets: dict[str, Callable[[Entry], None]] = {}

    @property
    def media(self) -> MediaReader | None:
        """The turn's reader of attachments, which each channel connects to its files."""
        return self.turns.media

    def route(self, inbound: Inbound) -> Route:
        """What `inbound` meets first: nothing, an answer at once, or the journal."""
        if self.ignores(inbound):
            return "nothing"
        return "at_once" if self.jumps_queue(inbound) else "journal"

    def jumps_queue(self, inbound: Inbound) -> bool:
        """The door's messages (a stranger's, /pair, /claim …) and /stop are answered at
        once, never journaled."""
        if not inbound.addressed:
            return False
        if self.door.takes(inbound):
            return True
        command = parse_command(inbound.text)
        return command is not None and command.name == "stop"

    def ignores(self, inbound: Inbound) -> bool:
        """Group chatter (a message not for the bot) that is not kept: from someone the bot
        does not talk to (nothing of theirs is journaled or stored, and the door stays shut
        and silent), or with chatter off."""
        if inbound.addressed:
            return False
        return self.chatter is None or not self.access.allows(inbound.user_id)

    async def answer_at_once(
        self, inbound: Inbound, replier: Replier, reach: Reach | None = None
    ) -> None:
        """Answer a message that `jumps_queue`; `reach` finds the private chats the door may
        tell (an owner, of a request; a user, that they were let in)."""
        with structlog.contextvars.bound_contextvars(chat=inbound.session_key):
            if self.door.takes(inbound):
                for notice in await self.door.answer(inbound):
                    chat = notice.chat_id
                    target = replier if chat is None else reach(chat) if reach else None
                    if target is not None:
                        await self.delivery.notice(notice.text, target)
                if (held := self.door.release(inbound.user_id)) is not None:
                    await self.handle(held, replier, reach)  # sent before they claimed the bot
                return
            command = parse_command(inbound.text)
            if command is not None:
                answer = await self.commands.run(command, inbound)
                await self.delivery.notice(answer.text, replier)

    async def handle(self, inbound: Inbound, replier: Replier, reach: Reach | None = None) -> None:
        """A message from a channel that answers in line: at once, or journaled and answered."""
        route = self.route(inbound)
        if route == "at_once":
            await self.answer_at_once(inbound, replier, reach)
        elif route == "journal" and (entry := await self.inbox.accept(inbound)) is not None:
            await self.answer(entry, replier)

    async def replay(self, replier_for: Callable[[Inbound], Replier], *, channel: str) -> int:
        """Answer the channel's journaled messages a stop left unanswered, in arrival order."""
        pending = [e for e in await self.inbox.pending() if e.inbound.channel == channel]
        for entry in pending:
            await self.answer(entry, replier_for(entry.inbound))
        return len(pending)

    async def answer(self, entry: Entry, replier: Replier) -> None:
        """A journaled message's life: its reply made unless recorded, recorded, delivered, the
        entry closed. Cancelled (shutting down), the entry stays for the next start."""
        inbound = entry.inbound
        with structlog.contextvars.bound_contextvars(chat=inbound.session_key):
            if not inbound.addressed:
                await self._keep_chatter(inbound)
            elif entry.reply is None:
                entry = await self.inbox.answered(entry, await self._reply(inbound, replier))
            else:
                log.info("inbox_resend", inbound=inbound.id, parts_sent=entry.sent)
            if entry.reply:
                await self.delivery.deliver(entry, replier)
            if self.receipts is not None and inbound.addressed:
                await self.receipts.show(inbound, lambda r: self.delivery.notice(r, replier))
            await self.inbox.done(inbound.id, fence=entry.fence)

    async def _keep_chatter(self, inbound: Inbound) -> None:
        """Group chatter, kept for the chat's next turn (never a turn of its own)."""
        if self.chatter is not None and self.access.allows(inbound.user_id):
            await self.chatter.keep(inbound.session_key, speakers.said(inbound))

    async def _reply(self, inbound: Inbound, replier: Replier) -> str:
        """The command's answer, or the turn's; `SORRY` when something unexpected broke."""
        try:
            if (own_turn := self.kinds.get(inbound.kind)) is not None:
                return await own_turn(inbound, replier)
            if self.receipts is not None and (taken := await self.receipts.intercept(inbound)):
                return taken
            if (command := self._command_of(inbound)) is not None:
                return await self._command(command, inbound, replier)
            return await self.turns.run(inbound, replier)
        except (asyncio.CancelledError, Fenced, StoreAway):  # the turn is another's, or later
            raise
        except Exception:
            log.exception("turn_failed", inbound=inbound.id)
            return SORRY

    def _command_of(self, inbound: Inbound) -> Command | None:
        """The message's command: a /command, or a reset trigger as /new."""
        if (command := parse_command(inbound.text)) is not None:
            return command
        if self.reset_triggers and trigger_text(inbound.text) in self.reset_triggers:
            log.info("reset_trigger", chars=len(inbound.text))
            return Command(name="new", args="")
        return None

    async def _command(self, command: Command, inbound: Inbound, replier: Replier) -> str:
        """A command's answer (a file it has goes first, outside the ledger); one that takes
        time shows typing from its start, and says what it is doing if it takes longer than
        `notice_after` (`bot.turn.progress`)."""
        if not self.commands.takes_time(command):
            answer = await self.commands.run(command, inbound)
        else:

            async def say(text: str) -> None:
                await self.delivery.notice(text, replier)

            async with replier.typing(), ProgressNotice(say, after=self.notice_after) as progress:
                answer = await self.commands.run(command, inbound, progress=progress)
        if answer.document is not None:
            await self.delivery.notice(answer.document, replier)
        return answer.text


def trigger_text(text: str) -> str:
    """A message as a reset trigger is matched: words only, any case ("New chat!" = "new chat")."""
    return " ".join(re.findall(r"\w+", text.casefold()))
