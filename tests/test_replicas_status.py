"""`/status` with replicas: what it says about the chats' queue is read from the queue every
replica shares (`bot.replicas.look`), so it is the cluster's whichever replica answers. The
first test is skipped without `MNEMO_TEST_PG`."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from pydantic import SecretStr

from bot.llm.meter import PromptEstimate
from bot.settings import StoreSettings
from bot.turn.commands.status import Queued, Status, render
from tests.fakes.openai_api import FakeOpenAI, Hang, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot

ASKING = "telegram:1001"  # the chat whose /status is being answered (its job is `doing`)


async def test_the_look_counts_every_replica_s_jobs_and_live_workers(pg_url: str) -> None:
    from bot.replicas.database import migrate, open_pool
    from bot.replicas.look import JobsLook

    pool = open_pool(pg_url)
    await pool.open()
    try:
        await migrate(pool)
        async with pool.connection() as conn:
            await conn.execute(
                "INSERT INTO procrastinate_workers (last_heartbeat) VALUES "
                "(now()), (now()), (now() - interval '1 hour')"  # two alive, one long gone
            )
            jobs = [
                (ASKING, "doing"),  # this /status, answered on some replica
                (ASKING, "todo"),
                (ASKING, "todo"),
                ("telegram:2002", "doing"),  # another chat, on another replica
                ("telegram:2002", "todo"),
                ("telegram:3003", "todo"),
                ("telegram:3003", "succeeded"),  # done: not counted
            ]
            for lock, status in jobs:
                await conn.execute(
                    "INSERT INTO procrastinate_jobs (queue_name, task_name, lock, status) "
                    "VALUES ('default', 'answer', %s, %s)",
                    (lock, status),
                )
        found = await JobsLook(pool, alive_within=10.0).look(ASKING)
    finally:
        await pool.close()

    assert found == Queued(waiting=2, running=1, queued=4, replicas=2)


async def test_a_look_the_database_refuses_says_nothing_rather_than_failing() -> None:
    from bot.replicas.database import open_pool
    from bot.replicas.look import JobsLook

    pool = open_pool("postgresql://nobody@127.0.0.1:9/none")
    pool.timeout = 0.5
    await pool.open(wait=False)
    try:
        assert await JobsLook(pool, alive_within=10.0).look(ASKING) is None
    finally:
        await pool.close()


def status(queued: Queued | None, *, owner: bool) -> Status:
    return Status(
        messages=3,
        estimate=PromptEstimate(tokens=100, counted=90, factor=1.0, window=1000),
        margin=0.1,
        window_source="settings",
        reported=0,
        compactions=0,
        last_compaction=None,
        last_consolidation=datetime(2026, 3, 2, tzinfo=UTC),
        model="m",
        pipeline=["20 context-building"],
        running=False,
        queued=queued,
        owner=owner,
    )


def test_status_says_what_waits_in_the_chat_and_to_an_owner_what_the_cluster_does() -> None:
    queued = Queued(waiting=2, running=5, queued=12, replicas=3)

    plain = render(status(queued, owner=True), verbose=False).splitlines()
    verbose = render(status(queued, owner=True), verbose=True).splitlines()
    not_owner = render(status(queued, owner=False), verbose=True)
    one_process = render(status(None, owner=True), verbose=True)

    assert "Waiting their turn: 2 more of this chat's messages." in plain
    assert verbose[-2:] == [
        "Replicas: 3 alive; 5 other messages being answered, 12 waiting (every chat)",
        "Waiting their turn: 2 more of this chat's messages.",
    ]
    assert "Replicas" not in not_owner and "Replicas" not in one_process
    assert "Waiting their turn" not in one_process


async def test_status_in_a_replica_reads_the_shared_queue(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    """The whole bot on the database: a /status queued behind a turn is answered in its turn,
    and sees the message queued after it."""
    hang = Hang(then=Reply("the answer"))
    fake_openai.script(hang, Reply("later"))
    store = StoreSettings(url=SecretStr(pg_url))
    settings = make_settings(
        tmp_path / "ws", telegram=fake_telegram, openai=fake_openai, store=store
    )
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "a question")
        await fake_openai.wait_until_hanging()
        fake_telegram.push_text(OWNER, OWNER, "/status verbose")
        fake_telegram.push_text(OWNER, OWNER, "one more")
        await queued(pg_url, 2)  # both behind the hanging turn
        fake_openai.release()
        sent = await fake_telegram.wait_for_messages(OWNER, 3)

    answer, status, later = (m.text for m in sent)
    assert (answer, later) == ("the answer", "later")
    assert "Waiting their turn: 1 more of this chat's messages." in status.splitlines()
    assert "Replicas: 1 alive; 0 other messages being answered, 1 waiting (every chat)" in status


async def queued(url: str, count: int) -> None:
    """Until `count` messages wait in the shared queue."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for _ in range(200):
            cursor = await conn.execute(
                "SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'"
            )
            row = await cursor.fetchone()
            if row is not None and row[0] >= count:
                return
            await asyncio.sleep(0.05)
    raise TimeoutError(f"fewer than {count} messages queued")
