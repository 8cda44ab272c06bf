"""Exchanges read from session files: the conversations, current and archived, as sources.

A session file (`sessions/<key>.json`, or `sessions/archive/<key>-<time>.json`: closed by /new
or a part cut from a session) holds turns. Each turn — a user message, then the last assistant
text before the next user message (tool steps in between are not part of it) — is one
`Exchange`, cited `sessions/<encoded key>#<turn id>`. The turn id is the one the runner gave the
user message; an older message without one gets an id made from its time and text. The scope is
the one the session was saved with (`SessionMarks.scope`, written by system 50), else the chat's
own (a private fallback: the owner's chat searches its own key too). A file that is not a session
document holds no exchange. A session file is rewritten, and so re-read whole, after every
turn: the source of each exchange (which depends on the exchange alone) is remembered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from bot.index.chunking import DEFAULT_SALIENCE, Chunker
from bot.index.sources import Exchange, origin_of_turn, source_of_exchange
from bot.index.store import SourceUpdate
from bot.index.sync.reader import Appended, digest_of
from bot.models import ChatMessage, Session
from bot.storage.sessions import SessionFormatError, decode_session

PREFIX = "sessions/"
EXCHANGES_REMEMBERED = 256  # a few sessions' worth: those rewritten turn after turn


@dataclass(frozen=True)
class TranscriptSource:
    """The session files under `sessions/` (top level and `archive/`)."""

    root: Path
    prefix: str = PREFIX

    def wants(self, relative: str) -> bool:
        if not relative.endswith(".json"):
            return False
        return "/" not in relative or (relative.count("/") == 1 and relative.startswith("archive/"))

    def allows(self, link: Path) -> bool:
        return True  # a session's scope is in its document, not in where its file lies

    def sources(
        self, key: str, text: str | None, *, digest: str, mtime: float, chunker: Chunker
    ) -> list[SourceUpdate]:
        if text is None:
            return []
        try:
            session, _ = decode_session(text)
        except SessionFormatError:
            return []
        return [_update(exchange, chunker) for exchange in exchanges(session)]

    def grown(self, key: str, appended: Appended) -> list[SourceUpdate] | None:
        return None  # a session file is one JSON document: read whole


def exchanges(session: Session) -> list[Exchange]:
    scope = session.key if session.marks.scope is None else session.marks.scope
    return [
        Exchange(
            session_key=session.key,
            turn_id=turn_id(user),
            user=user.content or "",
            assistant=reply,
            scope=scope,
            at=user.at or session.updated_at,
            origin=origin_of_turn(user),
        )
        for user, reply in turns(session.messages)
    ]


def turns(messages: Sequence[ChatMessage]) -> Iterator[tuple[ChatMessage, str]]:
    """(user message, final assistant text) for each turn that has both."""
    user: ChatMessage | None = None
    reply = ""
    for message in (*messages, ChatMessage(role="user", content=None)):
        if message.role == "user":
            if user is not None and reply.strip() and (user.content or "").strip():
                yield user, reply
            user, reply = message, ""
        elif message.role == "assistant" and (message.content or "").strip():
            reply = message.content or ""


def turn_id(user: ChatMessage) -> str:
    if user.turn:
        return user.turn
    at = user.at.isoformat() if isinstance(user.at, datetime) else ""
    return "t" + hashlib.sha256(f"{at}|{user.content}".encode()).hexdigest()[:11]


@lru_cache(maxsize=EXCHANGES_REMEMBERED)
def _update(exchange: Exchange, chunker: Chunker) -> SourceUpdate:
    chunks = chunker.text(
        exchange.text,
        path=exchange.path,
        scope=exchange.scope,
        kind="exchange",
        at=exchange.at.timestamp(),
        salience=DEFAULT_SALIENCE,
        origin=exchange.origin,
    )
    digest = digest_of(exchange.text, exchange.scope, exchange.at.timestamp(), exchange.origin)
    return SourceUpdate(source_of_exchange(exchange.path), tuple(chunks), digest=digest)
