"""End to end as a user runs it: `python -m bot run` in its own process against the fakes."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path

from bot.storage.workspace import file_key
from tests.fakes.openai_api import FakeOpenAI, Hang, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import API_KEY, OWNER, bot_env, start_bot_process


async def stop_process(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> int:
    process.send_signal(sig)
    return await asyncio.to_thread(process.wait, 20)


async def test_kill_9_mid_turn_then_restart_answers_the_message(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    env = bot_env(workspace, fake_telegram, fake_openai)
    log_path = tmp_path / "bot.log"
    fake_openai.script(Hang(), Reply("sorry for the wait: here it is"))

    first = start_bot_process(env, tmp_path, log_path)
    try:
        await fake_telegram.wait_for_poll(timeout=30)
        fake_telegram.push_text(OWNER, OWNER, "please remember my parcel")
        await fake_openai.wait_until_hanging(timeout=20)
        [journal] = (workspace / "state" / "inbox").glob("*.json")  # written before the model call
        assert "please remember my parcel" in journal.read_text()
    finally:
        first.kill()  # SIGKILL: no cleanup of any kind
        await asyncio.to_thread(first.wait, 20)
    assert fake_telegram.sent_messages(OWNER) == []

    second = start_bot_process(env, tmp_path, log_path)
    try:
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1, timeout=30)
    finally:
        assert await stop_process(second) == 0
    assert reply.text == "sorry for the wait: here it is"
    assert fake_openai.requests[-1]["messages"][-1]["content"] == "please remember my parcel"
    assert list((workspace / "state" / "inbox").glob("*.json")) == []
    session_file = workspace / "sessions" / f"{file_key(f'telegram:{OWNER}')}.json"
    contents = [m["content"] for m in json.loads(session_file.read_text())["messages"]]
    assert contents == ["please remember my parcel", "sorry for the wait: here it is"]


async def test_secrets_never_reach_the_logs(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    env = bot_env(workspace, fake_telegram, fake_openai)
    log_path = tmp_path / "bot.log"
    fake_openai.script(Reply("noted"))
    fake_telegram.fail_next("sendChatAction", error_code=500, description="Internal Server Error")

    process = start_bot_process(env, tmp_path, log_path)
    try:
        await fake_telegram.wait_for_poll(timeout=30)
        fake_telegram.push_text(OWNER, OWNER, "hello")
        await fake_telegram.wait_for_messages(OWNER, 1, timeout=30)
    finally:
        assert await stop_process(process) == 0
    text = log_path.read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert any(line.get("event") == "turn_done" for line in lines)
    assert any(line.get("chat") == f"telegram:{OWNER}" and line.get("turn") for line in lines)
    token_secret = fake_telegram.token.split(":", 1)[1]
    assert fake_telegram.token not in text and token_secret not in text
    assert API_KEY not in text
