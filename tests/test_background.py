"""An owned background task: stopping it cancels the work and waits until it ended; stopping
one never started, or twice, does nothing; the stopper's own cancellation is not swallowed; a
failure of the work comes out of the stop; the periodic loop runs its job again and again, and
never after the stop."""

from __future__ import annotations

import asyncio

import pytest

from bot.background import OwnedTask, periodically


async def test_stop_cancels_the_work_and_returns_once_it_ended() -> None:
    running, ended = asyncio.Event(), asyncio.Event()

    async def work() -> None:
        running.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # its cleanup awaits too: stop waits for it
            ended.set()

    owned = OwnedTask("owned-test")
    owned.start(work())
    await running.wait()
    assert "owned-test" in {task.get_name() for task in asyncio.all_tasks()}
    await owned.stop()
    assert ended.is_set()
    assert "owned-test" not in {task.get_name() for task in asyncio.all_tasks()}


async def test_stop_before_start_and_stop_twice_do_nothing() -> None:
    owned = OwnedTask("owned-test")
    await owned.stop()
    owned.start(asyncio.Event().wait())
    await owned.stop()
    await owned.stop()
    assert "owned-test" not in {task.get_name() for task in asyncio.all_tasks()}


async def test_a_failure_of_the_work_comes_out_of_stop() -> None:
    async def work() -> None:
        raise ValueError("the job broke")

    owned = OwnedTask("owned-test")
    owned.start(work())
    await asyncio.sleep(0)  # the work runs and fails before the stop
    with pytest.raises(ValueError, match="the job broke"):
        await owned.stop()


async def test_the_periodic_job_runs_again_and_again_until_the_stop() -> None:
    runs: list[int] = []
    third = asyncio.Event()

    async def job() -> None:
        runs.append(len(runs))
        if len(runs) == 3:
            third.set()

    owned = OwnedTask("owned-test")
    owned.start(periodically(0, job))
    await third.wait()
    await owned.stop()
    after_stop = len(runs)
    for _ in range(5):
        await asyncio.sleep(0)
    assert after_stop >= 3
    assert len(runs) == after_stop


async def test_a_cancellation_of_the_one_stopping_goes_on_up() -> None:
    cleaning = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cleaning.set()
            await asyncio.sleep(3600)  # a slow cleanup: the stopper is cancelled meanwhile

    owned = OwnedTask("owned-test")
    owned.start(work())
    await asyncio.sleep(0)
    stopper = asyncio.create_task(owned.stop())
    await cleaning.wait()
    stopper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopper
    assert stopper.cancelled()


async def test_a_stop_in_a_cancelled_turns_cleanup_finishes_the_cleanup() -> None:
    cleaned: list[str] = []

    async def turn() -> None:
        owned = OwnedTask("owned-test")
        owned.start(asyncio.Event().wait())
        try:
            await asyncio.Event().wait()
        finally:  # the turn was cancelled: its cleanup stops the task, then goes on
            await owned.stop()
            cleaned.append("after the stop")

    running = asyncio.create_task(turn())
    await asyncio.sleep(0)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert cleaned == ["after the stop"]
