"""`Site`: how a page is rendered — Jinja2 templates with autoescape always on (a fact, a file
name or a message holding HTML or `<script>` is text on the page), the viewer, the form token
and the notices a write left for the page it leads to (post, redirect, get)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode

import jinja2
from aiohttp import web

from bot.web.signin import csrf_token, digest
from bot.web.viewer import Viewer

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"
VIEWER = web.RequestKey("viewer", Viewer)
SESSION = web.RequestKey("session", str)
PAGES = (
    ("/memory", "Memory"),
    ("/learned", "What I learned"),
    ("/search", "Search"),
    ("/conversations", "Conversations"),
    ("/reminders", "Reminders"),
    ("/usage", "Usage"),
    ("/health", "Health"),
)


class Page(Protocol):
    """A page: its routes (`bot.web.pages`)."""

    def routes(self) -> list[web.RouteDef]: ...


class Site:
    def __init__(self) -> None:
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(TEMPLATES),
            autoescape=True,  # every template, whatever its name
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._notices: dict[str, list[tuple[str, str]]] = {}  # session digest → (kind, text)

    def render(
        self, request: web.Request, name: str, *, status: int = 200, **values: Any
    ) -> web.Response:
        viewer = request.get(VIEWER)
        session = request.get(SESSION)
        notices = self._notices.pop(digest(session), []) if session else []
        page = self.templates.get_template(name).render(
            viewer=viewer,
            csrf=csrf_token(session) if session else "",
            pages=PAGES if viewer else (),
            here=request.path,
            notices=notices + list(values.pop("notices", [])),
            **values,
        )
        return web.Response(text=page, status=status, content_type="text/html")

    def tell(self, request: web.Request, text: str, *, kind: str = "ok") -> None:
        """A notice for the next page this session sees."""
        session = request.get(SESSION)
        if session:
            self._notices.setdefault(digest(session), []).append((kind, text))

    def back(
        self, request: web.Request, path: str, query: Mapping[str, str] | None = None
    ) -> web.Response:
        """After a write: see the page again (a reload does not send the form twice)."""
        location = path + (f"?{urlencode(query)}" if query else "")
        return web.Response(status=303, headers={"Location": location})


def viewer(request: web.Request) -> Viewer:
    """The signed-in viewer (the guard let only them through)."""
    return request[VIEWER]
