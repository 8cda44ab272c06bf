"""Replicated mode's queue (`bot.replicas.queue`) under the whole bot, on a real PostgreSQL
(skipped without `MNEMO_TEST_PG`): each chat's messages answered in order through procrastinate
jobs, a stop leaving the unanswered ones queued for the next replica, the sweep putting back a
job whose lease ran out, once however many replicas sweep."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg
from pydantic import SecretStr

from bot.settings import Settings, StoreSettings
from tests.fakes.openai_api import FakeOpenAI, Hang, Reply, Respond
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import FRIEND, OWNER, make_settings, running_bot


def replicated(workspace: Path, telegram: FakeTelegram, openai: FakeOpenAI, url: str) -> Settings:
    store = StoreSettings(url=SecretStr(url), heartbeat=0.5, stalled_after=2.0)
    return make_settings(workspace, telegram=telegram, openai=openai, store=store)


async def rows(url: str, query: str) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        return await (await conn.execute(query.encode())).fetchall()


def echo(request: dict[str, Any]) -> Reply:
    return Reply(f"re: {request['messages'][-1]['content']}")


async def test_each_chat_is_answered_in_order_through_the_shared_queue(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    fake_openai.script(*[Respond(echo) for _ in range(6)])
    settings = replicated(tmp_path / "ws", fake_telegram, fake_openai, pg_url)
    async with running_bot(settings, fake_telegram):
        for n in range(3):
            fake_telegram.push_text(OWNER, OWNER, f"owner {n}")
            fake_telegram.push_text(FRIEND, FRIEND, f"friend {n}")
        owner = await fake_telegram.wait_for_messages(OWNER, 3)
        friend = await fake_telegram.wait_for_messages(FRIEND, 3)

    assert [m.text for m in owner] == [f"re: owner {n}" for n in range(3)]
    assert [m.text for m in friend] == [f"re: friend {n}" for n in range(3)]
    journal = await rows(pg_url, "SELECT count(*), count(done_at), sum(sent) FROM mnemo_inbox")
    assert journal == [(6, 6, 6)]  # every message journaled, answered, its tombstone kept
    assert await rows(pg_url, "SELECT id FROM procrastinate_jobs") == []
    assert not (tmp_path / "ws" / "state" / "inbox").exists() or not any(
        (tmp_path / "ws" / "state" / "inbox").iterdir()
    )


async def test_a_turn_cut_by_a_stop_is_answered_by_the_next_replica(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    hang = Hang()
    fake_openai.script(hang, Reply("the answer"))
    settings = replicated(tmp_path / "ws", fake_telegram, fake_openai, pg_url)
    settings = settings.model_copy(
        update={"telegram": settings.telegram.model_copy(update={"shutdown_grace": 0.2})}
    )
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "a question")
        await fake_openai.wait_until_hanging()
    assert fake_telegram.sent_messages(OWNER) == []
    status = await rows(pg_url, "SELECT status FROM procrastinate_jobs")
    assert status == [("todo",)]  # aborted by the stop, back in the queue with its id

    async with running_bot(settings, fake_telegram):  # another replica, on another disk
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)
    assert reply.text == "the answer"
    assert await rows(pg_url, "SELECT count(done_at) FROM mnemo_inbox") == [(1,)]


async def test_quick_follow_ups_are_answered_together_as_in_one_process(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    """Three quick messages from the owner make one turn and one answer (`bot.turn.together`),
    the friend's message its own; every message is done and no job is left."""
    fake_openai.answer_all(echo)
    settings = replicated(tmp_path / "ws", fake_telegram, fake_openai, pg_url)
    debounced = settings.telegram.model_copy(update={"debounce": 0.5})  # the default
    settings = settings.model_copy(update={"telegram": debounced})
    async with running_bot(settings, fake_telegram):
        for text in ("wait", "actually", "what time is it?"):
            fake_telegram.push_text(OWNER, OWNER, text)
        fake_telegram.push_text(FRIEND, FRIEND, "hi")
        [answer] = await fake_telegram.wait_for_messages(OWNER, 1)
        await fake_telegram.wait_for_messages(FRIEND, 1)
        await asyncio.sleep(1.0)  # a second answer would come now

    assert answer.text == "re: wait\nactually\nwhat time is it?"
    assert len(fake_telegram.sent_messages(OWNER)) == 1
    assert sorted(r["messages"][-1]["content"] for r in fake_openai.requests) == [
        "hi",
        "wait\nactually\nwhat time is it?",
    ]
    assert await rows(pg_url, "SELECT count(*), count(done_at) FROM mnemo_inbox") == [(4, 4)]
    assert await rows(pg_url, "SELECT id FROM procrastinate_jobs") == []


async def test_follow_ups_cut_by_a_stop_are_answered_once_by_the_next_replica(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    hang = Hang()
    fake_openai.script(hang, Respond(echo))
    settings = replicated(tmp_path / "ws", fake_telegram, fake_openai, pg_url)
    telegram = settings.telegram.model_copy(update={"debounce": 0.5, "shutdown_grace": 0.2})
    settings = settings.model_copy(update={"telegram": telegram})
    async with running_bot(settings, fake_telegram):
        for text in ("wait", "actually"):
            fake_telegram.push_text(OWNER, OWNER, text)
        await fake_openai.wait_until_hanging()
    assert fake_telegram.sent_messages(OWNER) == []

    async with running_bot(settings, fake_telegram):  # another replica, on another disk
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)
        await asyncio.sleep(1.0)  # a second answer would come now
    assert reply.text == "re: wait\nactually"
    assert len(fake_telegram.sent_messages(OWNER)) == 1
    assert await rows(pg_url, "SELECT count(*), count(done_at) FROM mnemo_inbox") == [(2, 2)]
    assert await rows(pg_url, "SELECT id FROM procrastinate_jobs") == []


AGED = "UPDATE procrastinate_events SET at = now() - interval '1 minute' WHERE job_id = %s"


async def test_two_sweeps_at_once_put_a_lapsed_job_back_once(pg_url: str) -> None:
    from bot.replicas.database import migrate, open_pool
    from bot.replicas.queue import TASK, ChatQueue

    pool = open_pool(pg_url)
    await pool.open()
    try:
        await migrate(pool)
        queues = [ChatQueue(pool, stalled_after=1.0) for _ in range(2)]
        for queue in queues:
            await queue.open()
        manager = queues[0].app.job_manager
        await queues[0].app.configure_task(TASK, lock="chat").defer_async(update="u1")
        worker = await manager.register_worker()
        job = await manager.fetch_job(queues=None, worker_id=worker)
        assert job is not None
        async with pool.connection() as conn:  # the worker froze: it took nothing since
            await conn.execute(AGED, (job.id,))

        swept = await asyncio.gather(*(queue.sweep() for queue in queues))

        assert sorted(swept) == [0, 1]
        assert await rows(pg_url, "SELECT status, id FROM procrastinate_jobs") == [("todo", job.id)]
    finally:
        await pool.close()


async def test_a_frozen_worker_that_wakes_cannot_end_the_job_its_successor_runs(
    pg_url: str,
) -> None:
    from procrastinate.jobs import Status

    from bot.replicas.database import migrate, open_pool
    from bot.replicas.queue import TASK, ChatQueue

    pool = open_pool(pg_url)
    await pool.open()
    try:
        await migrate(pool)
        queue = ChatQueue(pool, stalled_after=1.0)
        await queue.open()
        manager = queue.app.job_manager
        await queue.app.configure_task(TASK, lock="chat").defer_async(update="u1")
        await queue.app.configure_task(TASK, lock="chat").defer_async(update="u2")
        frozen, successor = await manager.register_worker(), await manager.register_worker()
        job = await manager.fetch_job(queues=None, worker_id=frozen)
        assert job is not None
        async with pool.connection() as conn:  # the frozen worker started it long ago
            await conn.execute(AGED, (job.id,))
        assert await queue.sweep() == 1
        taken = await manager.fetch_job(queues=None, worker_id=successor)
        assert taken is not None and taken.id == job.id

        await manager.finish_job(job, Status.SUCCEEDED, delete_job=True)  # it wakes, ends
        await manager.retry_job(job)  # or tries again

        assert await manager.fetch_job(queues=None, worker_id=successor) is None  # u2 waits
        jobs = "SELECT id, status FROM procrastinate_jobs ORDER BY id"
        assert (await rows(pg_url, jobs))[0] == (job.id, "doing")
        await manager.finish_job(taken, Status.SUCCEEDED, delete_job=True)  # the successor's
        assert [status for _, status in await rows(pg_url, jobs)] == ["todo"]
    finally:
        await pool.close()
