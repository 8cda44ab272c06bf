"""`SignIns`: the memory page's one-time sign-in links and its browser sessions, in
`state/web.json` (a workspace document: atomic, each change under its lock, so `python -m bot
web link` in a shell and the running bot share it).

    {"version": 1,
     "links":    {"<sha256 of a link's token>":  {"user": 42, "chat": "telegram:42", "until": …}},
     "sessions": {"<sha256 of a session's id>": {"user": 42, "chat": "telegram:42", "until": …}}}

A link's token and a session's id are secrets: 32 random bytes, given to the person once (the
link; the cookie) and kept here only as their SHA-256, never logged. A link works once, within
`link_minutes`: redeeming it removes it and starts a session that lasts `session_hours`;
signing out removes the session. Expired entries are dropped at the next change. A session's
CSRF token is derived from its id (an HMAC), so it is kept nowhere.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import structlog

from bot import versioned
from bot.settings import WebSettings
from bot.storage.files import ON_DISK, Documents, Locks
from bot.storage.workspace import Workspace

log = structlog.get_logger(__name__)
VERSION = 1


@dataclass(frozen=True)
class Visitor:
    """Who a link or a session is for: a person and the private chat they asked in."""

    user: int
    chat: str  # the session key of their private chat (the console's for a shell's link)


@dataclass(frozen=True)
class Started:
    """A session a link started: the id for the cookie (the only copy), and whose it is."""

    session: str
    visitor: Visitor


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def csrf_token(session: str) -> str:
    """The session's token for its forms: an HMAC of its id (stored nowhere)."""
    return hmac.new(session.encode("utf-8"), b"mnemo-web-form", hashlib.sha256).hexdigest()


class SignIns:
    def __init__(
        self,
        path: Path,
        locks: Locks,
        *,
        now: Callable[[], datetime],
        link_minutes: int,
        session_hours: int,
        documents: Documents = ON_DISK,
    ) -> None:
        self.path = path
        self.locks = locks
        self.now = now
        self.link_life = timedelta(minutes=link_minutes)
        self.session_life = timedelta(hours=session_hours)
        self.documents = documents

    @classmethod
    def from_settings(
        cls, config: WebSettings, workspace: Workspace, locks: Locks, now: Callable[[], datetime]
    ) -> SignIns:
        """The workspace's, over its path locks."""
        return cls(
            workspace.web_path,
            locks,
            now=now,
            link_minutes=config.link_minutes,
            session_hours=config.session_hours,
            documents=workspace.documents,
        )

    async def link(self, visitor: Visitor) -> str:
        """A new one-time link's token for `visitor` (shown once, kept only hashed)."""
        token = secrets.token_hex(32)
        until = self.now() + self.link_life
        await self._change(lambda book: book.links.update({digest(token): Pass(visitor, until)}))
        log.info("web_link_issued", user=visitor.user)
        return token

    async def redeem(self, token: str) -> Started | None:
        """The session a link's token starts, once; None for a token unknown, used or expired."""
        session = secrets.token_hex(32)
        found: list[Visitor] = []

        def change(book: Book) -> None:
            visitor = self._live(book.links.pop(digest(token), None))
            if visitor is not None:
                until = self.now() + self.session_life
                book.sessions[digest(session)] = Pass(visitor, until)
                found.append(visitor)

        await self._change(change)
        if not found:
            log.info("web_link_refused")
            return None
        log.info("web_signed_in", user=found[0].user)
        return Started(session, found[0])

    async def visitor(self, session: str) -> Visitor | None:
        """Whose session this is, while it lasts."""
        book = await asyncio.to_thread(self._read)
        return self._live(book.sessions.get(digest(session)))

    async def end(self, session: str) -> None:
        """Sign out: the session is gone."""
        await self._change(lambda book: book.sessions.pop(digest(session), None))

    # ------------------------------------------------------------------ the file

    def _live(self, entry: Pass | None) -> Visitor | None:
        return entry.visitor if entry is not None and entry.until > self.now() else None

    async def _change(self, change: Callable[[Book], object]) -> None:
        async with self.locks.hold(self.path):
            book = await asyncio.to_thread(self._read)
            change(book)
            body = {
                kind: {k: entry.plain() for k, entry in passes.items() if self._live(entry)}
                for kind, passes in (("links", book.links), ("sessions", book.sessions))
            }
            data = versioned.encode(VERSION, body, indent=1, ascii_only=True).encode("utf-8")
            await asyncio.to_thread(self.documents.write, self.path, data)

    def _read(self) -> Book:
        document = versioned.load(
            self.documents.read, self.path, VERSION, event="web_signins_unreadable"
        )
        if document is None:
            return Book({}, {})
        return Book(_passes(document.get("links")), _passes(document.get("sessions")))


@dataclass(frozen=True)
class Pass:
    """A link or a session: whose it is, and until when it works."""

    visitor: Visitor
    until: datetime

    def plain(self) -> dict[str, object]:
        return {
            "user": self.visitor.user,
            "chat": self.visitor.chat,
            "until": self.until.isoformat(),
        }


@dataclass(frozen=True)
class Book:
    """The document: links and sessions, each by the SHA-256 of its secret."""

    links: dict[str, Pass]
    sessions: dict[str, Pass]


def _passes(raw: object) -> dict[str, Pass]:
    """The entries that can be read (the others are dropped at the next change, as expired)."""
    found = {}
    for key, entry in versioned.mapping(raw).items():
        try:
            until = datetime.fromisoformat(str(versioned.mapping(entry)["until"]))
            visitor = Visitor(
                int(str(versioned.mapping(entry)["user"])), str(versioned.mapping(entry)["chat"])
            )
        except (KeyError, TypeError, ValueError):
            continue
        found[key] = Pass(visitor, until)
    return found
