"""The fake Bot API speaks the protocol the real python-telegram-bot 22.8 expects."""

from __future__ import annotations

import asyncio
import datetime as dtm
from collections.abc import AsyncIterator

import aiohttp
import pytest
from telegram import (
    Bot,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    MessageEntity,
    ReplyParameters,
    Update,
)
from telegram.error import BadRequest, Conflict, InvalidToken, RetryAfter
from telegram.ext import ApplicationBuilder, ContextTypes, MessageHandler, filters

from tests.fakes.telegram_api import FakeTelegram

CHAT = 42


@pytest.fixture
async def bot(fake_telegram: FakeTelegram) -> AsyncIterator[Bot]:
    async with Bot(fake_telegram.token, base_url=fake_telegram.base_url) as real_bot:
        yield real_bot


async def test_get_me_describes_the_bot(bot: Bot, fake_telegram: FakeTelegram) -> None:
    me = await bot.get_me()

    assert me.is_bot
    assert me.username == "mnemo_test_bot"
    assert me.id == 123456
    assert me.can_join_groups is True
    # Bot.__aenter__ already called getMe once to initialize.
    assert [c.method for c in fake_telegram.calls] == ["getMe", "getMe"]


async def test_send_message_with_entities_is_recorded(
    bot: Bot, fake_telegram: FakeTelegram
) -> None:
    bold = MessageEntity(MessageEntity.BOLD, offset=0, length=5)

    message = await bot.send_message(CHAT, "hello 😀 world", entities=[bold])
    second = await bot.send_message(CHAT, "again")

    assert message.message_id == 1
    assert second.message_id == 2
    assert message.chat.type == "private"
    assert message.from_user is not None and message.from_user.is_bot
    assert message.entities == (bold,)
    [sent, _] = fake_telegram.sent_messages(CHAT)
    assert sent.text == "hello 😀 world"
    assert sent.entities == [{"type": "bold", "offset": 0, "length": 5}]
    [call, _] = fake_telegram.calls_to("sendMessage")
    assert call.params["chat_id"] == CHAT


async def test_text_that_looks_like_json_stays_a_string(
    bot: Bot, fake_telegram: FakeTelegram
) -> None:
    await bot.send_message(CHAT, "42")

    assert fake_telegram.sent_messages(CHAT)[0].text == "42"


@pytest.mark.parametrize(
    "text",
    ["a" * 4097, "😀" * 2049],  # the emoji case is only 2049 code points but 4098 UTF-16 units
    ids=["ascii", "astral"],
)
async def test_message_over_4096_utf16_units_is_rejected(
    bot: Bot, fake_telegram: FakeTelegram, text: str
) -> None:
    with pytest.raises(BadRequest, match=r"(?i)message is too long"):
        await bot.send_message(CHAT, text)

    assert fake_telegram.sent_messages() == []
    assert fake_telegram.calls_to("sendMessage")[0].failed


async def test_message_of_exactly_4096_utf16_units_is_accepted(bot: Bot) -> None:
    message = await bot.send_message(CHAT, "😀" * 2048)

    assert message.text == "😀" * 2048


async def test_entity_outside_the_text_is_rejected(bot: Bot) -> None:
    with pytest.raises(BadRequest, match=r"(?i)can't parse entities"):
        await bot.send_message(CHAT, "short", entities=[MessageEntity("bold", 3, 10)])


async def test_unbalanced_html_is_rejected(bot: Bot) -> None:
    with pytest.raises(BadRequest, match=r"(?i)can't parse entities"):
        await bot.send_message(CHAT, "<b>bold <i>both</b>", parse_mode="HTML")

    ok = await bot.send_message(CHAT, "<b>bold</b> &amp; plain", parse_mode="HTML")
    assert ok.message_id == 1


async def test_injected_parse_failure_only_hits_matching_calls(
    bot: Bot, fake_telegram: FakeTelegram
) -> None:
    fake_telegram.fail_next("sendMessage", when=lambda params: "entities" in params)

    await bot.send_message(CHAT, "plain text is not affected")
    with pytest.raises(BadRequest, match=r"(?i)^can't parse entities"):
        await bot.send_message(CHAT, "*bold", entities=[MessageEntity("bold", 0, 5)])
    await bot.send_message(CHAT, "*bold", entities=[MessageEntity("bold", 0, 5)])

    assert [c.failed for c in fake_telegram.calls_to("sendMessage")] == [False, True, False]
    assert len(fake_telegram.sent_messages(CHAT)) == 2


async def test_injected_429_raises_retry_after(
    bot: Bot, fake_telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without PTB_TIMEDELTA, reading RetryAfter.retry_after emits a PTBDeprecationWarning.
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    fake_telegram.fail_next("sendMessage", retry_after=3)

    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(CHAT, "flood")
    await bot.send_message(CHAT, "after the pause")

    assert caught.value.retry_after == dtm.timedelta(seconds=3)
    failed = fake_telegram.calls_to("sendMessage")[0]
    assert (failed.failed, failed.error_code) == (True, 429)
    assert [m.text for m in fake_telegram.sent_messages(CHAT)] == ["after the pause"]


async def test_edit_and_delete(bot: Bot, fake_telegram: FakeTelegram) -> None:
    message = await bot.send_message(CHAT, "draft")

    edited = await bot.edit_message_text("final", chat_id=CHAT, message_id=message.message_id)
    with pytest.raises(BadRequest, match=r"(?i)message is not modified"):
        await bot.edit_message_text("final", chat_id=CHAT, message_id=message.message_id)
    assert await bot.delete_message(CHAT, message.message_id)
    with pytest.raises(BadRequest, match=r"(?i)message to edit not found"):
        await bot.edit_message_text("again", chat_id=CHAT, message_id=message.message_id)

    assert isinstance(edited, type(message)) and edited.text == "final"
    [state] = fake_telegram.sent_messages(CHAT)
    assert (state.text, state.edit_count, state.deleted) == ("final", 1, True)


async def test_reactions_and_replies_are_recorded(bot: Bot, fake_telegram: FakeTelegram) -> None:
    fake_telegram.push_text(CHAT, CHAT, "hi")
    asked = fake_telegram.pushed_updates[-1]["message"]["message_id"]

    assert await bot.set_message_reaction(CHAT, asked, reaction="👀")
    reply = await bot.send_message(CHAT, "hello", reply_parameters=ReplyParameters(asked))
    with pytest.raises(BadRequest, match=r"(?i)reaction_invalid"):
        await bot.set_message_reaction(CHAT, asked, reaction="🦖")
    with pytest.raises(BadRequest, match=r"(?i)message to react not found"):
        await bot.set_message_reaction(CHAT, 99, reaction="👀")

    assert fake_telegram.reactions(CHAT, asked) == [{"type": "emoji", "emoji": "👀"}]
    assert reply.reply_to_message is not None and reply.reply_to_message.text == "hi"
    assert fake_telegram.sent_messages(CHAT)[0].reply_to_message_id == asked
    await bot.set_message_reaction(CHAT, asked)  # no reaction: cleared
    assert fake_telegram.reactions(CHAT, asked) == []


async def test_wrong_token_is_unauthorized(fake_telegram: FakeTelegram) -> None:
    with pytest.raises(InvalidToken, match="rejected"):
        async with Bot("999:wrong", base_url=fake_telegram.base_url):
            pass


async def test_raw_json_body_and_unknown_method(fake_telegram: FakeTelegram) -> None:
    url = f"{fake_telegram.base_url}{fake_telegram.token}"
    async with aiohttp.ClientSession() as http:
        sent = await http.post(f"{url}/sendMessage", json={"chat_id": 7, "text": "json body"})
        missing = await http.post(f"{url}/sendRocket", json={})
        sent_body, missing_body = await sent.json(), await missing.json()

    assert sent_body["ok"] and sent_body["result"]["text"] == "json body"
    assert missing.status == 404
    assert missing_body == {"ok": False, "error_code": 404, "description": "Not Found"}


async def test_pushed_group_command_parses_as_a_topic_message(
    bot: Bot, fake_telegram: FakeTelegram
) -> None:
    update_id = fake_telegram.push_text(
        -1001234567890,
        7,
        "/remember@mnemo_test_bot tea",
        chat_type="supergroup",
        username="ann",
        message_thread_id=5,
    )

    [update] = await bot.get_updates(timeout=0)

    assert update.update_id == update_id == 1000
    message = update.message
    assert message is not None and message.from_user is not None
    assert message.text == "/remember@mnemo_test_bot tea"
    assert message.entities[0].type == MessageEntity.BOT_COMMAND
    assert message.entities[0].length == len("/remember@mnemo_test_bot")
    assert message.chat.type == "supergroup" and message.chat.title
    assert message.is_topic_message and message.message_thread_id == 5
    assert message.from_user.username == "ann"
    assert message.date.tzinfo is not None


async def test_long_poll_wakes_on_push_and_offset_confirms(
    bot: Bot, fake_telegram: FakeTelegram
) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    poll = asyncio.create_task(bot.get_updates(timeout=5))
    await asyncio.sleep(0.05)
    update_id = fake_telegram.push_text(CHAT, CHAT, "hi")

    [woken] = await poll
    woke_after = loop.time() - started
    again = await bot.get_updates(timeout=0)
    confirmed = await bot.get_updates(offset=update_id + 1, timeout=0)

    assert woke_after < 1
    assert woken.update_id == update_id
    assert [u.update_id for u in again] == [update_id]  # not confirmed yet
    assert confirmed == ()
    assert fake_telegram.pending_updates == []


async def test_application_receives_a_pushed_message_and_replies(
    fake_telegram: FakeTelegram,
) -> None:
    async def echo(update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message is not None
        text = f"echo: {update.effective_message.text}"
        await update.effective_message.reply_text(text, do_quote=True)

    app = ApplicationBuilder().token(fake_telegram.token).base_url(fake_telegram.base_url).build()
    app.add_handler(MessageHandler(filters.TEXT, echo))

    async with app:
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(poll_interval=0, timeout=1)
        fake_telegram.push_text(CHAT, CHAT, "hello bot")
        [reply] = await fake_telegram.wait_for_messages(CHAT, 1, timeout=5)
        await app.updater.stop()
        await app.stop()

    assert reply.text == "echo: hello bot"
    assert reply.reply_to_message_id == 1
    assert reply.message_id == 2  # user and bot messages share the chat's id sequence
    assert fake_telegram.pending_updates == []  # the update was confirmed on stop


async def test_wait_for_messages_times_out_with_a_description(
    bot: Bot, fake_telegram: FakeTelegram
) -> None:
    await bot.send_message(CHAT, "only one")

    with pytest.raises(TimeoutError, match="only one"):
        await fake_telegram.wait_for_messages(CHAT, 2, timeout=0.1)


async def test_commands_and_chat_action(bot: Bot, fake_telegram: FakeTelegram) -> None:
    await bot.set_my_commands([("start", "Say hello"), ("forget", "Forget everything")])

    commands = await bot.get_my_commands()
    assert await bot.send_chat_action(CHAT, "typing")
    with pytest.raises(BadRequest, match=r"(?i)bot_command_invalid"):
        await bot.set_my_commands([("Bad-Name", "nope")])

    assert [c.command for c in commands] == ["start", "forget"]
    assert fake_telegram.bot_commands()[1] == {
        "command": "forget",
        "description": "Forget everything",
    }
    assert fake_telegram.calls_to("sendChatAction")[0].params["action"] == "typing"


async def test_a_second_poller_terminates_the_first_with_conflict(
    bot: Bot, fake_telegram: FakeTelegram
) -> None:
    # One Bot serialises its getUpdates calls (a pool of one connection): use a second Bot.
    first = asyncio.create_task(bot.get_updates(timeout=5))
    await fake_telegram.wait_for_poll()
    async with Bot(fake_telegram.token, base_url=fake_telegram.base_url) as other:
        second = asyncio.create_task(other.get_updates(timeout=5))
        with pytest.raises(Conflict, match="only one bot instance"):
            await first
        fake_telegram.push_text(CHAT, CHAT, "for the survivor")
        [update] = await second

    assert update.message is not None and update.message.text == "for the survivor"


async def test_drafts_are_recorded_in_private_chats_only(
    bot: Bot, fake_telegram: FakeTelegram
) -> None:
    assert await bot.send_message_draft(CHAT, 7, "Hel")
    assert await bot.send_message_draft(CHAT, 7, "Hello", entities=[MessageEntity("bold", 0, 5)])
    with pytest.raises(BadRequest, match="private chat"):
        await bot.send_message_draft(-100, 7, "Hel")

    assert [(d.chat_id, d.draft_id, d.text) for d in fake_telegram.drafts] == [
        (CHAT, 7, "Hel"),
        (CHAT, 7, "Hello"),
    ]
    assert fake_telegram.drafts[1].entities == [{"type": "bold", "offset": 0, "length": 5}]
    assert not fake_telegram.sent_messages()


async def test_a_server_without_drafts_answers_not_found(
    bot: Bot, fake_telegram: FakeTelegram
) -> None:
    fake_telegram.drafts_supported = False

    with pytest.raises(InvalidToken, match="Not Found"):
        await bot.send_message_draft(CHAT, 7, "Hel")
    assert not fake_telegram.drafts


async def test_inline_keyboards_are_checked_kept_and_removed_by_an_edit(
    bot: Bot, fake_telegram: FakeTelegram
) -> None:
    too_long = InlineKeyboardMarkup([[InlineKeyboardButton("Undo", callback_data="x" * 65)]])
    with pytest.raises(BadRequest, match=r"(?i)button_data_invalid"):
        await bot.send_message(42, "receipt", reply_markup=too_long)
    keyed = InlineKeyboardMarkup([[InlineKeyboardButton("Undo", callback_data="rc:1:u")]])
    sent = await bot.send_message(42, "receipt", reply_markup=keyed)
    assert fake_telegram.sent_messages(42)[0].buttons == [("Undo", "rc:1:u")]
    await bot.edit_message_text("done", chat_id=42, message_id=sent.message_id)
    assert fake_telegram.sent_messages(42)[0].buttons == []


async def test_a_press_arrives_as_a_callback_query_answered_once(
    bot: Bot, fake_telegram: FakeTelegram
) -> None:
    keyed = InlineKeyboardMarkup([[InlineKeyboardButton("Undo", callback_data="rc:1:u")]])
    sent = await bot.send_message(42, "receipt", reply_markup=keyed)
    query_id = fake_telegram.push_press(42, 7, sent.message_id, "rc:1:u")
    [update] = await bot.get_updates()
    assert update.callback_query is not None
    assert update.callback_query.data == "rc:1:u"
    assert update.callback_query.from_user.id == 7
    assert update.callback_query.message is not None
    assert update.callback_query.message.message_id == sent.message_id
    assert await bot.answer_callback_query(query_id, text="Undone.")
    with pytest.raises(BadRequest, match=r"(?i)query is too old"):
        await bot.answer_callback_query(query_id, text="again")
    assert fake_telegram.press_answers == {query_id: "Undone."}
