"""`state/paired.json`: who became an owner by /claim, whom an owner let in by /pair, the
pairing requests waiting for an owner, and the claim code while the bot has no owner (the rules
about them: `bot.turn.pairing`).

    {"version": 1,
     "claim_code": "K7M3Q9XP",
     "owners":  [{"id": 1001, "name": "ann", "at": "…"}],
     "paired":  [{"id": 3003, "name": "bob", "at": "…"}],
     "pending": [{"code": "K7M3Q9XP", "user_id": 3003, "chat_id": 3003, "name": "bob",
                  "at": "…", "expires_at": "…"}]}

Written atomically; every change is a read-modify-write under the file's lock, across processes
(`python -m bot pair approve` writes it while the bot runs). Readers take `current()`, re-read
when the file changed on disk. A file that cannot be parsed is never overwritten: `current()`
reads it as empty (a warning), `change` refuses with a `StorageError` that says what to do.

`RosterStore` is what the rest of the bot uses: `RosterFile` here (one host), or the same
document in PostgreSQL, shared by every replica (`bot.replicas.roster`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol, TypeVar

import structlog

from bot import versioned
from bot.errors import StorageError
from bot.storage.files import Locks, atomic_write_text
from bot.versioned import Fields, objects

log = structlog.get_logger(__name__)
VERSION = 1
T = TypeVar("T")


@dataclass(frozen=True)
class Member:
    """An owner who claimed the bot, or a user an owner paired."""

    id: int
    name: str | None
    at: datetime  # when they claimed or were paired


@dataclass(frozen=True)
class Request:
    """A stranger's pairing request, waiting for an owner until `expires_at`."""

    code: str
    user_id: int
    chat_id: int  # where to tell them they were let in
    name: str | None
    at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class Roster:
    owners: tuple[Member, ...] = ()
    paired: tuple[Member, ...] = ()
    pending: tuple[Request, ...] = ()
    claim_code: str | None = None  # kept until someone claims the bot with it

    @property
    def owner_ids(self) -> frozenset[int]:
        return frozenset(m.id for m in self.owners)

    @property
    def paired_ids(self) -> frozenset[int]:
        return frozenset(m.id for m in self.paired)

    def with_pending(self, pending: tuple[Request, ...]) -> Roster:
        return replace(self, pending=pending)


class RosterStore(Protocol):
    def current(self) -> Roster:
        """The roster as last seen: without waiting on storage (it is read at every message)."""
        ...

    async def change(self, edit: Callable[[Roster], tuple[Roster, T]]) -> T:
        """Apply `edit` to the stored roster, one change at a time everywhere; save what it
        returns when it differs; `edit`'s answer. A damaged roster: `StorageError`."""
        ...


class RosterFile:
    def __init__(self, path: Path, locks: Locks) -> None:
        self.path = path
        self.locks = locks
        self._seen: tuple[int, int, int] | None = None  # the file `_cached` holds (`_stamp`)
        self._cached = Roster()

    def current(self) -> Roster:
        """The roster as the file holds it now (read again only when it changed)."""
        seen = _stamp(self.path)
        if seen is None:
            self._seen, self._cached = None, Roster()
        elif seen != self._seen:
            try:
                self._cached = self._read()
            except StorageError as exc:
                log.warning("roster_unreadable", path=str(self.path), reason=str(exc))
                self._cached = Roster()
            self._seen = seen
        return self._cached

    async def change(self, edit: Callable[[Roster], tuple[Roster, T]]) -> T:
        """Apply `edit` to the roster on disk under its lock; save what it returns when it
        differs; `edit`'s answer."""
        async with self.locks.hold(self.path):
            roster = await asyncio.to_thread(self._read)
            changed, answer = edit(roster)
            if changed != roster:
                await asyncio.to_thread(atomic_write_text, self.path, dumps(changed))
                self._seen, self._cached = _stamp(self.path), changed
            return answer

    def _read(self) -> Roster:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Roster()
        except (OSError, UnicodeDecodeError) as exc:
            raise StorageError(self._damaged(type(exc).__name__)) from exc
        try:
            return loads(text)
        except (ValueError, KeyError, TypeError) as exc:
            raise StorageError(self._damaged(str(exc)[:100])) from exc

    def _damaged(self, reason: str) -> str:
        name = f"{self.path.parent.name}/{self.path.name}"
        return (
            f"{name} cannot be read ({reason}): fix it, or move it aside to start over "
            "(claimed owners and paired users are then forgotten)"
        )


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells one version of the file from another (an atomic write makes a new inode)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


def loads(text: str) -> Roster:
    """The roster a document holds (`ValueError`, `KeyError` or `TypeError` when it is damaged)."""
    document = versioned.decode(text, VERSION)
    return Roster(
        owners=tuple(_member(m) for m in objects(document.get("owners", []), "owners")),
        paired=tuple(_member(m) for m in objects(document.get("paired", []), "paired")),
        pending=tuple(_request(r) for r in objects(document.get("pending", []), "pending")),
        claim_code=str(document.get("claim_code") or "") or None,
    )


def _member(raw: Fields) -> Member:
    return Member(id=_id(raw["id"]), name=_name(raw.get("name")), at=_time(raw["at"]))


def _request(raw: Fields) -> Request:
    return Request(
        code=str(raw["code"]),
        user_id=_id(raw["user_id"]),
        chat_id=_id(raw["chat_id"]),
        name=_name(raw.get("name")),
        at=_time(raw["at"]),
        expires_at=_time(raw["expires_at"]),
    )


def _id(value: object) -> int:
    if not isinstance(value, int | str):
        raise TypeError(f"not an id: {value!r}")
    return int(value)


def _name(value: object) -> str | None:
    return None if value is None else str(value)


def _time(value: object) -> datetime:
    if not isinstance(value, str):
        raise TypeError(f"not a time: {value!r}")
    return datetime.fromisoformat(value)


def dumps(roster: Roster) -> str:
    def plain(record: Member | Request) -> Fields:
        fields = asdict(record).items()
        return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in fields}

    body: Fields = {
        **({"claim_code": roster.claim_code} if roster.claim_code else {}),
        "owners": [plain(m) for m in roster.owners],
        "paired": [plain(m) for m in roster.paired],
        "pending": [plain(r) for r in roster.pending],
    }
    return versioned.encode(VERSION, body, indent=1) + "\n"
