"""Search: the bot's own memory search (the `memory_search` tool's, over the scopes the
viewer's private chat may search, `search_scopes`), each hit with its citation and where its
text came from; a hit opens its source around it — a file through `memory_get`'s rule (which
files a chat may read, and where a path may lead: `bot.storage.confined`), a past exchange in
its conversation."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import urlencode

from aiohttp import web

from bot.errors import ToolError
from bot.index import Hit
from bot.memory.scopes import search_scopes
from bot.storage.workspace import Workspace, decode_key
from bot.tools.memory_get import parse_citation, read_slice, resolve
from bot.tools.memory_search import MAX_K, MAX_QUERY_CHARS, MemorySearch
from bot.web.guard import Refused
from bot.web.site import Site, viewer

AROUND = 12  # lines shown before and after a hit


@dataclass(frozen=True)
class Found:
    hit: Hit
    origin: str
    href: str  # where its source opens


@dataclass(eq=False)
class SearchPage:
    site: Site
    workspace: Workspace
    search: MemorySearch | None

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/search", self.show), web.get("/source", self.source)]

    async def show(self, request: web.Request) -> web.Response:
        who = viewer(request)
        query = request.query.get("q", "").strip()[:MAX_QUERY_CHARS]
        found: list[Found] = []
        problem = "" if self.search else "Search is off here (rag.enabled = false)."
        if query and self.search is not None:
            scopes = search_scopes(who.scope, who.chat)
            try:
                hits, origins = await self.search.search(query, scopes, MAX_K)
            except ToolError as exc:
                problem = str(exc)
            else:
                found = [Found(hit, origin, _href(hit)) for hit, origin in _paired(hits, origins)]
        return self.site.render(request, "search.html", query=query, found=found, problem=problem)

    async def source(self, request: web.Request) -> web.Response:
        who = viewer(request)
        try:
            citation = parse_citation(request.query.get("path", ""))
            path = resolve(self.workspace.memory_root, citation.path, who.scope, who.chat)
        except ToolError as exc:
            raise Refused(403, f"Not opened: {exc}.") from None
        start = _number(request.query.get("line")) or citation.start or 1
        end = _number(request.query.get("end")) or citation.end or start
        first = max(1, start - AROUND)
        documents = self.workspace.documents
        found = await asyncio.to_thread(
            read_slice, path, first, end - first + 1 + AROUND, documents
        )
        return self.site.render(
            request,
            "source.html",
            path=citation.path,
            lines=found.lines if found else (),
            start=start,
            end=end,
            missing=found is None,
        )


def _paired(hits: list[Hit], origins: list[str]) -> list[tuple[Hit, str]]:
    told = [*origins, *[""] * (len(hits) - len(origins))]
    return list(zip(hits, told, strict=False))


def _href(hit: Hit) -> str:
    """A past exchange (`sessions/<key>#<turn>`) opens in its conversation; a file in /source."""
    if hit.path.startswith("sessions/"):
        encoded, _, turn = hit.path.removeprefix("sessions/").partition("#")
        return f"/conversation?{_query(key=decode_key(encoded), turn=turn)}"
    if not hit.lines:
        return ""
    return f"/source?{_query(path=hit.path, line=str(hit.start_line), end=str(hit.end_line))}"


def _query(**values: str) -> str:
    return urlencode(values)


def _number(raw: str | None) -> int | None:
    return int(raw) if raw and raw.isdigit() and len(raw) < 9 else None
