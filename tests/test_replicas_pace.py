"""Telegram's send limits shared by the replicas (`bot.replicas.pace`): slots taken from two
replicas at once never let the bot exceed its ~30 a second, nor ~20 a minute into one group;
`AnswersFirst` takes the slots of each request that names a chat (real PTB bot, fake Bot API).
The tests on PostgreSQL are skipped without `MNEMO_TEST_PG`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from telegram.ext import ExtBot

from bot.channels.telegram.budget import AnswersFirst, group_of
from bot.replicas.database import open_pool
from bot.replicas.pace import BOT_KEY, GROUP_LIMIT, OVERALL, SharedPace
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER

GROUP = -100555


@pytest.fixture
async def two(pg_url: str) -> AsyncIterator[list[SharedPace]]:
    pools = [open_pool(pg_url), open_pool(pg_url)]
    for pool in pools:
        await pool.open()
    try:
        yield [SharedPace(pool) for pool in pools]
    finally:
        for pool in pools:
            await pool.close()


async def test_slots_from_two_replicas_keep_the_bot_to_its_rate(two: list[SharedPace]) -> None:
    slots = await asyncio.gather(*(two[n % 2].take(BOT_KEY, OVERALL) for n in range(150)))

    at = sorted(slot.at for slot in slots)
    # a bot quiet for a second sends a second's worth at once, then one per 1/30 s: any 61
    # requests in a row span at least a second, whichever replica sent them
    assert len([slot for slot in slots if slot.wait == 0]) >= OVERALL.count
    assert min(at[k + 60] - at[k] for k in range(len(at) - 60)) >= 1.0 - 1e-6
    assert max(slot.wait for slot in slots) >= 2.0  # 150 slots: the last ones waited


async def test_a_group_gets_twenty_a_minute_from_all_replicas_together(
    two: list[SharedPace],
) -> None:
    slots = [await two[n % 2].take(f"group:{GROUP}", GROUP_LIMIT) for n in range(22)]
    elsewhere = await two[0].take("group:-100777", GROUP_LIMIT)

    assert [slot.wait for slot in slots[:20]] == [0.0] * 20  # a quiet group: 20 at once
    assert slots[20].wait > 2.0 and slots[21].wait > slots[20].wait + 2.0  # then one per 3 s
    assert elsewhere.wait == 0.0  # another group's count is its own


def test_which_chats_are_groups() -> None:
    assert [group_of(c) for c in (OWNER, str(OWNER), GROUP, str(GROUP), "@channel")] == [
        None,
        None,
        GROUP,
        GROUP,
        "@channel",
    ]


async def test_a_request_naming_a_chat_waits_for_its_slots_others_do_not(
    fake_telegram: FakeTelegram,
) -> None:
    taken: list[int | str | None] = []

    async def pace(group: int | str | None) -> None:
        taken.append(group)

    limiter = AnswersFirst(max_retries=0, pace=pace)
    async with ExtBot(
        fake_telegram.token, base_url=fake_telegram.base_url, rate_limiter=limiter
    ) as bot:
        await asyncio.gather(*(bot.send_message(OWNER, f"answer {n}") for n in range(3)))
        await bot.send_message(GROUP, "to the group")
        await bot.get_me()

    assert len(fake_telegram.sent_messages(OWNER)) == 3
    assert taken == [None, None, None, GROUP]
