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
from psycopg import Error as PsycopgError
from psycopg_pool import AsyncConnectionPool

from bot.models import Inbound
from bot.replicas.database import listen_to
from bot.storage.inbox import decode_inbound, encode_inbound

log = structlog.get_logger(__name__)
CHANNEL = "mnemo_stop"


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
        """Until `close`: answer each /stop forwarded for a chat `running` here
        (`bot.replicas.database.listen_to`)."""
        await listen_to(
            self.pool,
            CHANNEL,
            lambda payload: self._heard(payload, running, answer),
            closing=self._closing,
            failed="stop_listen_failed",
            errors=(PsycopgError, ValueError, KeyError),
        )

    def close(self) -> None:
        """End `listen` at its next look (within `bot.replicas.database.LOOK_EVERY` seconds)."""
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
