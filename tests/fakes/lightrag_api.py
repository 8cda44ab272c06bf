"""A fake LightRAG server for tests: real HTTP on 127.0.0.1 (aiohttp), LightRAG's documented API.

The endpoints the bot uses, with LightRAG's request and answer shapes:

    POST /documents/text  {"text", "file_source"?} → {"status", "message", "track_id"};
                          a `file_source` already stored → status "duplicated"
    POST /query           {"query", "mode", "only_need_context", "include_references",
                           "include_chunk_content", "chunk_top_k"|"top_k", …}
                          → {"response", "references": [{"reference_id", "file_path",
                             "content"?: [chunks]}]}; a query under 3 characters → 422
    GET  /health          → {"status": "healthy", …}; no key needed (LightRAG's default
                          whitelist), like the real server

With `api_key` set, the other endpoints want `X-API-Key: <key>` (else 403, like LightRAG).
Retrieval is a naive keyword match over the stored documents (shared words, best first); with
`only_need_context` the "response" is the matched text, else a canned "answer".
`fail(status)` answers every call with that status (`fail(500, times=1)`: only the next one);
`hang()` holds requests until `release()` or `stop()`. Everything received is kept in
`documents`, `queries` and `headers`.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.local_server import LocalServer

Json = dict[str, Any]
MODES = ("local", "global", "hybrid", "naive", "mix", "bypass")
NO_CONTEXT = "No relevant context found for the query."
WAIT = 5.0
_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)


@dataclass(frozen=True)
class Document:
    text: str
    file_source: str
    track_id: str


class FakeLightRag(LocalServer):
    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.chunk_content = True  # False: an older server, deaf to `include_chunk_content`
        self.documents: list[Document] = []
        self.queries: list[Json] = []
        self.headers: list[dict[str, str]] = []  # of every request, in order
        self.calls = 0
        self._failures: tuple[int, int | None] | None = None  # (status, times left or None)
        self._hanging = False
        self._release = asyncio.Event()
        self._stored = asyncio.Condition()
        super().__init__()

    # --- lifecycle -------------------------------------------------------------------------

    def build_app(self) -> web.Application:
        app = web.Application(middlewares=[self._faults])
        app.router.add_post("/documents/text", self._insert_text)
        app.router.add_post("/query", self._query)
        app.router.add_get("/health", self._health)
        return app

    def on_stop(self) -> None:
        self.release()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- test-side API ---------------------------------------------------------------------

    def fail(self, status: int = 500, *, times: int | None = None) -> None:
        """Answer calls with `status` (LightRAG's `{"detail": …}`): all, or the next `times`."""
        self._failures = (status, times)

    def hang(self) -> None:
        """Hold every request until `release()` (or `stop()`)."""
        self._hanging = True
        self._release.clear()

    def release(self) -> None:
        self._hanging = False
        self._release.set()

    def recover(self) -> None:
        self._failures = None
        self.release()

    async def wait_for_documents(self, count: int) -> list[Document]:
        """The documents, once at least `count` are stored (at most WAIT seconds)."""
        async with asyncio.timeout(WAIT), self._stored:
            await self._stored.wait_for(lambda: len(self.documents) >= count)
        return self.documents

    # --- faults and auth -------------------------------------------------------------------

    @web.middleware
    async def _faults(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.calls += 1
        self.headers.append(dict(request.headers))
        if self._hanging:
            await self._release.wait()
        if (status := self._next_failure()) is not None:
            return web.json_response(
                {"detail": "Failed to process: LLM unavailable"}, status=status
            )
        if request.path != "/health" and not self._authorized(request):
            return web.json_response({"detail": "API Key required"}, status=403)
        response: web.StreamResponse = await handler(request)
        return response

    def _next_failure(self) -> int | None:
        if self._failures is None:
            return None
        status, times = self._failures
        if times is not None:
            self._failures = (status, times - 1) if times > 1 else None
        return status

    def _authorized(self, request: web.Request) -> bool:
        return self.api_key is None or request.headers.get("X-API-Key") == self.api_key

    # --- endpoints -------------------------------------------------------------------------

    async def _insert_text(self, request: web.Request) -> web.Response:
        body = await _json(request)
        text, source = body.get("text"), body.get("file_source")
        if not isinstance(text, str) or not text.strip():
            return _invalid("text", "String should have at least 1 character")
        if source is not None and not isinstance(source, str):
            return _invalid("file_source", "Input should be a valid string")
        if source and any(doc.file_source == source for doc in self.documents):
            message = f"File source '{source}' already exists in document storage"
            return web.json_response({"status": "duplicated", "message": message, "track_id": ""})
        track_id = f"insert_{len(self.documents) + 1:06d}"
        async with self._stored:
            self.documents.append(Document(text.strip(), source or "unknown_source", track_id))
            self._stored.notify_all()
        message = "Text successfully received. Processing will continue in background."
        return web.json_response({"status": "success", "message": message, "track_id": track_id})

    async def _query(self, request: web.Request) -> web.Response:
        body = await _json(request)
        self.queries.append(body)
        query, mode = body.get("query"), body.get("mode", "mix")
        if not isinstance(query, str) or len(query.strip()) < 3:
            return _invalid("query", "RAG query is too short")
        if mode not in MODES:
            return _invalid("mode", f"Input should be one of {MODES}")
        found = self._match(query, limit=int(body.get("chunk_top_k") or body.get("top_k") or 60))
        with_content = self.chunk_content and bool(body.get("include_chunk_content"))
        return web.json_response(_answer(body, found, with_content=with_content))

    def _match(self, query: str, *, limit: int) -> list[Document]:
        """Documents sharing words with the query: most shared first, then oldest first."""
        words = set(_words(query))
        shared = [len(words & set(_words(doc.text))) for doc in self.documents]
        ranked = sorted((i for i, count in enumerate(shared) if count), key=lambda i: -shared[i])
        return [self.documents[i] for i in ranked[:limit]]

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "status": "healthy",
                "working_directory": "/app/data/rag_storage",
                "configuration": {"llm_binding": "fake", "embedding_binding": "fake"},
                "pipeline_busy": False,
            }
        )


def _words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


def _answer(body: Json, found: list[Document], *, with_content: bool) -> Json:
    if body.get("only_need_context"):
        response = "\n\n".join(doc.text for doc in found) or NO_CONTEXT
    else:
        response = f"An LLM answer drawn from {len(found)} documents." if found else NO_CONTEXT
    answer: Json = {"response": response}
    if body.get("include_references", True):
        answer["references"] = [
            _reference(number, doc, with_content=with_content)
            for number, doc in enumerate(found, start=1)
        ]
    return answer


def _reference(number: int, doc: Document, *, with_content: bool) -> Json:
    reference: Json = {"reference_id": str(number), "file_path": doc.file_source}
    if with_content:
        reference["content"] = [doc.text]
    return reference


async def _json(request: web.Request) -> Json:
    try:
        body = await request.json()
    except ValueError:
        raise web.HTTPUnprocessableEntity(text='{"detail": "invalid JSON"}') from None
    if not isinstance(body, dict):
        raise web.HTTPUnprocessableEntity(text='{"detail": "body must be an object"}')
    return body


def _invalid(field: str, message: str) -> web.Response:
    detail = [{"type": "value_error", "loc": ["body", field], "msg": message}]
    return web.json_response({"detail": detail}, status=422)
