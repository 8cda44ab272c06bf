"""Answers first: while the bot's Telegram request budget is tight, the 👀 reaction, typing and
draft updates give way (skip their request); answers always go (real PTB bot, fake Bot API)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import ExitStack
from typing import Any

import pytest
from telegram.ext import ExtBot

from bot.channels.telegram.budget import BUDGET, TIGHT, AnswersFirst, answering
from bot.channels.telegram.drafts import DraftSupport, TelegramDraft
from bot.channels.telegram.replies import TelegramReplier
from bot.storage.inbox import looking_first
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER


@pytest.fixture
async def bot(fake_telegram: FakeTelegram) -> AsyncIterator[ExtBot[Any]]:
    limiter = AnswersFirst(max_retries=0)
    async with ExtBot(
        fake_telegram.token, base_url=fake_telegram.base_url, rate_limiter=limiter
    ) as made:
        yield made


async def answers(bot: ExtBot[Any], count: int) -> None:
    await asyncio.gather(*(bot.send_message(OWNER, f"answer {n}") for n in range(count)))


async def test_the_reaction_gives_way_when_the_budget_is_tight(
    bot: ExtBot[Any], fake_telegram: FakeTelegram
) -> None:
    fake_telegram.push_text(OWNER, OWNER, "one")
    replier = TelegramReplier(bot, OWNER, None, typing_interval=4.0, message_id=1, reaction="👀")

    await replier.acknowledge()  # the budget is free: the reaction goes
    await answers(bot, TIGHT)
    await replier.acknowledge()  # tight: it gives way

    assert len(fake_telegram.calls_to("setMessageReaction")) == 1
    assert len(fake_telegram.sent_messages(OWNER)) == TIGHT  # every answer went


async def test_draft_updates_give_way_when_the_budget_is_tight(
    bot: ExtBot[Any], fake_telegram: FakeTelegram
) -> None:
    draft = TelegramDraft(bot, OWNER, None, support=DraftSupport(), interval=0.1)

    await draft.show("The answer so far")
    await answers(bot, TIGHT)
    await draft.show("The answer so far, and more")

    assert [d.text for d in fake_telegram.drafts] == ["The answer so far"]


async def test_decorations_leave_room_for_the_answers_of_the_turns_running(
    bot: ExtBot[Any], fake_telegram: FakeTelegram
) -> None:
    fake_telegram.push_text(OWNER, OWNER, "one")
    replier = TelegramReplier(bot, OWNER, None, typing_interval=4.0, message_id=1, reaction="👀")

    with ExitStack() as running:  # as many turns running as the budget has requests
        for _ in range(BUDGET):
            running.enter_context(answering(bot))
        await replier.acknowledge()  # no request spent yet, but each turn's answer needs one
    await replier.acknowledge()  # the turns are done: the reaction goes

    assert len(fake_telegram.calls_to("setMessageReaction")) == 1


async def test_a_reaction_is_taken_away_once_the_answers_have_gone(
    bot: ExtBot[Any], fake_telegram: FakeTelegram
) -> None:
    fake_telegram.push_text(OWNER, OWNER, "one")
    replier = TelegramReplier(bot, OWNER, None, typing_interval=4.0, message_id=1, reaction="👀")
    await replier.acknowledge()
    await answers(bot, TIGHT)

    [part] = replier.parts("the answer")
    await replier.send_part(part)  # tight: the reaction stays for now, the answer went
    assert fake_telegram.reactions(OWNER, 1) != []
    for _ in range(200):  # the budget frees within a second
        if not fake_telegram.reactions(OWNER, 1):
            break
        await asyncio.sleep(0.05)

    assert fake_telegram.reactions(OWNER, 1) == []
    assert fake_telegram.sent_messages(OWNER)[-1].text == "the answer"


async def test_a_request_told_to_look_first_looks_after_its_wait_and_can_be_stopped(
    fake_telegram: FakeTelegram,
) -> None:
    order: list[str] = []

    async def pace(_group: int | str | None) -> None:
        order.append("slot")

    async def still_ours() -> None:
        order.append("look")

    async def given_away() -> None:
        order.append("look")
        raise LookupError("the turn is another's now")

    limiter = AnswersFirst(max_retries=0, pace=pace)
    async with ExtBot(
        fake_telegram.token, base_url=fake_telegram.base_url, rate_limiter=limiter
    ) as bot:
        with looking_first(still_ours):
            await bot.send_message(OWNER, "sent")
        with looking_first(given_away), pytest.raises(LookupError):
            await bot.send_message(OWNER, "never sent")
        await bot.send_message(OWNER, "no look outside the block")

    assert order == ["slot", "look", "slot", "look", "slot"]
    texts = [m.text for m in fake_telegram.sent_messages(OWNER)]
    assert texts == ["sent", "no look outside the block"]


async def test_a_wait_for_the_shared_slots_makes_the_budget_tight_for_this_replica_too(
    fake_telegram: FakeTelegram,
) -> None:
    async def busy_pace(_group: int | str | None) -> None:  # the other replicas took the slots
        await asyncio.sleep(0.2)

    limiter = AnswersFirst(max_retries=0, pace=busy_pace)
    async with ExtBot(
        fake_telegram.token, base_url=fake_telegram.base_url, rate_limiter=limiter
    ) as bot:
        replier = TelegramReplier(
            bot, OWNER, None, typing_interval=4.0, message_id=1, reaction="👀"
        )
        assert not limiter.tight()  # this replica sent nothing yet
        await bot.send_message(OWNER, "an answer")  # it waited for its slot
        assert limiter.tight()
        await replier.acknowledge()  # the reaction gives way
        assert fake_telegram.calls_to("setMessageReaction") == []
