"""Replicated mode's fencing (`bot.replicas.lease`) on a real PostgreSQL (skipped without
`MNEMO_TEST_PG`): the sweep gives a running job away only once its message's lease ran out,
never waits on a row a stalled session holds, and PostgreSQL ends a session left idle in a
transaction; a turn whose hold lapsed sends nothing at the wire, to Telegram or the model."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from psycopg.errors import IdleInTransactionSessionTimeout
from telegram import Bot
from telegram.error import NetworkError

from bot.channels.telegram.connect import request_via
from bot.llm.openai_chat import OpenAIChat
from bot.models import ChatMessage, Inbound
from bot.replicas.database import migrate, open_pool
from bot.replicas.journal import PgJournal
from bot.replicas.lease import Lease
from bot.replicas.locks import PgLocks
from bot.replicas.queue import ChatQueue
from bot.storage.inbox import LeaseLapsed, looking_first
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER
from tests.test_replicas_queue import AGED, rows

STALLED = 1.0  # seconds: the lease, and how long a session may idle in a transaction


@asynccontextmanager
async def taken(pg_url: str) -> AsyncIterator[tuple[ChatQueue, int]]:
    """A queue and a journal on a pool; one message journaled, its job fetched and its entry
    taken by a worker, that job started long ago: (the queue, the job's id)."""
    pool = open_pool(pg_url, stalled_after=STALLED)
    await pool.open()
    try:
        await migrate(pool)
        queue = ChatQueue(pool, stalled_after=STALLED)
        await queue.open()
        journal = PgJournal(pool, enqueue=queue.enqueue, lease=STALLED)
        await journal.accept(Inbound("u1", "telegram", 1, 1, "hello", datetime.now(UTC)))
        job = await queue.jobs.fetch_job(queues=None, worker_id=await queue.jobs.register_worker())
        assert job is not None and job.id is not None
        assert await journal.take("u1") is not None
        async with pool.connection() as conn:
            await conn.execute(AGED, (job.id,))
        yield queue, job.id
    finally:
        await pool.close()


async def test_a_job_is_given_away_only_once_its_message_s_lease_ran_out(pg_url: str) -> None:
    async with taken(pg_url) as (queue, _job):
        assert await queue.sweep() == 0  # the lease still runs
        await expire_lease(pg_url)

        assert await queue.sweep() == 1
    assert await rows(pg_url, "SELECT status FROM procrastinate_jobs") == [("todo",)]
    [(fence, lease)] = await rows(pg_url, "SELECT fence, lease_until FROM mnemo_inbox")
    assert (fence, lease) == (2, None)  # the old take fenced off, the next one need not wait


async def test_the_sweep_skips_a_row_a_stalled_session_holds_and_waits_on_nothing(
    pg_url: str,
) -> None:
    async with taken(pg_url) as (queue, job_id):
        await expire_lease(pg_url)
        for table, key in (("mnemo_inbox", "'u1'"), ("procrastinate_jobs", str(job_id))):
            async with await psycopg.AsyncConnection.connect(pg_url) as frozen:
                await frozen.execute(f"SELECT 1 FROM {table} WHERE id = {key} FOR UPDATE")
                # the frozen replica's transaction is open: the sweep goes by
                assert await asyncio.wait_for(queue.sweep(), 30) == 0
                await frozen.rollback()
        assert await queue.sweep() == 1


async def test_a_session_left_idle_in_a_transaction_is_ended_and_its_lock_freed(
    pg_url: str,
) -> None:
    pool = open_pool(pg_url, stalled_after=STALLED)
    await pool.open()
    try:
        async with pool.connection() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock(42)")
            await asyncio.sleep(3 * STALLED)  # frozen mid-transaction
            with pytest.raises(IdleInTransactionSessionTimeout):
                await conn.execute("SELECT 1")
        async with await psycopg.AsyncConnection.connect(pg_url) as other:
            cursor = await other.execute("SELECT pg_try_advisory_lock(42)")
            assert await cursor.fetchone() == (True,)
    finally:
        await pool.close()


async def test_a_lock_held_across_slow_work_outlives_the_idle_limit(pg_url: str) -> None:
    pool = open_pool(pg_url, stalled_after=STALLED)
    await pool.open()
    try:
        locks = PgLocks(pool, alive_every=STALLED / 3)
        async with locks.hold(path := Path("/ws/MEMORY.md")):
            await asyncio.sleep(3 * STALLED)  # a model call under the lock
            async with await psycopg.AsyncConnection.connect(pg_url) as other:
                cursor = await other.execute(
                    "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                    (f"mnemo:{path.as_posix()}",),
                )
                assert await cursor.fetchone() == (False,)  # still held
    finally:
        await pool.close()


def lapsed() -> Lease:
    return Lease("u1", 1, until=time.monotonic() - 1.0)


async def test_a_lapsed_hold_stops_a_telegram_request_at_the_wire(
    fake_telegram: FakeTelegram,
) -> None:
    wired = request_via(None, wired=True)
    bot = Bot(fake_telegram.token, base_url=fake_telegram.base_url, request=wired)
    async with bot:
        with looking_first(None, wire=lapsed().check), pytest.raises(NetworkError) as raised:
            await bot.send_message(OWNER, "from a woken replica")
        await bot.send_message(OWNER, "from a live one")
    assert isinstance(raised.value.__cause__, LeaseLapsed)
    assert [m.text for m in fake_telegram.sent_messages(OWNER)] == ["from a live one"]


async def test_a_lapsed_hold_stops_a_model_request_at_the_wire(fake_openai: FakeOpenAI) -> None:
    chat = OpenAIChat(
        base_url=fake_openai.base_url, api_key="sk-test", model="m", max_retries=0, timeout=10.0
    )
    try:
        with looking_first(None, wire=lapsed().check), pytest.raises(LeaseLapsed):
            await chat.complete([ChatMessage(role="user", content="hello")])
    finally:
        await chat.close()
    assert fake_openai.requests == []


async def expire_lease(pg_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        await conn.execute("UPDATE mnemo_inbox SET lease_until = now() - interval '1 second'")
