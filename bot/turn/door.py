"""`Door`: what a message meets before the journal when its sender is not let in yet, or when
it is /pair, /unpair or /claim — and every word the chat reads about access.

- A stranger in a private chat gets one notice with their Telegram id and a pairing code, and
  the owners hear of it in their private chats (named by their name and username); further
  messages while the request waits are dropped silently, but `/start` (Telegram's Start
  button) sends the notice again, at most every `RESEND_EVERY` (30 s): one who lost it gets it
  back at once, one who keeps pressing does not flood the chat. With `MAX_PENDING` requests
  waiting they are told once to try later; in a group, once to write in private; with pairing
  off, once that the bot is private; while the bot has no owner, once that it has none.
  Nothing of theirs is journaled, stored or sent to the model (but see `release`).
- `/claim CODE` (the code kept in `state/paired.json` while the bot has no owner: in the log at
  start, in `python -m bot pair list` and in doctor) makes the first private chat that sends it
  an owner; the last message that chat sent before claiming is then answered (`release`).
- `/pair` (owners, in private) lists the requests and who is paired; `/pair CODE` lets its
  user in (and tells them); `/unpair ID` shuts a paired user out again.

No `<…>` in these words: Telegram's rendering takes it for a tag and drops it.

The rules behind the words: `bot.turn.pairing`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog

from bot import shell
from bot.errors import StorageError
from bot.models import Inbound
from bot.settings import TelegramSettings
from bot.storage.roster import Member, Request, RosterStore
from bot.turn.access import AccessPolicy
from bot.turn.commands.handler import parse_command
from bot.turn.delivery import Replier
from bot.turn.notices import ToldNotices
from bot.turn.pairing import (
    PLACEHOLDER_OWNER,
    Asked,
    Pairing,
    Refusal,
    grouped,
    new_code,
    normalized,
)

log = structlog.get_logger(__name__)

Reach = Callable[[int], Replier]  # a replier for a user's private chat on the same channel
COMMANDS = frozenset({"pair", "unpair", "claim"})
RESEND_EVERY = timedelta(seconds=30)  # a waiting stranger's /start sends their code again
HELD_USERS = 10  # strangers whose last message an unclaimed bot keeps, to answer once claimed

CLAIM_LOG = "No owner yet: send /claim {code} to your bot in a private chat"
PLACEHOLDER_LOG = (
    "BOT_TELEGRAM__OWNER_IDS holds the example id 123456789, which is nobody's: it is ignored"
)
ASK = (
    "Hi! I'm a private assistant, and I don't know you yet.\n"
    "Your Telegram id: {user_id}\n"
    "Your pairing code: {code} (valid for {ttl})\n"
    "I've asked my owner; once they approve, just write to me again."
)
OWNER_TOLD = (
    "{who} (Telegram id {user_id}) asks to talk to me.\n"
    "To let them in, send: /pair {code}\n"
    "The code is valid for {ttl}; /pair lists every request."
)
FULL = (
    "Hi! I'm a private assistant. Too many people are waiting for my owner's answer right now: "
    "please write again in {ttl}. (Your Telegram id: {user_id})"
)
GROUP = "I only talk with people my owner has let in. To ask for access, write to me in private."
REFUSAL = (
    "Sorry, this is a private assistant. Ask its owner for access (your Telegram id: {user_id})."
)
# {pair_list}: how to run `pair list` where the bot runs (`bot.shell`)
UNCLAIMED = (
    "This bot has no owner yet. If it's yours, send /claim with its claim code: run "
    "{pair_list} where it runs, or find the log line that starts with "
    '"No owner yet". I\'ll answer your message once you have. Your Telegram id: {user_id}'
)
WELCOME = "You're in: my owner approved your request. Write to me any time."
CLAIMED = (
    "Done: you are my owner now (Telegram id {user_id}). Our private chat sees all my memory. "
    "When someone else writes to me, I'll send you their pairing code: /pair CODE lets them in."
)
CLAIM_WRONG = (
    "That is not the claim code. Run {pair_list} where the bot runs, or copy it from the "
    'bot\'s log, the line that starts with "No owner yet: send /claim …".'
)
CLAIM_PRIVATE = "Send /claim in a private chat with me, not in a group."
OWNED = "I already have an owner."
PAIR_LIST = shell.command("pair list")
OWNERS_ONLY = "Only my owner can use /{command}."
PRIVATE_ONLY = "Use /{command} in our private chat."
PAIRING_OFF = "Pairing is off (BOT_TELEGRAM__PAIRING=false); /unpair still works."
UNKNOWN_CODE = "No request has the code {code}. /pair lists the requests waiting."
EXPIRED = "The code {code} has expired. Ask {who} to write to me again for a new one."
PAIRED = "Paired: {who} (id {user_id}) can talk to me now. /unpair {user_id} undoes it."
UNPAIR_USAGE = "Usage: /unpair ID, with the Telegram id /pair lists."


@dataclass(frozen=True)
class Notice:
    text: str
    chat_id: int | None = None  # None: the chat the message came from; else a private chat


class Door:
    def __init__(
        self,
        access: AccessPolicy,
        pairing: Pairing,
        *,
        now: Callable[[], datetime],
        enabled: bool = True,  # False: strangers get `REFUSAL`, /pair approves nothing
        placeholder: bool = False,  # the configured owners held the example id
        told: ToldNotices | None = None,  # the one-time notices heard (None: this process's)
    ) -> None:
        self.access = access
        self.pairing = pairing
        self.now = now
        self.enabled = enabled
        self.placeholder = placeholder
        self.claim_code: str | None = None  # while the bot has no owner: the kept code
        self.told = told
        self._told: dict[tuple[str, int], datetime | None] = {}  # notice, user → until (None: ∞)
        self._held: dict[int, Inbound] = {}  # user → their last message before a claim

    @classmethod
    def from_settings(
        cls,
        telegram: TelegramSettings,
        roster: RosterStore,
        now: Callable[[], datetime],
        *,
        told: ToldNotices | None = None,
    ) -> Door:
        """The door over who may talk (the settings and the roster: `access`)."""
        return cls(
            AccessPolicy.from_settings(telegram, roster),
            Pairing(roster, now=now),
            now=now,
            enabled=telegram.pairing,
            placeholder=PLACEHOLDER_OWNER in telegram.owner_ids,
            told=told,
        )

    async def start(self) -> None:
        """Say who owns the bot; with no owner, make the claim code and log it."""
        if self.placeholder:
            log.warning(PLACEHOLDER_LOG)
        owners = self.access.owners()
        if owners:
            log.debug("owners", ids=sorted(owners), pairing=self.enabled)
        else:
            await self._claimable()

    async def stop(self) -> None:
        pass

    async def _claimable(self) -> None:
        """The kept claim code (made now if there is none) in the log, once per start."""
        if self.claim_code is not None:
            return
        try:
            self.claim_code = await self.pairing.claim_code()
        except StorageError as exc:  # a damaged roster: a code for this start only
            log.warning("claim_code_not_kept", reason=str(exc))
            self.claim_code = new_code()
        log.warning(CLAIM_LOG.format(code=grouped(self.claim_code)))

    def release(self, user_id: int) -> Inbound | None:
        """The message `user_id` sent before they claimed the bot, once they own it (once)."""
        if not self.access.is_owner(user_id):
            return None
        return self._held.pop(user_id, None)

    def takes(self, inbound: Inbound) -> bool:
        """Whether the door answers this message (never journaled, never the model's)."""
        if not self.access.allows(inbound.user_id):
            return True
        command = parse_command(inbound.text)
        return command is not None and command.name in COMMANDS

    async def answer(self, inbound: Inbound) -> list[Notice]:
        """What to send, and where, for a message the door `takes`."""
        command = parse_command(inbound.text)
        name = command.name if command is not None and command.name in COMMANDS else None
        allowed = self.access.allows(inbound.user_id)
        if name == "claim" and (allowed or self.claim_code is not None):
            return [Notice(await self._claim(inbound, command.args if command else ""))]
        if not allowed:
            return await self._stranger(inbound)
        if name is None:
            return []
        if not self.access.is_owner(inbound.user_id):
            return [Notice(OWNERS_ONLY.format(command=name))]
        if not inbound.is_private:
            return [Notice(PRIVATE_ONLY.format(command=name))]
        args = command.args if command is not None else ""
        if name == "unpair":
            return [Notice((await self.unpair(args))[0])]
        return await self._pair(args)

    # ------------------------------------------------------------------ strangers

    async def _stranger(self, inbound: Inbound) -> list[Notice]:
        user_id = inbound.user_id
        log.info("access_refused", user=user_id)
        if not self.access.owners():
            await self._claimable()  # an owner removed by hand from state/paired.json meanwhile
            self._hold(inbound)
            return await self._once(
                "unclaimed", user_id, UNCLAIMED.format(user_id=user_id, pair_list=PAIR_LIST)
            )
        if not self.enabled:
            return await self._once("off", user_id, REFUSAL.format(user_id=user_id))
        if not inbound.is_private:
            return await self._once("group", user_id, GROUP)
        asked, request = await self.pairing.ask(
            user_id=user_id, chat_id=inbound.chat_id, name=inbound.person
        )
        ttl = _duration(self.pairing.ttl)
        code = grouped(request.code)
        if asked is Asked.WAITING:
            if not _is_start(inbound) or self.now() - request.at < RESEND_EVERY:
                return []
            left = _duration(request.expires_at - self.now())
            text = ASK.format(user_id=user_id, code=code, ttl=left)
            return await self._once("again", user_id, text, until=self.now() + RESEND_EVERY)
        if asked is Asked.FULL:
            text = FULL.format(ttl=ttl, user_id=user_id)
            return await self._once("full", user_id, text, until=self.now() + self.pairing.ttl)
        log.info("pairing_requested", user=user_id)
        told = OWNER_TOLD.format(who=_who(request), user_id=user_id, code=code, ttl=ttl)
        owners = sorted(self.access.owners())
        return [
            Notice(ASK.format(user_id=user_id, code=code, ttl=ttl)),
            *(Notice(told, chat_id=owner) for owner in owners),
        ]

    def _hold(self, inbound: Inbound) -> None:
        """Keep a private message (not a command) to answer once its sender claims the bot."""
        if not inbound.is_private or parse_command(inbound.text) is not None:
            return
        self._held.pop(inbound.user_id, None)
        self._held[inbound.user_id] = inbound
        while len(self._held) > HELD_USERS:
            del self._held[next(iter(self._held))]

    async def _once(
        self, kind: str, user_id: int, text: str, *, until: datetime | None = None
    ) -> list[Notice]:
        """`text` unless this user heard this kind of notice (and it still holds)."""
        if self.told is not None:
            first = await self.told.first(kind, user_id, now=self.now(), until=until)
            return [Notice(text)] if first else []
        key = (kind, user_id)
        if key in self._told:
            held = self._told[key]
            if held is None or held > self.now():
                return []
        self._told[key] = until
        return [Notice(text)]

    # ------------------------------------------------------------------ claiming

    async def _claim(self, inbound: Inbound, args: str) -> str:
        code = self.claim_code
        if code is None:
            return OWNED
        if not inbound.is_private:
            return CLAIM_PRIVATE
        if not secrets.compare_digest(normalized(args).encode(), code.encode()):
            log.warning("claim_refused", user=inbound.user_id)
            return CLAIM_WRONG.format(pair_list=PAIR_LIST)
        try:
            claimed = await self.pairing.claim(user_id=inbound.user_id, name=inbound.person)
        except StorageError as exc:
            return f"I could not save that: {exc}"
        self.claim_code = None
        if not claimed:
            return OWNED
        log.info("claimed", owner=inbound.user_id)
        return CLAIMED.format(user_id=inbound.user_id)

    # ------------------------------------------------------------------ owners' commands

    async def _pair(self, args: str) -> list[Notice]:
        if not self.enabled:
            return [Notice(PAIRING_OFF)]
        if not args:
            return [Notice(self.listing())]
        reply, welcome = await self.approve(args)
        return [Notice(reply), *([welcome] if welcome is not None else [])]

    async def approve(self, code: str) -> tuple[str, Notice | None]:
        """The answer to `/pair CODE`, and the notice to the user it let in."""
        try:
            approval = await self.pairing.approve(code)
        except StorageError as exc:
            return f"I could not save that: {exc}", None
        if approval is None:
            return UNKNOWN_CODE.format(code=grouped(normalized(code))), None
        request = approval.request
        if approval.refusal is Refusal.EXPIRED:
            return EXPIRED.format(code=grouped(request.code), who=_who(request)), None
        log.info("paired", user=request.user_id)
        reply = PAIRED.format(who=_who(request), user_id=request.user_id)
        return reply, Notice(WELCOME, chat_id=request.chat_id)

    async def unpair(self, args: str) -> tuple[str, bool]:
        """The answer to `/unpair ID`, and whether someone was unpaired."""
        text = args.strip()
        if not text.isdecimal():
            return UNPAIR_USAGE, False
        user_id = int(text)
        if self.access.is_owner(user_id):
            return f"{user_id} is an owner; owners cannot be unpaired.", False
        try:
            gone = await self.pairing.unpair(user_id)
        except StorageError as exc:
            return f"I could not save that: {exc}", False
        if gone is not None:
            log.info("unpaired", user=user_id)
            return f"Unpaired {_name(gone)} (id {user_id}): they can no longer talk to me.", True
        if user_id in self.access.configured_allowed:
            return (
                f"{user_id} is allowed by BOT_TELEGRAM__ALLOWED_USER_IDS: remove it there (and "
                "restart me) to shut them out."
            ), False
        return f"{user_id} is not paired. /pair lists who is.", False

    def listing(self) -> str:
        """The requests waiting and the users paired (`/pair` alone)."""
        now = self.now()
        waiting = self.pairing.waiting()
        claim = self.pairing.kept_claim_code() if not self.access.owners() else None
        lines = [CLAIM_LOG.format(code=grouped(claim)) + "."] if claim else []
        lines.append("Waiting for approval:" if waiting else "No requests are waiting.")
        for request in waiting:
            left = _duration(request.expires_at - now)
            who = f"{_who(request)}, id {request.user_id}"
            lines.append(f"• {who}: /pair {grouped(request.code)} ({left} left)")
        paired = self.pairing.paired()
        if paired:
            names = ", ".join(f"{_name(m)} (id {m.id})" for m in paired)
            lines.append(f"Paired: {names}. /unpair ID removes someone.")
        else:
            lines.append("Nobody is paired yet.")
        return "\n".join(lines)


def _is_start(inbound: Inbound) -> bool:
    command = parse_command(inbound.text)
    return command is not None and command.name == "start"


def _who(request: Request) -> str:
    return request.name or "someone"


def _name(member: Member) -> str:
    return member.name or "someone"


def _duration(span: timedelta) -> str:
    """`1 hour`, `42 min`: a span as the chat reads it."""
    minutes = max(1, round(span.total_seconds() / 60))
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"{hours} hour" + ("s" if hours > 1 else "")
    return f"{minutes} min"
