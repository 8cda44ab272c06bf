"""The replicas' retry loops (queue worker, sweep, /stop listener) end when their task is
cancelled, even when a driver turned the cancellation into an error of its own."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from bot.replicas.database import stop_if_cancelled


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
