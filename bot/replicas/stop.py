"""`/stop` across replicas: the chat's turn may run on another replica than the one Telegram
handed the /stop to.

The replica that receives /stop answers it itself when it runs the chat's turn, or when no
replica does (no job of the chat is `doing`): the stop command says "Stopped." or "Nothing to
stop." as in one process. Otherwise it forwards the message with `NOTIFY mnemo_stop`; every
replica `LISTEN`s, and the one running that chat's turn answers it (and so stops the turn). A
turn that ends between the look and the notification is answered "Nothing to stop." by the
replica that ran it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import structlog
from psycopg import AsyncConnection
from psycopg import Error as PsycopgError
from psycopg_pool import AsyncConnectionPool

from bot.models import Inbound
from bot.replicas.database import met, stop_if_cancelled, until
from bot.storage.inbox import decode_inbound, encode_inbound

log = structlog.get_logger(__name__)
CHANNEL = "mnemo_stop"
RETRY = 1.0  # seconds before listening again after the connection was lost
LOOK_EVERY = 0.5  # seconds between two looks at whether the listening should end


class StopAcross:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool
        self._closing = asyncio.Event()

    async def running_elsewhere(self, session_key: str) -> bool:
        """Whether some replica is answering the chat now (its job is `doing`)."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT 1 FROM procrastinate_jobs WHERE lock = %s AND status = 'doing'",
                (session_key,),
            )
            return await cursor.fetchone() is not None

    async def forward(self, inbound: Inbound) -> None:
        """Hand the /stop to every replica: the one running the chat answers it."""
        payload = json.dumps(encode_inbound(inbound), ensure_ascii=False)
        async with self.pool.connection() as conn:
            await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))

    async def listen(
        self, running: Callable[[str], bool], answer: Callable[[Inbound], Awaitable[None]]
    ) -> None:
        """Until `close`: answer each /stop forwarded for a chat `running` here. It ends between
        two waits, never by a cancellation mid-query (psycopg then cancels the query on the
        server and may wait seconds for it)."""
        while not self._closing.is_set():
            try:
                conninfo = self.pool.conninfo  # a connection of its own: it stays listening
                assert isinstance(conninfo, str)  # `open_pool` makes it so
                async with await AsyncConnection.connect(conninfo, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    while not self._closing.is_set():
                        async for note in conn.notifies(timeout=LOOK_EVERY):
                            await self._heard(note.payload, running, answer)
            except (PsycopgError, ValueError, KeyError) as exc:
                stop_if_cancelled()
                met("stop_listen_failed", exc)
                await until(self._closing, RETRY)

    def close(self) -> None:
        """End `listen` at its next look (within `LOOK_EVERY` seconds)."""
        self._closing.set()

    async def _heard(
        self,
        payload: str,
        running: Callable[[str], bool],
        answer: Callable[[Inbound], Awaitable[None]],
    ) -> None:
        inbound = decode_inbound(json.loads(payload))
        if running(inbound.session_key):
            log.info("stop_forwarded", chat=inbound.session_key)
            await _answered(answer, inbound)


async def _answered(answer: Callable[[Inbound], Awaitable[None]], inbound: Inbound) -> None:
    """A /stop that fails to be answered (Telegram away) must not end the listening."""
    try:
        await answer(inbound)
    except Exception:
        log.exception("stop_answer_failed", chat=inbound.session_key)
