"""The replicas' background loops end when asked: a cancelled retry loop even when a driver
turned the cancellation into an error of its own, the /stop listener at `close` (its test is
skipped without `MNEMO_TEST_PG`)."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from bot.models import Inbound
from bot.replicas.database import LOOK_EVERY, open_pool, stop_if_cancelled
from bot.replicas.stop import StopAcross


async def retrying(attempts: list[int]) -> None:
    """A loop shaped like `StopAcross.listen`: errors are retried after a pause."""
    while True:
        try:
            attempts.append(1)
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:  # what a driver may do mid-query
                raise psycopg.OperationalError("query cancellation interrupted") from None
        except psycopg.Error:
            stop_if_cancelled()
            await asyncio.sleep(0.01)


async def test_a_cancelled_retry_loop_ends_though_the_driver_raised_its_own_error() -> None:
    attempts: list[int] = []
    task = asyncio.create_task(retrying(attempts))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=2)
    assert attempts == [1]


async def test_an_error_without_a_cancellation_is_retried() -> None:
    async def failing_twice(errors: list[int]) -> None:
        while True:
            try:
                if len(errors) < 2:
                    errors.append(1)
                    raise psycopg.OperationalError("server closed the connection")
                return
            except psycopg.Error:
                stop_if_cancelled()
                await asyncio.sleep(0)

    errors: list[int] = []
    await asyncio.wait_for(failing_twice(errors), timeout=2)
    assert errors == [1, 1]


async def test_the_stop_listener_ends_at_close_without_a_cancellation(pg_url: str) -> None:
    pool = open_pool(pg_url)
    await pool.open()
    try:
        for wait in (0.0, 0.01, 0.3):  # before, during and after its LISTEN
            stops = StopAcross(pool)
            task = asyncio.create_task(stops.listen(lambda _key: False, answer_nothing))
            await asyncio.sleep(wait)
            stops.close()
            await asyncio.wait_for(task, timeout=LOOK_EVERY * 4)
            assert task.done() and not task.cancelled()
    finally:
        await pool.close()


async def answer_nothing(_inbound: Inbound) -> None:
    raise AssertionError("no /stop was forwarded")
