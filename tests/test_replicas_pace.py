"""Telegram's send rate shared by the replicas (`bot.replicas.pace`): slots taken from two
replicas at once never let the bot exceed its ~30 a second; `AnswersFirst` takes a slot for
each request that names a chat (real PTB bot, fake Bot API). The first test is skipped without
`MNEMO_TEST_PG`."""

from __future__ import annotations

import asyncio

from telegram.ext import ExtBot

from bot.channels.telegram.budget import AnswersFirst
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER

PER_SECOND = 30.0


async def test_slots_from_two_replicas_keep_the_bot_to_its_rate(pg_url: str) -> None:
    from bot.replicas.database import open_pool
    from bot.replicas.pace import SharedPace

    pools = [open_pool(pg_url), open_pool(pg_url)]
    for pool in pools:
        await pool.open()
    try:
        paces = [SharedPace(pool, per_second=PER_SECOND) for pool in pools]
        slots = await asyncio.gather(*(paces[n % 2].take() for n in range(150)))
    finally:
        for pool in pools:
            await pool.close()

    at = sorted(slot.at for slot in slots)
    at_once = [slot for slot in slots if slot.wait == 0]
    # a bot idle for a second sends a second's worth at once, then one per 1/30 s: any 61
    # requests in a row span at least a second, whichever replica sent them
    assert len(at_once) >= PER_SECOND
    assert min(at[k + 60] - at[k] for k in range(len(at) - 60)) >= 1.0 - 1e-6
    assert max(slot.wait for slot in slots) >= 2.0  # 150 slots: the last ones waited


async def test_a_request_naming_a_chat_waits_for_its_slot_others_do_not(
    fake_telegram: FakeTelegram,
) -> None:
    taken: list[int] = []

    async def pace() -> None:
        taken.append(len(taken))

    limiter = AnswersFirst(max_retries=0, pace=pace)
    async with ExtBot(
        fake_telegram.token, base_url=fake_telegram.base_url, rate_limiter=limiter
    ) as bot:
        await asyncio.gather(*(bot.send_message(OWNER, f"answer {n}") for n in range(5)))
        await bot.get_me()

    assert len(fake_telegram.sent_messages(OWNER)) == 5
    assert len(taken) == 5
