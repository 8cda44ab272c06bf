"""Telegram updates as `Inbound`s: private chats, groups (mentions, replies, commands), topics."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import telegram

from bot.channels.telegram import to_inbound
from bot.models import Inbound

BOT_NAME = "mnemo_test_bot"
GROUP = {"id": -1001234, "type": "supergroup", "title": "Friends"}
ANN = {"id": 1001, "is_bot": False, "first_name": "Ann", "username": "ann"}
MNEMO = {"id": 123, "is_bot": True, "first_name": "Mnemo", "username": BOT_NAME}
OTHER_BOT = {"id": 456, "is_bot": True, "first_name": "Other", "username": "other_bot"}
DATE = 1_795_000_000


def update(text: str, *, chat: dict[str, Any] = GROUP, **message: Any) -> telegram.Update:
    payload = {
        "update_id": 77,
        "message": {
            "message_id": 5,
            "date": DATE,
            "chat": chat,
            "from": ANN,
            "text": text,
            **message,
        },
    }
    update = telegram.Update.de_json(payload, telegram.Bot("123:abc"))
    assert update is not None
    return update


def earlier(author: dict[str, Any]) -> dict[str, Any]:
    return {"message_id": 4, "date": DATE - 60, "chat": GROUP, "from": author, "text": "earlier"}


def inbound_text(update: telegram.Update) -> str | None:
    """The text of the turn the update starts (None: it starts none)."""
    inbound = to_inbound(update, bot_username=BOT_NAME)
    return None if inbound is None or not inbound.addressed else inbound.text


def test_a_private_message_becomes_an_inbound() -> None:
    private = {"id": 1001, "type": "private", "first_name": "Ann"}

    inbound = to_inbound(update("hello there", chat=private), bot_username=BOT_NAME)

    assert inbound == Inbound(
        id="telegram:update:77",
        channel="telegram",
        chat_id=1001,
        user_id=1001,
        text="hello there",
        received_at=datetime.fromtimestamp(DATE, tz=UTC),
        chat_type="private",
        message_id=5,
        user_name="ann",
        user_display_name="Ann (@ann)",
    )
    assert inbound.session_key == "telegram:1001"


def test_a_group_message_not_for_us_is_chatter_and_starts_no_turn() -> None:
    inbound = to_inbound(update("lunch at noon?"), bot_username=BOT_NAME)

    assert inbound is not None
    assert (inbound.text, inbound.addressed, inbound.user_name) == ("lunch at noon?", False, "ann")
    assert inbound_text(update("@mnemo_test_bot lunch?")) == "lunch?"


def test_a_command_for_another_bot_is_not_even_chatter() -> None:
    assert to_inbound(update("/new@otherbot now"), bot_username=BOT_NAME) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@mnemo_test_bot what is the plan?", "what is the plan?"),
        ("what is the plan, @Mnemo_Test_Bot", "what is the plan,"),
    ],
)
def test_a_mention_addresses_us_and_is_cut_from_the_text(text: str, expected: str) -> None:
    assert inbound_text(update(text)) == expected


def test_a_mention_of_a_longer_bot_name_is_not_for_us() -> None:
    assert inbound_text(update("@mnemo_test_bot_dev what is the plan?")) is None


def test_a_reply_to_our_message_addresses_us() -> None:
    inbound = to_inbound(
        update("and tomorrow?", reply_to_message=earlier(MNEMO)), bot_username=BOT_NAME
    )

    assert inbound is not None
    assert (inbound.text, inbound.reply_to_message_id) == ("and tomorrow?", 4)
    assert inbound.chat_type == "supergroup"


def test_a_reply_to_another_bot_is_not_for_us() -> None:
    assert inbound_text(update("and tomorrow?", reply_to_message=earlier(OTHER_BOT))) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/status", "/status"),
        ("/status@mnemo_test_bot", "/status@mnemo_test_bot"),
        ("/status@otherbot", None),
        ("/new@otherbot now", None),
    ],
)
def test_commands_in_groups_are_ours_unless_addressed_elsewhere(
    text: str, expected: str | None
) -> None:
    assert inbound_text(update(text)) == expected


def test_a_forum_topic_message_has_its_own_session() -> None:
    forum = {**GROUP, "is_forum": True}
    topic = update("@mnemo_test_bot hi", chat=forum, message_thread_id=9, is_topic_message=True)

    inbound = to_inbound(topic, bot_username=BOT_NAME)

    assert inbound is not None
    assert inbound.thread_id == 9
    assert inbound.session_key == "telegram:-1001234:9"


def test_a_reply_thread_outside_a_forum_stays_in_the_chat_session() -> None:
    reply = update("@mnemo_test_bot hi", message_thread_id=4, reply_to_message=earlier(ANN))

    inbound = to_inbound(reply, bot_username=BOT_NAME)

    assert inbound is not None
    assert inbound.session_key == "telegram:-1001234"
