"""Memory: MEMORY.md and each chat's memory, line by line — every fact with where it came from
(`bot.memory.provenance`), what it superseded (`supersede`), Forget, and Undo while its
receipt stands — and an editor for the whole file. Every write is the writer's
(`MemoryWriter.edit_by_hand`, `forget`, `undo`); an edit that meets a change made since the page
was loaded is merged, both kept, and the page names the conflict."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass

from aiohttp import web

from bot.errors import NotTextError
from bot.memory.forgetting import FORGET_MIN_CHARS, forget_receipt, undo_receipt
from bot.memory.lines import bare, bullet_of, until_of
from bot.memory.notes.long_term import MemoryText
from bot.memory.notes.supersede import replaced_of
from bot.memory.provenance import of_line, said_as
from bot.memory.writer import MemoryWriter
from bot.models import GLOBAL_SCOPE, MemoryScope, Provenance
from bot.receipts import ReceiptStore
from bot.storage.workspace import Workspace
from bot.turn.chats import ChatLocks
from bot.web.guard import Refused
from bot.web.pages.forms import field, scope_named, scope_param
from bot.web.site import Site, viewer
from bot.web.viewer import Viewer

NOT_YOURS = "That memory is not yours to see."


@dataclass(frozen=True)
class Row:
    kind: str  # "heading", "fact", "text", "blank"
    text: str
    fact: str = ""  # the fact without bullet or mark (what Forget looks for)
    origin: Provenance | None = None
    said: str = ""  # how it came: "said by voice" …
    until: str = ""  # superseded: the day it stopped being true
    replaced: tuple[tuple[str, str], ...] = ()  # the facts it superseded, and their last day
    receipt: str = ""  # the receipt whose Undo takes it out again


@dataclass(eq=False)
class MemoryPage:
    site: Site
    workspace: Workspace
    writer: MemoryWriter
    receipts: ReceiptStore
    locks: ChatLocks
    _: KW_ONLY
    undo_minutes: int

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/memory", self.show),
            web.post("/memory/edit", self.edit),
            web.post("/memory/forget", self.forget),
            web.post("/memory/undo", self.undo),
        ]

    async def show(self, request: web.Request) -> web.Response:
        who = viewer(request)
        scope = self._scope(who, request.query.get("scope"))
        return await self._page(request, who, scope)

    async def _page(
        self,
        request: web.Request,
        who: Viewer,
        scope: MemoryScope,
        *,
        draft: str | None = None,
        status: int = 200,
        notices: tuple[tuple[str, str], ...] = (),
    ) -> web.Response:
        chats = await asyncio.to_thread(self.workspace.chat_scopes)
        shown = await asyncio.to_thread(self.writer.snapshot, scope)
        rows = await self._rows(scope, shown.text)
        return self.site.render(
            request,
            "memory.html",
            status=status,
            notices=notices,
            scopes=[(scope_param(s), _title(s)) for s in who.scopes(chats)],
            scope=scope_param(scope),
            title=_title(scope),
            rows=rows,
            shown=shown,
            draft=shown.text if draft is None else draft,
        )

    async def _rows(self, scope: MemoryScope, text: str) -> list[Row]:
        known = await asyncio.to_thread(self.writer.long_term.origins(scope).read)
        kept = {
            r.text.casefold(): r.id
            for r in await self.receipts.recent()
            if r.state == "kept" and not r.quote and r.memory_scope == scope
        }
        lines = text.split("\n")
        replaced = replaced_of(lines)
        return [_row(at, line, known, kept, replaced, lines) for at, line in enumerate(lines)]

    async def edit(self, request: web.Request) -> web.StreamResponse:
        who = viewer(request)
        form = await request.post()
        scope = self._scope(who, field(form, "scope"))
        text = field(form, "text").replace("\r\n", "\n")
        seen = MemoryText(
            text=field(form, "base").replace("\r\n", "\n"), digest=field(form, "digest")
        )
        try:
            merged = await self.writer.edit_by_hand(scope, seen, text)
        except NotTextError as exc:  # nothing written: the page keeps what they wrote
            return await self._page(request, who, scope, draft=text, status=400,
                                    notices=(("error", str(exc)),))  # fmt: skip
        for file_part, page_part in merged.conflicts:
            self.site.tell(request, _conflict(file_part, page_part), kind="warn")
        if not merged.conflicts:
            self.site.tell(request, f"Saved {_title(scope)}.")
        return self.site.back(request, "/memory", {"scope": scope_param(scope)})

    async def forget(self, request: web.Request) -> web.StreamResponse:
        who = viewer(request)
        form = await request.post()
        scope = self._scope(who, field(form, "scope"))
        needle = " ".join(field(form, "fact").split())
        if len(needle) < FORGET_MIN_CHARS:
            raise Refused(400, f"Give {FORGET_MIN_CHARS} characters or more to forget.")
        key = who.chat_of_scope(scope)
        async with self.locks.hold(key):  # as /forget: no note is appended meanwhile
            forgotten = await self.writer.forget(scope, key, needle)
        told = forget_receipt(needle, forgotten, undo_minutes=self.undo_minutes)
        self.site.tell(request, told.replace("/undo", "Undo forget"))
        return self.site.back(request, "/memory", {"scope": scope_param(scope)})

    async def undo(self, request: web.Request) -> web.StreamResponse:
        who = viewer(request)
        form = await request.post()
        scope = self._scope(who, field(form, "scope"))
        key = who.chat_of_scope(scope)
        async with self.locks.hold(key):
            undone, expired = await self.writer.undo(key)
        self.site.tell(
            request, undo_receipt(undone, expired=expired, undo_minutes=self.undo_minutes)
        )
        return self.site.back(request, "/memory", {"scope": scope_param(scope)})

    def _scope(self, who: Viewer, raw: str | None) -> MemoryScope:
        """The scope a request names (their own by default); refused when not theirs."""
        scope = who.scope if raw is None or raw == "" else scope_named(raw)
        if not who.sees(scope):
            raise Refused(403, NOT_YOURS)
        return scope


def _row(
    at: int,
    line: str,
    known: Mapping[str, Provenance],
    kept: dict[str, str],
    replaced: dict[int, list[int]],
    lines: list[str],
) -> Row:
    stripped = line.strip()
    if not stripped:
        return Row("blank", "")
    if stripped.startswith("#"):
        return Row("heading", stripped.lstrip("#").strip())
    fact = bare(line)
    origin = of_line(known, line)
    until = until_of(line)
    return Row(
        "fact" if bullet_of(line) else "text",
        line,
        fact=fact,
        origin=origin,
        said=said_as(origin) if origin else "",
        until=until.isoformat() if until else "",
        replaced=tuple(_superseded(lines[i]) for i in replaced.get(at, [])),
        receipt=kept.get(fact.casefold(), ""),
    )


def _superseded(line: str) -> tuple[str, str]:
    until = until_of(line)
    return bare(line), until.isoformat() if until else ""


def _title(scope: MemoryScope) -> str:
    return "MEMORY.md (your memory)" if scope == GLOBAL_SCOPE else f"{scope.chat_key}'s memory"


def _conflict(file_part: str, page_part: str) -> str:
    return (
        "MEMORY.md changed while you edited it, in the same place. Both are kept: the file's "
        f"“{file_part.strip()}” and yours “{page_part.strip()}”. Edit again to keep one."
    )
