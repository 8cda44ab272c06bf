"""Conversations: each chat's current conversation and its archived parts (`sessions/`), read
as they are on disk and never changed by reading (a damaged file is reported, not set aside);
Forget on a message forgets its text everywhere that chat's memory holds it, as /forget does
(`MemoryWriter.forget`, under the chat's lock)."""

from __future__ import annotations

import asyncio
from dataclasses import KW_ONLY, dataclass
from datetime import datetime, timedelta
from pathlib import Path

from aiohttp import web

from bot.memory.forgetting import FORGET_MIN_CHARS, forget_receipt
from bot.memory.writer import MemoryWriter
from bot.models import ChatMessage
from bot.storage.sessions import SessionFormatError, SessionStore, decode_session
from bot.storage.workspace import Workspace
from bot.turn.chats import ChatLocks
from bot.web.guard import Refused
from bot.web.pages.forms import field
from bot.web.site import Site, viewer

NEEDLE_CHARS = 120  # a message is forgotten by its first line, up to this (notes cut it too)
CURRENT = "current"
NEAR = timedelta(minutes=1)


@dataclass(frozen=True)
class Part:
    name: str  # CURRENT, or the archive file's name
    path: Path


@dataclass(eq=False)
class ConversationsPage:
    site: Site
    workspace: Workspace
    sessions: SessionStore
    writer: MemoryWriter
    locks: ChatLocks
    _: KW_ONLY
    undo_minutes: int

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/conversations", self.index),
            web.get("/conversation", self.show),
            web.post("/conversation/forget", self.forget),
        ]

    async def index(self, request: web.Request) -> web.Response:
        who = viewer(request)
        keys = await asyncio.to_thread(self.sessions.keys)
        mine = [key for key in dict.fromkeys([*keys, who.chat]) if who.sees_chat(key)]
        chats = [(key, len(await asyncio.to_thread(self._parts, key)) - 1) for key in mine]
        return self.site.render(request, "conversations.html", chats=chats)

    async def show(self, request: web.Request) -> web.Response:
        key = self._key(request, request.query.get("key", ""))
        parts = await asyncio.to_thread(self._parts, key)
        turn = request.query.get("turn", "")
        wanted = request.query.get("part", CURRENT)
        part = next((p for p in parts if p.name == wanted), parts[0])
        moment = _moment(request.query.get("at", ""))
        messages, problem = await asyncio.to_thread(self._messages, part.path)
        if (turn or moment) and not any(_wanted(m, turn, moment) for m in messages):
            found = await asyncio.to_thread(self._finding, parts, turn, moment)
            part, messages, problem = found
        return self.site.render(
            request,
            "conversation.html",
            key=key,
            parts=[p.name for p in parts],
            part=part.name,
            messages=messages,
            problem=problem,
            wanted=_marked(messages, turn, moment),
        )

    async def forget(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        key = self._key(request, field(form, "key"))
        first = field(form, "text").strip().split("\n", 1)[0]
        needle = " ".join(first.split())[:NEEDLE_CHARS].strip()
        if len(needle) < FORGET_MIN_CHARS:
            raise Refused(400, f"That message is too short to forget by its text ({needle!r}).")
        scope = viewer(request).scope_of_chat(key)
        async with self.locks.hold(key):
            forgotten = await self.writer.forget(scope, key, needle)
        told = forget_receipt(needle, forgotten, undo_minutes=self.undo_minutes)
        self.site.tell(request, told.replace("/undo", "Undo forget (on the Memory page)"))
        return self.site.back(request, "/conversation", {"key": key})

    def _key(self, request: web.Request, key: str) -> str:
        if not key or not viewer(request).sees_chat(key):
            raise Refused(403, "That conversation is not yours to see.")
        return key

    def _parts(self, key: str) -> list[Part]:
        archived = self.workspace.archived_session_paths(key)
        current = Part(CURRENT, self.workspace.session_path(key))
        return [current, *(Part(p.name, p) for p in reversed(archived))]

    def _messages(self, path: Path) -> tuple[list[ChatMessage], str]:
        data = self.workspace.documents.read(path)
        if data is None:
            return [], ""
        try:
            session, _ = decode_session(data.decode("utf-8"))
        except (SessionFormatError, UnicodeDecodeError):
            return [], "This conversation's file cannot be read; it is left as it is."
        return [m for m in session.messages if m.role in ("user", "assistant")], ""

    def _finding(
        self, parts: list[Part], turn: str, moment: datetime | None
    ) -> tuple[Part, list[ChatMessage], str]:
        """The part holding the message wanted (a search hit's turn, a fact's moment), else
        the current one."""
        for part in parts:
            messages, problem = self._messages(part.path)
            if any(_wanted(m, turn, moment) for m in messages):
                return part, messages, problem
        return parts[0], *self._messages(parts[0].path)


def _moment(raw: str) -> datetime | None:
    try:
        return datetime.fromisoformat(raw) if raw else None
    except ValueError:
        return None


def _wanted(message: ChatMessage, turn: str, moment: datetime | None) -> bool:
    """A message a link may point at: its turn, or one said within a minute of the moment a
    fact was kept (provenance keeps the moment, not the message)."""
    if turn:
        return message.turn == turn
    at = message.at
    return moment is not None and at is not None and abs(at - moment) <= NEAR


def _marked(messages: list[ChatMessage], turn: str, moment: datetime | None) -> list[bool]:
    """The message the link points at: the turn's, or the person's nearest the moment."""
    if turn or moment is None:
        return [_wanted(m, turn, moment) for m in messages]
    near = [i for i, m in enumerate(messages) if m.role == "user" and _wanted(m, "", moment)]
    best = min(near, key=lambda i: _distance(messages[i], moment), default=None)
    return [i == best for i in range(len(messages))]


def _distance(message: ChatMessage, moment: datetime) -> timedelta:
    return abs(message.at - moment) if message.at else NEAR
