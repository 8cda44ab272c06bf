"""Replicated mode end to end on loopback: two replicas (two apps, two workspaces, one
PostgreSQL) serving Telegram's webhooks, the fake Bot API delivering round robin with
Telegram's per-chat order and retries. Skipped without `MNEMO_TEST_PG`."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
from pydantic import SecretStr

from bot.app import App, build_app, build_telegram
from bot.settings import Settings, StoreSettings
from tests.fakes.openai_api import FakeOpenAI, Hang, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.fakes.webhook_delivery import SECRET_HEADER
from tests.harness import API_KEY, FRIEND, OWNER, make_settings

SECRET = "s3cret-token_for-tests"
CHATS = (OWNER, FRIEND)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def replica(workspace: Path, telegram: FakeTelegram, openai: FakeOpenAI, url: str) -> Settings:
    port = free_port()
    store = StoreSettings(url=SecretStr(url), heartbeat=0.5, stalled_after=2.0)
    settings = make_settings(workspace, telegram=telegram, openai=openai, store=store)
    hooked = settings.telegram.model_copy(
        update={
            "mode": "webhook",
            "webhook_url": f"http://127.0.0.1:{port}/telegram",
            "webhook_host": "127.0.0.1",
            "webhook_port": port,
            "webhook_secret": SecretStr(SECRET),
            "webhook_max_connections": 10,
        }
    )
    return settings.model_copy(update={"telegram": hooked})


@asynccontextmanager
async def running(settings: Settings, telegram: FakeTelegram) -> AsyncIterator[str]:
    """One replica serving webhooks until the block ends; its webhook URL."""
    async with serving(settings, telegram) as (url, _app):
        yield url


@asynccontextmanager
async def serving(settings: Settings, telegram: FakeTelegram) -> AsyncIterator[tuple[str, App]]:
    """One replica serving webhooks until the block ends; its webhook URL and its app."""
    app = build_app(settings, api_key=API_KEY)
    channel = build_telegram(app, settings, token=telegram.token)
    await app.start()
    stop = asyncio.Event()
    task = asyncio.create_task(channel.run(stop))
    url = str(settings.telegram.webhook_url)
    try:
        await telegram.webhook.wait_until(lambda: url in telegram.webhook.urls)
        yield url, app
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=15)
        await app.aclose()


def echo(request: dict[str, Any]) -> Reply:
    return Reply(f"re: {request['messages'][-1]['content']}")


async def test_two_replicas_answer_each_chat_once_and_in_order(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    fake_openai.answer_all(echo)
    fake_telegram.webhook.duplicate_every = 3  # a third of the updates delivered twice
    first = replica(tmp_path / "a", fake_telegram, fake_openai, pg_url)
    second = replica(tmp_path / "b", fake_telegram, fake_openai, pg_url)
    async with running(first, fake_telegram) as url_a, running(second, fake_telegram) as url_b:
        for n in range(6):
            for chat in CHATS:
                fake_telegram.push_text(chat, chat, f"{chat} says {n}")
        replies = {chat: await fake_telegram.wait_for_messages(chat, 6) for chat in CHATS}
        await asyncio.sleep(0.5)  # a duplicate answered late would show now

    for chat in CHATS:
        texts = [m.text for m in fake_telegram.sent_messages(chat)]
        assert texts == [f"re: {chat} says {n}" for n in range(6)]
        assert [m.text for m in replies[chat]] == texts[:6]
    attempts = fake_telegram.webhook.attempts
    assert {a.url for a in attempts} == {url_a, url_b}  # both replicas took updates
    repeats = [a for a in attempts if a.repeat]
    assert repeats and all(a.status == 200 for a in repeats)  # recognised, confirmed, not run
    assert fake_openai.calls == 12


async def test_the_secret_token_is_checked_and_each_replica_says_it_is_up(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    settings = replica(tmp_path / "a", fake_telegram, fake_openai, pg_url)
    update = {"update_id": 1, "message": {"message_id": 1, "date": 0, "text": "hi"}}
    async with running(settings, fake_telegram) as url, aiohttp.ClientSession() as http:
        async with http.post(url, json=update, headers={SECRET_HEADER: "wrong"}) as refused:
            assert refused.status == 403
        async with http.post(url, json=update) as bare:
            assert bare.status == 403
        async with http.get(url.replace("/telegram", "/healthz")) as health:
            assert health.status == 200
    [call] = fake_telegram.calls_to("setWebhook")
    assert call.params["secret_token"] == SECRET
    assert int(call.params["max_connections"]) == 10
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        cursor = await conn.execute("SELECT count(*) FROM mnemo_inbox")
        assert await cursor.fetchone() == (0,)


async def test_with_the_database_away_updates_get_500_and_come_again(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    fake_openai.answer_all(echo)
    settings = replica(tmp_path / "a", fake_telegram, fake_openai, pg_url)
    name = psycopg.conninfo.conninfo_to_dict(pg_url)["dbname"]
    admin_url = psycopg.conninfo.make_conninfo(pg_url, dbname="postgres")
    async with running(settings, fake_telegram):
        async with await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as admin:
            await admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
            await admin.execute(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            fake_telegram.push_text(OWNER, OWNER, "anyone there?")
            await fake_telegram.webhook.wait_until(
                lambda: any(a.status == 500 for a in fake_telegram.webhook.attempts)
            )
            await admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1, timeout=30)  # reconnecting
    assert reply.text == "re: anyone there?"
    statuses = [a.status for a in fake_telegram.webhook.attempts]
    assert 500 in statuses and statuses[-1] == 200


async def test_a_stop_reaching_another_replica_stops_the_turn_where_it_runs(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    fake_openai.script(Hang(), Reply("after the stop"))
    first = replica(tmp_path / "a", fake_telegram, fake_openai, pg_url)
    second = replica(tmp_path / "b", fake_telegram, fake_openai, pg_url)
    key = f"telegram:{OWNER}"
    async with serving(first, fake_telegram) as a, serving(second, fake_telegram) as b:
        fake_telegram.push_text(OWNER, OWNER, "a long question")
        await fake_openai.wait_until_hanging()
        replicas = [a, b]
        [(_, busy)] = [r for r in replicas if r[1].router.turns.running.is_running(key)]
        [(idle_url, _)] = [r for r in replicas if r[1] is not busy]
        async with aiohttp.ClientSession() as http:  # Telegram hands the /stop to the other
            headers = {SECRET_HEADER: SECRET}
            async with http.post(idle_url, json=stop_update(), headers=headers) as answer:
                assert answer.status == 200
        [stopped] = await fake_telegram.wait_for_messages(OWNER, 1)
        fake_telegram.push_text(OWNER, OWNER, "and now?")
        [_, later] = await fake_telegram.wait_for_messages(OWNER, 2)

    assert stopped.text == "Stopped."
    assert later.text == "after the stop"  # the chat is not stuck
    assert fake_openai.calls == 2


def stop_update() -> dict[str, Any]:
    user = {"id": OWNER, "is_bot": False, "first_name": "Ann"}
    message = {
        "message_id": 900,
        "date": 0,
        "chat": {"id": OWNER, "type": "private", "first_name": "Ann"},
        "from": user,
        "text": "/stop",
        "entities": [{"type": "bot_command", "offset": 0, "length": 5}],
    }
    return {"update_id": 9000, "message": message}
