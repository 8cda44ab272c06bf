"""Pairing and claiming: the rules about codes, over `state/paired.json` (`bot.storage.roster`).

A stranger's request gets a one-time code (`CODE_LENGTH` characters of `ALPHABET`: no 0/O or
1/I/L), valid `CODE_TTL`; at most `MAX_PENDING` requests wait at once. An owner approves one
by its code (in their chat or from a shell) and its user is paired until an owner unpairs them.
A bot with no owner (none configured, or only `.env.example`'s `PLACEHOLDER_OWNER`) has one
claim code, made once and kept in the roster until used (a restart keeps it): the first private
chat that sends it becomes an owner, and the code is void. Both kinds of code are shown in one
shape, `grouped` (`K7M3-Q9XP`), and read back in any case, with or without the dash
(`normalized`). What the chat reads about all this: `bot.turn.door`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import KW_ONLY, dataclass, replace
from datetime import datetime, timedelta
from enum import Enum

from bot.storage.roster import Member, Request, Roster, RosterStore

ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 8
CODE_TTL = timedelta(hours=1)
MAX_PENDING = 3
KEEP_EXPIRED = timedelta(days=1)  # an expired request is kept this long, to say "expired"
PLACEHOLDER_OWNER = 123456789  # the example id `.env.example` used to ship: never an owner


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normalized(code: str) -> str:
    """A code as typed (any case, spaces or dashes) in its stored form."""
    return "".join(code.split()).replace("-", "").upper()


def grouped(code: str) -> str:
    """`K7M3Q9XP` as `K7M3-Q9XP`, easier to copy by eye."""
    return f"{code[:4]}-{code[4:]}"


def real_owners(owner_ids: Iterable[int]) -> tuple[int, ...]:
    """The configured owners without the example placeholder."""
    return tuple(i for i in owner_ids if i != PLACEHOLDER_OWNER)


class Asked(Enum):
    """What became of a stranger's request."""

    NEW = "new"  # a request with a new code: tell them and the owners
    WAITING = "waiting"  # one of theirs is waiting already: say nothing
    FULL = "full"  # `MAX_PENDING` wait already: try later


class Refusal(Enum):
    UNKNOWN = "unknown"
    EXPIRED = "expired"


@dataclass(frozen=True)
class Approval:
    request: Request  # the request the code named
    refusal: Refusal | None = None  # None: its user is paired now


@dataclass(eq=False)
class Pairing:
    roster: RosterStore
    _: KW_ONLY
    now: Callable[[], datetime]
    ttl: timedelta = CODE_TTL
    max_pending: int = MAX_PENDING

    def waiting(self) -> list[Request]:
        """The requests an owner may still approve, oldest first."""
        now = self.now()
        return [r for r in self.roster.current().pending if r.expires_at > now]

    def paired(self) -> tuple[Member, ...]:
        return self.roster.current().paired

    async def ask(self, *, user_id: int, chat_id: int, name: str | None) -> tuple[Asked, Request]:
        """Open a request for `user_id` unless one waits already or there is no room."""
        now = self.now()

        def edit(roster: Roster) -> tuple[Roster, tuple[Asked, Request]]:
            live = [r for r in roster.pending if r.expires_at > now]
            for request in live:
                if request.user_id == user_id:
                    return roster, (Asked.WAITING, request)
            request = Request(new_code(), user_id, chat_id, name, now, now + self.ttl)
            if len(live) >= self.max_pending:
                return roster, (Asked.FULL, request)
            kept = tuple(r for r in self._kept(roster.pending) if r.user_id != user_id)
            return roster.with_pending((*kept, request)), (Asked.NEW, request)

        return await self.roster.change(edit)

    async def approve(self, code: str) -> Approval | None:
        """Pair the user whose request has `code`; None when no request has it."""
        code, now = normalized(code), self.now()

        def edit(roster: Roster) -> tuple[Roster, Approval | None]:
            found = next((r for r in roster.pending if r.code == code), None)
            if found is None:
                return roster, None
            if found.expires_at <= now:
                return roster, Approval(found, Refusal.EXPIRED)
            rest = tuple(r for r in self._kept(roster.pending) if r.code != code)
            paired = tuple(m for m in roster.paired if m.id != found.user_id)
            member = Member(found.user_id, found.name, now)
            changed = replace(roster, paired=(*paired, member), pending=rest)
            return changed, Approval(found)

        return await self.roster.change(edit)

    async def unpair(self, user_id: int) -> Member | None:
        """Remove a paired user; who they were, or None when they were not paired."""

        def edit(roster: Roster) -> tuple[Roster, Member | None]:
            gone = next((m for m in roster.paired if m.id == user_id), None)
            paired = tuple(m for m in roster.paired if m.id != user_id)
            return replace(roster, paired=paired), gone

        return await self.roster.change(edit)

    async def claim_code(self) -> str:
        """The code that claims the bot: the kept one, or a new one, kept from now on."""

        def edit(roster: Roster) -> tuple[Roster, str]:
            if roster.claim_code:
                return roster, roster.claim_code
            code = new_code()
            return replace(roster, claim_code=code), code

        return await self.roster.change(edit)

    def kept_claim_code(self) -> str | None:
        """The claim code kept in the roster, if one was made and not used yet."""
        return self.roster.current().claim_code

    async def claim(self, *, user_id: int, name: str | None) -> bool:
        """Make `user_id` the owner (the claim code is used up), unless someone claimed the
        bot first."""
        now = self.now()

        def edit(roster: Roster) -> tuple[Roster, bool]:
            if roster.owners:
                return roster, False
            owner = Member(user_id, name, now)
            paired = tuple(m for m in roster.paired if m.id != user_id)
            return replace(roster, owners=(owner,), paired=paired, claim_code=None), True

        return await self.roster.change(edit)

    def _kept(self, pending: Iterable[Request]) -> tuple[Request, ...]:
        """The requests worth keeping: live ones, and expired ones for `KEEP_EXPIRED`."""
        oldest = self.now() - KEEP_EXPIRED
        return tuple(r for r in pending if r.expires_at > oldest)


@dataclass(frozen=True)
class Owners:
    """Who owns the bot, for `doctor` and the start-up log."""

    configured: tuple[int, ...]  # BOT_TELEGRAM__OWNER_IDS, without the placeholder
    claimed: tuple[int, ...]  # by /claim, in state/paired.json
    placeholder: bool  # the settings still hold `PLACEHOLDER_OWNER`
    claim_code: str | None = None  # the kept claim code (made at the bot's first start)

    @property
    def any(self) -> bool:
        return bool(self.configured or self.claimed)


def owners(owner_ids: Iterable[int], roster: Roster) -> Owners:
    """Whether the bot has an owner: configured (`owner_ids`, the setting) or claimed (in the
    `roster`). For `python -m bot doctor`."""
    ids = tuple(owner_ids)
    claimed = tuple(m.id for m in roster.owners)
    placeholder = PLACEHOLDER_OWNER in ids
    return Owners(real_owners(ids), claimed, placeholder, claim_code=roster.claim_code)
