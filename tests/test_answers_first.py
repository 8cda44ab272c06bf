"""Answers first: while the bot's Telegram request budget is tight, the 👀 reaction, typing and
draft updates give way (skip their request); answers always go (real PTB bot, fake Bot API)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from telegram.ext import ExtBot

from bot.channels.telegram.budget import TIGHT, AnswersFirst
from bot.channels.telegram.drafts import DraftSupport, TelegramDraft
from bot.channels.telegram.replies import TelegramReplier
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
