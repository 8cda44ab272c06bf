"""The fakes' common shell: an aiohttp server on 127.0.0.1 at a free port, with `start`,
`stop`, `async with` and `port`; a `start` after `stop` serves on the same port again (an
outage). A fake says what it serves in `build_app` and what to wake before closing in
`on_stop`."""

from __future__ import annotations

from types import TracebackType
from typing import Self

from aiohttp import web


class LocalServer:
    def __init__(self) -> None:
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    def build_app(self) -> web.Application:
        raise NotImplementedError

    def on_stop(self) -> None:
        """Release whatever requests are waiting, so the server can close at once."""

    async def start(self) -> None:
        self._closing = False
        self._runner = web.AppRunner(self.build_app(), access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port or 0)  # a restart keeps it
        await site.start()
        self._port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        self._closing = True
        self.on_stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return self._port
