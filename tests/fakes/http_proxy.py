"""`FakeProxy`: an HTTP forward proxy on 127.0.0.1 that passes each request on to the (local)
server it names and keeps the URLs it was asked for in `seen` — what a client configured with
`http://127.0.0.1:<port>` as its proxy really sent through it. One request per connection
(`Connection: close` both ways); plain http:// targets only (the fakes), no CONNECT."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit


class FakeProxy:
    def __init__(self) -> None:
        self.seen: list[str] = []
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")[:-2]
            method, target, _ = request_line.split(" ", 2)
            headers = [line for line in header_lines if line]
            length = next(
                (
                    int(h.split(":", 1)[1])
                    for h in headers
                    if h.lower().startswith("content-length:")
                ),
                0,
            )
            body = await reader.readexactly(length)
            self.seen.append(target)
            writer.write(await _forward(method, target, headers, body))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


async def _forward(method: str, target: str, headers: list[str], body: bytes) -> bytes:
    """The server's whole answer to the request, sent on in origin form."""
    url = urlsplit(target)
    assert url.scheme == "http" and url.hostname == "127.0.0.1", target
    path = url.path + (f"?{url.query}" if url.query else "")
    kept = [h for h in headers if h.split(":", 1)[0].lower() not in _HOP_BY_HOP]
    lines = [f"{method} {path} HTTP/1.1", *kept, "Connection: close", "", ""]
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        writer.write("\r\n".join(lines).encode("latin-1") + body)
        await writer.drain()
        return await reader.read()
    finally:
        writer.close()


_HOP_BY_HOP = {"connection", "proxy-connection", "keep-alive", "proxy-authorization"}
