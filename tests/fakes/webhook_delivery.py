"""The fake Bot API's webhook side: what Telegram does once `setWebhook` is called.

Every update waiting is POSTed, as JSON with the secret token header, to the registered URLs in
turn (a load balancer in front of the replicas: each attempt goes to the next URL). Like
Telegram, a chat's next update is sent only once the previous one got a 2xx answer; an answer
that is not 2xx, or none within `timeout`, is retried after a backoff (the same update, to the
next URL). At most `max_connections` requests are open at once. `duplicate_every=n` delivers
every n-th update a second time after its 2xx (a redelivery the bot must recognise).
Every attempt is kept in `attempts`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
BACKOFF = (0.05, 0.1, 0.2, 0.5, 1.0)  # seconds before each retry; the last repeats


@dataclass(frozen=True)
class Attempt:
    update_id: int
    url: str
    status: int | None  # None: no answer (refused, timed out)
    repeat: bool = False  # a duplicate delivery of an update already answered 2xx
    at: float = field(default_factory=time.time)  # when (seconds since the epoch)


class WebhookDelivery:
    def __init__(
        self,
        pending: Callable[[], list[dict[str, Any]]],
        confirm: Callable[[int], None],
        *,
        timeout: float = 30.0,
    ) -> None:
        self._pending = pending
        self._confirm = confirm
        self.timeout = timeout
        self.urls: list[str] = []
        self.secret = ""
        self.max_connections = 40
        self.duplicate_every = 0
        self.attempts: list[Attempt] = []
        self._next_url = itertools.count()
        self._in_flight: set[Any] = set()
        self._wakeup = asyncio.Event()
        self._changed = asyncio.Event()  # a URL registered, an attempt made
        self._task: asyncio.Task[None] | None = None

    @property
    def active(self) -> bool:
        return bool(self.urls)

    def register(self, url: str, secret: str, max_connections: int) -> None:
        """`setWebhook`: one more URL behind the balancer (the same one again: nothing new)."""
        if url not in self.urls:
            self.urls.append(url)
        self.secret, self.max_connections = secret, max_connections
        self._changed.set()
        if self._task is None:
            self._task = asyncio.create_task(self._deliver_all(), name="webhook delivery")

    async def wait_until(self, predicate: Callable[[], bool], within: float = 10.0) -> None:
        """Wait until `predicate()` holds, looked at again after each registration or attempt;
        `TimeoutError` past `within` seconds."""
        async with asyncio.timeout(within):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    def wake(self) -> None:
        self._wakeup.set()

    async def close(self) -> None:
        self.urls.clear()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _deliver_all(self) -> None:
        slots = asyncio.Semaphore(self.max_connections)
        sending: set[asyncio.Task[None]] = set()
        async with aiohttp.ClientSession() as session:
            try:
                while True:
                    self._wakeup.clear()
                    for update in list(self._pending()):
                        chat = _chat_of(update)
                        if chat in self._in_flight:
                            continue
                        self._in_flight.add(chat)
                        task = asyncio.create_task(self._deliver(session, slots, update, chat))
                        sending.add(task)
                        task.add_done_callback(sending.discard)
                    await self._wakeup.wait()
            finally:
                for task in sending:
                    task.cancel()
                await asyncio.gather(*sending, return_exceptions=True)

    async def _deliver(
        self, session: aiohttp.ClientSession, slots: asyncio.Semaphore, update: Any, chat: Any
    ) -> None:
        try:
            for tries in itertools.count():
                async with slots:
                    status = await self._post(session, update)
                if status is not None and 200 <= status < 300:
                    break
                await asyncio.sleep(BACKOFF[min(tries, len(BACKOFF) - 1)])
            update_id = int(update["update_id"])
            self._confirm(update_id)
            if self.duplicate_every and update_id % self.duplicate_every == 0:
                async with slots:
                    await self._post(session, update, repeat=True)
        finally:
            self._in_flight.discard(chat)
            self.wake()

    async def _post(
        self, session: aiohttp.ClientSession, update: Any, *, repeat: bool = False
    ) -> int | None:
        if not self.urls:
            return None
        url = self.urls[next(self._next_url) % len(self.urls)]
        status: int | None = None
        try:
            async with session.post(
                url,
                json=update,
                headers={SECRET_HEADER: self.secret},
                timeout=aiohttp.ClientTimeout(total=self.timeout),
            ) as response:
                status = response.status
        except (aiohttp.ClientError, TimeoutError):
            status = None
        self.attempts.append(Attempt(int(update["update_id"]), url, status, repeat))
        self._changed.set()
        return status


def _chat_of(update: dict[str, Any]) -> Any:
    message = update.get("message") or {}
    return (message.get("chat") or {}).get("id", ("update", update["update_id"]))
