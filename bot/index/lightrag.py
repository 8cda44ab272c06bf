"""`LightRagBackend`: the optional LightRAG server, reached over its REST API.

Privacy, the decision: LightRAG keeps one knowledge graph with no per-chat scoping, and a query
may return anything in it. So only the owner's global-scope exchanges (their private chat with
the bot) are ever sent; groups and other users' chats stay in the embedded index alone, which
scopes every chunk. A search is answered only for a caller that may see global memory.

The endpoints used (LightRAG's `lightrag/api/routers/document_routes.py`, `query_routes.py`,
`lightrag/api/README.md`):

    POST /documents/text  {"text", "file_source"}
                          → {"status": "success"|"duplicated"|"partial_success"|"failure",
                             "message", "track_id"}; indexing goes on in the server's background;
                          a `file_source` already stored answers "duplicated"
    POST /query           {"query", "mode", "only_need_context": true, "include_references": true,
                           "include_chunk_content": true, "chunk_top_k"}
                          → {"response": <the retrieved context, no LLM answer>,
                             "references": [{"reference_id", "file_path", "content": [chunks]}]}
    GET  /health          → {"status": "healthy", …}; outside the API-key check by default

`include_chunk_content` and `chunk_top_k` are newer fields: an older server ignores them (its
request models drop unknown fields) and its context comes back as one `lightrag:context` hit.

Auth: the `X-API-Key` header (the server's `LIGHTRAG_API_KEY`). The key is sent only in that
header and never logged; error texts name the method, path and status, nothing else.

Failures: every call has one deadline (`timeout`) covering up to `retries` more tries on a
refused connection or a 5xx (a timeout is not retried: the deadline is spent). After a failure
the server rests for `cooldown` seconds — exchanges and searches are skipped (logged), only
`health()` is still sent — so a hanging server costs one turn one timeout, not every turn.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import httpx
import structlog

from bot.errors import RagUnavailable
from bot.index.query import query_terms
from bot.index.search import RRF_K, Hit
from bot.index.snippets import snippet
from bot.index.sources import Exchange
from bot.models import GLOBAL_KEY
from bot.settings import RagSettings
from bot.storage.workspace import encode_key

log = structlog.get_logger(__name__)

Mode = Literal["local", "global", "hybrid", "naive", "mix"]
RETRIES = 2
RETRY_DELAY = 0.1  # seconds, times the attempt number
COOLDOWN = 60.0  # seconds without calls after a failure
MIN_QUERY_CHARS = 3  # LightRAG answers 422 to a shorter query
HEADER = "[Mnemo exchange]"
NO_CONTEXT = "No relevant context found for the query."  # LightRAG's canned empty answer
CONTEXT_PATH = "lightrag:context"  # a hit made of the whole context, when no chunk came back
_TIME_LINE = re.compile(r"^time: (\S+)$", re.MULTILINE)
_ACCEPTED = frozenset({"success", "duplicated", "partial_success"})


def document_source(exchange: Exchange) -> str:
    """The document's `file_source`: unique per turn, so a repeat is "duplicated", not twice."""
    return f"sessions/{encode_key(exchange.session_key)}/{exchange.turn_id}"


def document_text(exchange: Exchange) -> str:
    """The document: a header with the scope and time, then the exchange."""
    return (
        f"{HEADER}\n"
        "scope: owner (global memory)\n"
        f"time: {exchange.at.isoformat(timespec='seconds')}\n"
        f"session: {exchange.session_key}\n\n"
        f"{exchange.text}"
    )


class LightRagBackend:
    """A LightRAG server as an `ExchangeSink` and a `RemoteSearch` (`bot.index.remote`)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        mode: Mode,
        timeout: float,
        now: Callable[[], datetime],
        retries: int = RETRIES,
        cooldown: float = COOLDOWN,
    ) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout
        )
        self.mode = mode
        self.timeout = timeout
        self.now = now
        self.retries = retries
        self.cooldown = cooldown
        self._resting_until = 0.0

    @classmethod
    def from_settings(cls, rag: RagSettings, now: Callable[[], datetime]) -> LightRagBackend | None:
        """The server when `rag.backend = "lightrag"` (None otherwise): it gets the owner's
        exchanges (system 55) and adds hits to the owner's `# Relevant Memory` and
        `memory_search`; the embedded index keeps running for memory files and every chat's
        scope."""
        if not (rag.enabled and rag.backend == "lightrag"):
            return None
        key = rag.lightrag_api_key.get_secret_value() if rag.lightrag_api_key else None
        return cls(
            rag.lightrag_url,
            api_key=key or None,
            mode=rag.lightrag_mode,
            timeout=rag.lightrag_timeout,
            now=now,
        )

    @property
    def resting(self) -> bool:
        """True for `cooldown` seconds after a failure: calls are skipped, not sent."""
        return time.monotonic() < self._resting_until

    async def index_exchange(self, exchange: Exchange) -> bool:
        """Send one exchange if it is the owner's global memory; False when it is not, or when
        the server is resting after a failure. Raises `RagUnavailable` when the server fails
        or refuses the document."""
        if exchange.scope != GLOBAL_KEY:
            return False
        if self.resting:
            log.info("lightrag_resting", skipped="exchange")
            return False
        payload = {"text": document_text(exchange), "file_source": document_source(exchange)}
        answer = await self._call("POST", "/documents/text", payload)
        status = answer.get("status")
        if status not in _ACCEPTED:
            raise RagUnavailable(f"LightRAG did not take the document (status {status!r})")
        log.info("lightrag_indexed", source=payload["file_source"], status=status)
        return True

    async def search(self, query: str, *, scopes: Sequence[str], k: int) -> list[Hit]:
        """The server's best `k` hits for `query`; [] unless `scopes` include global memory,
        and [] (logged) when the server fails: best-effort, never raises."""
        if GLOBAL_KEY not in scopes or k <= 0 or len(query.strip()) < MIN_QUERY_CHARS:
            return []
        if self.resting:
            log.info("lightrag_resting", skipped="search")
            return []
        try:
            answer = await self._call("POST", "/query", self._query(query, k))
        except RagUnavailable as exc:
            log.warning("lightrag_search_failed", error=str(exc))
            return []
        return hits_from_answer(answer, query=query, k=k, now=self.now())

    def _query(self, query: str, k: int) -> dict[str, Any]:
        return {
            "query": query,
            "mode": self.mode,
            "only_need_context": True,  # the retrieved context, no LLM answer
            "include_references": True,
            "include_chunk_content": True,
            "chunk_top_k": k,
        }

    async def health(self) -> str:
        """The server's own status word ("healthy"); raises `RagUnavailable` when it does not
        answer. A probe: it is sent while the server rests, and success ends the rest."""
        answer = await self._call("GET", "/health", None)
        return str(answer.get("status", "unknown"))

    # The app's `Service`: nothing to start (the first call connects); stop closes the pool.

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        await self._client.aclose()

    # ------------------------------------------------------------------ one call

    async def _call(
        self, method: str, path: str, payload: Mapping[str, Any] | None
    ) -> Mapping[str, Any]:
        """One call under one deadline; its JSON object. Raises `RagUnavailable`."""
        try:
            async with asyncio.timeout(self.timeout):
                response = await self._send(method, path, payload)
        except (httpx.HTTPError, TimeoutError) as exc:
            self._rest()
            raise RagUnavailable(f"LightRAG {method} {path}: {type(exc).__name__}") from exc
        if response.status_code >= 500:
            self._rest()
        if response.status_code != 200:
            raise RagUnavailable(f"LightRAG {method} {path}: HTTP {response.status_code}")
        self._resting_until = 0.0
        return _json_object(response, f"LightRAG {method} {path}")

    async def _send(
        self, method: str, path: str, payload: Mapping[str, Any] | None
    ) -> httpx.Response:
        """The request, tried again on a refused or dropped connection or a 5xx."""
        for attempt in range(1, self.retries + 1):
            try:
                response = await self._client.request(method, path, json=payload)
            except httpx.TimeoutException:
                raise
            except httpx.TransportError as exc:
                log.info("lightrag_retry", path=path, attempt=attempt, error=type(exc).__name__)
            else:
                if response.status_code < 500:
                    return response
                log.info("lightrag_retry", path=path, attempt=attempt, status=response.status_code)
            await asyncio.sleep(RETRY_DELAY * attempt)
        return await self._client.request(method, path, json=payload)

    def _rest(self) -> None:
        self._resting_until = time.monotonic() + self.cooldown


def _json_object(response: httpx.Response, what: str) -> Mapping[str, Any]:
    try:
        body = response.json()
    except ValueError as exc:
        raise RagUnavailable(f"{what}: the answer is not JSON") from exc
    if not isinstance(body, dict):
        raise RagUnavailable(f"{what}: the answer is not a JSON object")
    return body


# ---------------------------------------------------------------------- answers → hits


def hits_from_answer(answer: Mapping[str, Any], *, query: str, k: int, now: datetime) -> list[Hit]:
    """A `/query` answer as hits: one per referenced document that came with its chunks, in the
    server's order; when none did (an older server), the whole context as one hit."""
    terms = query_terms(query)
    texts = _reference_texts(answer.get("references"))
    hits = [
        _hit(f"lightrag:{source}", text, rank=rank, terms=terms, now=now)
        for rank, (source, text) in enumerate(texts[:k], start=1)
    ]
    context = answer.get("response")
    if hits or not isinstance(context, str) or context.strip() in ("", NO_CONTEXT) or k <= 0:
        return hits
    return [_hit(CONTEXT_PATH, context, rank=1, terms=terms, now=now)]


def _reference_texts(references: object) -> list[tuple[str, str]]:
    """(file_path, its chunks joined) for each well-formed reference that has content."""
    if not isinstance(references, list):
        return []
    found: list[tuple[str, str]] = []
    for reference in references:
        if not isinstance(reference, dict):
            continue
        source, chunks = reference.get("file_path"), reference.get("content")
        if isinstance(source, str) and isinstance(chunks, list):
            text = "\n\n".join(chunk for chunk in chunks if isinstance(chunk, str)).strip()
            if text:
                found.append((source, text))
    return found


def _hit(path: str, text: str, *, rank: int, terms: Sequence[str], now: datetime) -> Hit:
    return Hit(
        path=path,
        start_line=0,  # no line range: the citation is the path
        end_line=0,
        text=snippet(_without_header(text), terms),
        score=round(1.0 / (RRF_K + rank), 6),
        kind="lightrag",
        scope=GLOBAL_KEY,
        at=_header_time(text) or now,
    )


def _without_header(text: str) -> str:
    if not text.startswith(HEADER):
        return text
    _, _, body = text.partition("\n\n")
    return body.strip() or text


def _header_time(text: str) -> datetime | None:
    match = _TIME_LINE.search(text) if text.startswith(HEADER) else None
    if match is None:
        return None
    try:
        at = datetime.fromisoformat(match[1])
    except ValueError:
        return None
    return at if at.tzinfo else None
