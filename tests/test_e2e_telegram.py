"""End to end: real PTB Application and openai client against the fake Bot API and model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from bot.storage.workspace import file_key
from tests.fakes.openai_api import Fail, FakeOpenAI, Hang, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import FRIEND, OWNER, STRANGER, make_settings, running_bot


async def test_a_reply_arrives_with_typing(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Hello **Ann**!", delay=0.5))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "hi there")
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)
    assert reply.text == "Hello Ann!"
    assert reply.entities and reply.entities[0]["type"] == "bold"
    actions = fake_telegram.calls_to("sendChatAction")
    assert actions and actions[0].params["action"] == "typing"
    request = fake_openai.requests[0]
    assert request["messages"][-1] == {"role": "user", "content": "hi there"}
    assert request["messages"][0]["role"] == "system"
    commands = [c["command"] for c in fake_telegram.bot_commands()]
    assert {"new", "status", "stop", "help"} <= set(commands)


async def test_unknown_user_gets_one_notice_and_no_model_call(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(STRANGER, STRANGER, "let me in")
        fake_telegram.push_text(STRANGER, STRANGER, "please")
        [notice] = await fake_telegram.wait_for_messages(STRANGER, 1)
        fake_openai.script(Reply("hi friend"))
        fake_telegram.push_text(FRIEND, FRIEND, "hello")
        await fake_telegram.wait_for_messages(FRIEND, 1)
    assert "private assistant" in notice.text
    assert len(fake_telegram.sent_messages(STRANGER)) == 1
    assert fake_openai.calls == 1  # only the allowed friend reached the model
    assert not list((tmp_path / "ws" / "memory").glob(f"**/*{STRANGER}*"))


async def test_a_10000_character_reply_arrives_whole_in_pieces(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    words = [f"word{i:05d}" for i in range(1000)]
    long_reply = " ".join(words)[:10_000]
    fake_openai.script(Reply(long_reply))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "write a lot")
        await fake_telegram.wait_for_messages(OWNER, 3)
        await asyncio.sleep(0.3)
    pieces = fake_telegram.sent_messages(OWNER)
    assert all(len(p.text.encode("utf-16-le")) // 2 <= 4096 for p in pieces)
    assert "".join(p.text for p in pieces).split() == long_reply.split()


async def test_entities_rejected_fall_back_to_plain_text(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Some *emphasis* here"))
    fake_telegram.fail_next("sendMessage", when=lambda params: bool(params.get("entities")))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "emphasise")
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)
    assert reply.text == "Some emphasis here"
    assert not reply.entities
    failed = [c for c in fake_telegram.calls_to("sendMessage") if c.failed]
    assert len(failed) == 1


async def test_two_chats_run_concurrently_and_one_chat_keeps_its_order(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    other = FRIEND

    def answer(request: dict[str, Any]) -> Reply | Hang:
        text = str(request["messages"][-1]["content"])
        if text == "slow-1":
            return Hang(then=Reply("answer slow-1"))
        return Reply(f"answer {text}")

    fake_openai.answer_all(answer)
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "slow-1")
        fake_telegram.push_text(OWNER, OWNER, "fast-2")
        await fake_openai.wait_until_hanging()
        fake_telegram.push_text(other, other, "other-chat")
        [other_reply] = await fake_telegram.wait_for_messages(other, 1)
        assert fake_telegram.sent_messages(OWNER) == []  # chat 1 still waits on its first turn
        fake_openai.release()
        replies = await fake_telegram.wait_for_messages(OWNER, 2)
    assert other_reply.text == "answer other-chat"
    assert [r.text for r in replies] == ["answer slow-1", "answer fast-2"]
    second = next(r for r in fake_openai.requests if r["messages"][-1]["content"] == "fast-2")
    contents = [m["content"] for m in second["messages"]]
    assert "slow-1" in contents and "answer slow-1" in contents  # it saw the first turn


async def test_model_error_is_a_short_message_and_the_session_stays(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("first answer"), Fail(500, "upstream exploded"))
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "one")
        await fake_telegram.wait_for_messages(OWNER, 1)
        fake_telegram.push_text(OWNER, OWNER, "two")
        _, error = await fake_telegram.wait_for_messages(OWNER, 2)
    assert "overloaded or failing" in error.text
    assert "exploded" not in error.text
    session_file = workspace / "sessions" / f"{file_key(f'telegram:{OWNER}')}.json"
    session = json.loads(session_file.read_text())
    assert [m["content"] for m in session["messages"]] == ["one", "first answer"]


async def test_stop_jumps_the_chat_queue_and_cancels_the_running_turn(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Hang(), Reply("after stop"))
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "think hard")
        await fake_openai.wait_until_hanging()
        fake_telegram.push_text(OWNER, OWNER, "/stop")
        [stopped] = await fake_telegram.wait_for_messages(OWNER, 1)
        fake_telegram.push_text(OWNER, OWNER, "next question")
        _, answer = await fake_telegram.wait_for_messages(OWNER, 2)
    assert stopped.text == "Stopped."
    assert answer.text == "after stop"
    assert list((workspace / "state" / "inbox").glob("*.json")) == []
    session_file = workspace / "sessions" / f"{file_key(f'telegram:{OWNER}')}.json"
    contents = [m["content"] for m in json.loads(session_file.read_text())["messages"]]
    assert contents == ["next question", "after stop"]


async def test_session_file_is_valid_json_after_every_step(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    session_file = workspace / "sessions" / f"{file_key(f'telegram:{OWNER}')}.json"
    seen: list[int] = []

    def answer(request: dict[str, object]) -> Reply:
        if session_file.exists():  # mid-turn, while the model is working
            seen.append(len(json.loads(session_file.read_text())["messages"]))
        return Reply(f"reply {len(seen)}")

    fake_openai.answer_all(answer)
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        for step in range(1, 6):
            fake_telegram.push_text(OWNER, OWNER, f"message {step}")
            await fake_telegram.wait_for_messages(OWNER, step)
            document = json.loads(session_file.read_text())
            assert document["version"] == 1
            assert len(document["messages"]) == 2 * step
        fake_telegram.push_text(OWNER, OWNER, "/new")
        await fake_telegram.wait_for_messages(OWNER, 6)
        assert json.loads(session_file.read_text())["messages"] == []
    assert seen == [2, 4, 6, 8, 10]  # 10: /new consolidating the whole session first
    leftovers = [p.name for p in session_file.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


async def test_typing_is_refreshed_while_the_model_works(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("done thinking", delay=1.0))
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):  # typing_interval is 0.2 s here
        fake_telegram.push_text(OWNER, OWNER, "take your time")
        await fake_telegram.wait_for_messages(OWNER, 1)
        typing_calls = len(fake_telegram.calls_to("sendChatAction"))
        await asyncio.sleep(0.5)
    assert typing_calls >= 3
    assert len(fake_telegram.calls_to("sendChatAction")) == typing_calls  # stops with the reply


async def test_a_429_is_retried_after_the_pause(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("patience pays"))
    fake_telegram.fail_next("sendMessage", retry_after=1)
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "hello")
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)
    assert reply.text == "patience pays"
    attempts = fake_telegram.calls_to("sendMessage")
    assert [a.error_code for a in attempts] == [429, None]


async def test_an_unexpected_failure_is_logged_and_the_user_hears_something_short(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        sessions = workspace / "sessions"
        sessions.rename(workspace / "sessions-moved")
        sessions.write_text("a file where the sessions folder should be")
        fake_telegram.push_text(OWNER, OWNER, "hello")
        [notice] = await fake_telegram.wait_for_messages(OWNER, 1)
    assert notice.text == "Sorry, something went wrong on my side. Please try again."
    assert list((workspace / "state" / "inbox").glob("*.json")) == []  # not replayed forever
    assert fake_openai.calls == 0


async def test_a_tag_across_the_message_split_never_reaches_the_user(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    before = "a" * 4090 + " "
    tagged = before + "<memory>Ann's parcel arrives Tuesday</memory> " + "b" * 3000
    fake_openai.script(Reply(tagged))
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_text(OWNER, OWNER, "note my parcel")
        await fake_telegram.wait_for_messages(OWNER, 2)
        await asyncio.sleep(0.2)
    shown = "".join(m.text for m in fake_telegram.sent_messages(OWNER))
    assert "<" not in shown and "memory" not in shown
    assert shown.replace(" ", "") == ("a" * 4090 + "b" * 3000)
    assert "Ann's parcel arrives Tuesday" in (workspace / "memory" / "MEMORY.md").read_text()
