"""Streamed replies, end to end: the real bot polls the fake Bot API and streams from the fake
model; what a chat sees while the answer is written (drafts, or a message edited) and after."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bot.channels.telegram.format import render
from bot.settings import Settings
from tests.fakes.openai_api import FakeOpenAI, Reply, ToolCalls
from tests.fakes.telegram_api import FakeTelegram, SentMessage
from tests.harness import OWNER, make_settings, running_bot

GROUP = -100777
LONG = " ".join(f"Sentence number {i} of a long answer." for i in range(40))


def settings_for(
    workspace: Path, telegram: FakeTelegram, openai: FakeOpenAI, **stream: Any
) -> Settings:
    """The test settings with the Telegram streaming settings given (shown every 0.1 s)."""
    settings = make_settings(workspace, telegram=telegram, openai=openai)
    update = {"stream_interval": 0.1, **stream}
    return settings.model_copy(update={"telegram": settings.telegram.model_copy(update=update)})


def visible(telegram: FakeTelegram, chat: int) -> list[SentMessage]:
    return [m for m in telegram.sent_messages(chat) if not m.deleted]


def shown(telegram: FakeTelegram) -> list[str]:
    """Every text a chat saw while an answer was written: drafts, previews and their edits."""
    texts = [d.text for d in telegram.drafts]
    for call in telegram.calls:
        if call.method in ("editMessageText", "sendMessage") and not call.failed:
            texts.append(str(call.params["text"]))
    return texts


async def showing(telegram: FakeTelegram, chat: int, words: str) -> None:
    """Wait until a message left visible in `chat` holds `words` (sent or edited so)."""
    for _ in range(200):
        if any(words in m.text for m in visible(telegram, chat)):
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"no message holding {words!r}: {visible(telegram, chat)}")


async def settled(telegram: FakeTelegram, chat: int, count: int) -> list[SentMessage]:
    """The messages left visible once `count` are there and nothing more changes."""
    await telegram.wait_for_messages(chat, count)
    await asyncio.sleep(0.4)
    return visible(telegram, chat)


async def test_a_long_answer_appears_in_drafts_before_the_formatted_final_message(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply(f"**Here** it comes. {LONG}", pieces=10, chunk_delay=0.15))
    settings = settings_for(tmp_path / "ws", fake_telegram, fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "tell me a lot")
        [final] = await settled(fake_telegram, OWNER, 1)
    drafts = [d.text for d in fake_telegram.drafts]
    assert len(drafts) >= 3
    assert all(final.text.startswith(d) for d in drafts)  # each a beginning of the answer
    assert len(set(drafts)) == len(drafts) and drafts == sorted(drafts, key=len)
    assert len(drafts[0]) < len(final.text) / 2  # the first came long before the end
    assert final.text.startswith("Here it comes.") and final.entities
    assert final.entities[0]["type"] == "bold"
    assert len(fake_telegram.calls_to("sendMessage")) == 1
    assert len({d.draft_id for d in fake_telegram.drafts}) == 1


async def test_no_partial_ever_shows_a_memory_tag_or_its_text(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    answer = (
        "Noted, you like green tea. <memory>Ann likes green tea</memory> Anything else? "
        "<chat-memory>Ann is planning a trip</chat-memory>\n<working-memory>Topic: tea"
        "</working-memory>"
    )
    fake_openai.script(Reply(answer, pieces=len(answer) // 3, chunk_delay=0.01))
    settings = settings_for(tmp_path / "ws", fake_telegram, fake_openai, stream_interval=0.02)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "I like green tea")
        [final] = await settled(fake_telegram, OWNER, 1)
    assert len(fake_telegram.drafts) >= 5
    for text in shown(fake_telegram):
        assert "<" not in text and "Ann likes" not in text and "trip" not in text, text
        assert "Topic" not in text
    assert final.text == "Noted, you like green tea. Anything else?"


async def test_a_tool_call_mid_stream_ends_in_one_final_answer(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        ToolCalls([("current_time", {})], text="Let me look at the clock.", chunk_delay=0.1),
        Reply('{"name": "current_time", "arguments": {}}', pieces=6, chunk_delay=0.1),
        Reply("It is **late**, go to bed.", pieces=4, chunk_delay=0.1),
    )
    settings = settings_for(tmp_path / "ws", fake_telegram, fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "what time is it?")
        [final] = await settled(fake_telegram, OWNER, 1)
    drafts = [d.text for d in fake_telegram.drafts]
    assert "Let me look at the clock." in drafts
    assert not any("{" in text or "current_time" in text for text in drafts)  # a call as text
    assert drafts[-1].startswith("It is")
    assert final.text == "It is late, go to bed."
    assert len(fake_telegram.calls_to("sendMessage")) == 1


async def test_stop_mid_stream_leaves_only_the_stop_answer(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply(LONG, pieces=20, chunk_delay=0.2))
    settings = settings_for(tmp_path / "ws", fake_telegram, fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(GROUP, OWNER, "@mnemo_test_bot tell me a lot", chat_type="group")
        [preview] = await fake_telegram.wait_for_messages(GROUP, 1)
        fake_telegram.push_text(GROUP, OWNER, "/stop", chat_type="group")
        messages = await settled(fake_telegram, GROUP, 2)
    assert [m.text for m in messages] == ["Stopped."]
    assert fake_telegram.sent_messages(GROUP)[0].deleted
    assert preview.text in LONG
    assert not fake_telegram.drafts  # a group never gets drafts


async def test_a_stream_failing_halfway_ends_in_one_clean_message(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply(LONG, pieces=8, chunk_delay=0.15, fail_after=4),
        Reply(LONG, pieces=8, chunk_delay=0.15, cut_after=4),
    )
    fake_telegram.drafts_supported = False
    settings = settings_for(tmp_path / "ws", fake_telegram, fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "first")
        await showing(fake_telegram, OWNER, "The server had an error")
        fake_telegram.push_text(OWNER, OWNER, "second")
        await showing(fake_telegram, OWNER, "Cannot reach the model server")
        await settled(fake_telegram, OWNER, 2)
    messages = visible(fake_telegram, OWNER)
    assert len(messages) == 2
    assert all("Sentence" not in m.text for m in messages)
    assert "The server had an error" in messages[0].text  # the provider's words, once
    assert messages[1].text.startswith("Cannot reach the model server")
    assert all(m.edit_count >= 1 for m in messages)  # each preview became what failed
    assert not fake_telegram.calls_to("deleteMessage")


async def test_refused_drafts_fall_back_to_one_edited_message_then_the_final_one(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply(LONG, pieces=20, chunk_delay=0.05),
        Reply("Short **and** sweet.", pieces=4, chunk_delay=0.2),  # long enough for a preview
    )
    fake_telegram.drafts_supported = False
    settings = settings_for(tmp_path / "ws", fake_telegram, fake_openai, stream_interval=0.3)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "tell me a lot")
        await fake_telegram.wait_for_text(OWNER, LONG)
        fake_telegram.push_text(OWNER, OWNER, "and briefly?")
        await fake_telegram.wait_for_text(OWNER, "Short and sweet.")
        await settled(fake_telegram, OWNER, 2)
    refused = fake_telegram.calls_to("sendMessageDraft")
    assert len(refused) == 1 and refused[0].failed  # asked once, never again
    edits = fake_telegram.calls_to("editMessageText")
    assert 2 <= len(edits) <= 8  # 1 s of text, shown at most every 0.3 s, and each final text
    sent = fake_telegram.sent_messages(OWNER)
    assert [m.deleted for m in sent] == [False, False]  # each preview grew into its answer
    assert sent[0].edit_count >= 2  # the long answer's preview grew in place, then was final
    assert {int(e.params["message_id"]) for e in edits} <= {sent[0].message_id, sent[1].message_id}
    long_final, short_final = visible(fake_telegram, OWNER)
    assert long_final.text == LONG
    assert short_final.text == "Short and sweet." and short_final.entities


async def test_streaming_off_sends_only_the_final_message(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply(LONG, pieces=10, chunk_delay=0.05))
    settings = settings_for(tmp_path / "ws", fake_telegram, fake_openai, stream=False)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "tell me a lot")
        [final] = await settled(fake_telegram, OWNER, 1)
    assert final.text == LONG
    assert not fake_telegram.calls_to("sendMessageDraft")
    assert not fake_telegram.calls_to("editMessageText")
    assert len(fake_telegram.calls_to("sendMessage")) == 1


def group_settings(workspace: Path, telegram: FakeTelegram, openai: FakeOpenAI) -> Settings:
    """As in production: shown every second (a group: every 3 s), typing every 4 s, and a
    stop that gives a running turn half a second."""
    settings = settings_for(workspace, telegram, openai, stream_interval=1.0, typing_interval=4.0)
    return settings.model_copy(
        update={"telegram": settings.telegram.model_copy(update={"shutdown_grace": 0.5})}
    )


def answers(telegram: FakeTelegram, method: str) -> list[dict[str, Any]]:
    """The params of each call of `method` Telegram took."""
    return [call.params for call in telegram.calls_to(method) if not call.failed]


async def test_a_slow_group_answer_is_one_message_growing_into_the_formatted_answer(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply(f"**Here** it comes. {LONG}", pieces=20, chunk_delay=0.25))  # 5 s
    settings = group_settings(tmp_path / "ws", fake_telegram, fake_openai)
    async with running_bot(settings, fake_telegram):
        asked = fake_telegram.push_text(GROUP, OWNER, "@mnemo_test_bot a lot?", chat_type="group")
        answer = await fake_telegram.wait_for_text(GROUP, f"Here it comes. {LONG}", timeout=20)
        await asyncio.sleep(0.5)

    assert fake_telegram.sent_messages(GROUP) == [answer]  # one message, never deleted
    assert len(answers(fake_telegram, "sendMessage")) == 1
    assert not fake_telegram.calls_to("deleteMessage")
    assert 1 <= len(answers(fake_telegram, "editMessageText")) <= 2  # grown, then final
    assert answer.entities and answer.entities[0]["type"] == "bold"  # the formatted reply
    assert answer.reply_to_message_id is not None and asked  # it answers the question


async def test_a_long_slow_group_answer_grows_in_its_first_message_then_continues(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    long = " ".join(f"word{i:05d}" for i in range(700))  # two messages
    fake_openai.script(Reply(long, pieces=20, chunk_delay=0.25))
    settings = group_settings(tmp_path / "ws", fake_telegram, fake_openai)
    first, second = (chunk.text for chunk in render(long))
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(GROUP, OWNER, "@mnemo_test_bot write a lot", chat_type="group")
        await fake_telegram.wait_for_text(GROUP, second, timeout=20)
        await asyncio.sleep(0.5)

    messages = fake_telegram.sent_messages(GROUP)
    assert [m.text for m in messages] == [first, second]
    assert len(answers(fake_telegram, "sendMessage")) == 2  # the first, a preview grown into it
    assert messages[0].reply_to_message_id is not None and messages[1].reply_to_message_id is None
    assert not fake_telegram.calls_to("deleteMessage")


async def test_a_restart_after_the_grown_first_part_sends_only_the_rest(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    long = " ".join(f"word{i:05d}" for i in range(700))
    fake_openai.script(Reply(long, pieces=20, chunk_delay=0.25))
    settings = group_settings(tmp_path / "ws", fake_telegram, fake_openai)
    first, second = (chunk.text for chunk in render(long))
    down = True  # the second part cannot go before the stop
    fake_telegram.fail_next(
        "sendMessage",
        error_code=502,
        description="Bad Gateway",
        times=1000,
        when=lambda params: down and params.get("text") == second,
    )
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(GROUP, OWNER, "@mnemo_test_bot write a lot", chat_type="group")
        await fake_telegram.wait_for_text(GROUP, first, timeout=20)
        await fake_telegram.wait_for_call("sendMessage", count=2)  # the second part failing
    down, before = False, len(fake_telegram.calls)
    async with running_bot(settings, fake_telegram):
        await fake_telegram.wait_for_text(GROUP, second)
        await asyncio.sleep(0.5)

    after = [call for call in fake_telegram.calls[before:] if not call.failed]
    assert [m.text for m in fake_telegram.sent_messages(GROUP)] == [first, second]
    assert [c.params["text"] for c in after if c.method == "sendMessage"] == [second]
    assert not any(c.method == "editMessageText" for c in after)  # the first part: recorded
    assert len(fake_openai.requests) == 1  # and the reply was never made again


async def test_a_preview_deleted_meanwhile_gives_way_to_a_new_message(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply(LONG, pieces=20, chunk_delay=0.25))
    settings = group_settings(tmp_path / "ws", fake_telegram, fake_openai)
    fake_telegram.fail_next(
        "editMessageText",
        description="Bad Request: message to edit not found",
        when=lambda params: params.get("text") == LONG,
    )  # someone deleted the preview before the answer was done
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(GROUP, OWNER, "@mnemo_test_bot tell me a lot", chat_type="group")
        answer = await fake_telegram.wait_for_text(GROUP, LONG, timeout=20)
        await asyncio.sleep(0.5)

    assert visible(fake_telegram, GROUP) == [answer]
    assert answer.edit_count == 0 and answer.reply_to_message_id is not None
