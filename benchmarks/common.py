"""What the benchmarks share: the model server in-process, a quiet chat, a scratch folder, and
the figures every script prints about the machine it ran on (`machine_line`).

A benchmark runs as a script (`python benchmarks/<name>.py`) or as a module
(`python -m benchmarks.<name>`, what `make bench` does): each puts the repository on `sys.path`
before its imports.
"""

from __future__ import annotations

import contextlib
import os
import platform
import resource
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@contextlib.asynccontextmanager
async def serving(handle: Handler) -> AsyncIterator[str]:
    """An OpenAI-compatible `/v1/chat/completions` on 127.0.0.1 answered by `handle`; yields
    its base URL."""
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


def skip_sdk_transform() -> None:
    """Send chat requests without the openai SDK's per-message schema walk (~0.2 ms a message,
    seconds per request for long sessions). Our messages are already in wire form: what the
    model receives is the same JSON."""
    from openai._utils import is_given
    from openai.resources.chat.completions import completions as sdk_completions

    async def as_given(data: dict[str, Any], expected_type: object) -> dict[str, Any]:
        return {key: value for key, value in data.items() if is_given(value)}

    sdk_completions.async_maybe_transform = as_given  # type: ignore[attr-defined,assignment]


class Quiet:
    """A chat that takes every reply in one part and shows nothing."""

    def __init__(self) -> None:
        self.sent = 0

    def parts(self, text: str) -> list[str]:
        return [text]

    async def send_part(self, part: object) -> None:
        self.sent += 1

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        yield


def scratch() -> str | None:
    """Memory-backed /dev/shm when there is one (for figures that are not about the disk)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def rss_mb() -> float:
    """This process's resident memory now, in MB."""
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * resource.getpagesize() / 1e6


def machine_line() -> str:
    """The machine a figure was measured on: cores, load averages, Python."""
    one, five, fifteen = os.getloadavg()
    return (
        f"machine: {os.cpu_count()} cores, load {one:.2f} {five:.2f} {fifteen:.2f} "
        f"(1/5/15 min), Python {platform.python_version()}"
    )
