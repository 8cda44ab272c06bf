"""`make run` asks the model server once as it starts: a wrong key, a wrong address or a server
that is down is one line in the log saying what is wrong and what to do, and the bot starts all
the same (it polls Telegram; the owner then knows why answers fail). Each runs `python -m bot
run` as a process, as a person starts it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import bot_env, quiet_env, start_bot_process
from tests.test_cli_errors import closed_port, wait_for_line
from tests.test_e2e_process import stop_process

SAID = "The model cannot answer:"
WRONG_KEY = "wrong-key-0123456789"


async def started(env: dict[str, str], tmp_path: Path, telegram: FakeTelegram) -> str:
    """The bot's log once it said what is wrong with the model, the bot polling meanwhile."""
    log_path = tmp_path / "bot.log"
    process = start_bot_process(env, tmp_path, log_path)
    try:
        await asyncio.to_thread(wait_for_line, log_path, SAID, seconds=30)
        await telegram.wait_for_poll(timeout=20)  # it runs on
        assert process.poll() is None
    finally:
        assert await stop_process(process) == 0
    return log_path.read_text()


async def test_a_rejected_key_is_one_line_and_the_bot_runs_on(
    tmp_path: Path, fake_telegram: FakeTelegram
) -> None:
    async with FakeOpenAI(api_key="the-right-key-0123456789") as model:
        env = quiet_env(bot_env(tmp_path / "ws", fake_telegram, model))
        log = await started(env | {"BOT_LLM__API_KEY": WRONG_KEY}, tmp_path, fake_telegram)

    [line] = [line for line in log.splitlines() if SAID in line]
    assert "rejected the API key" in line and "BOT_LLM__API_KEY" in line
    assert "make setup" in line and "keeps running" in line
    assert WRONG_KEY not in log
    assert "llm_error" not in log  # one line says it
    assert model.calls == 0  # nothing was asked of the model: no token spent


async def test_a_server_that_is_down_is_one_line_and_the_bot_runs_on(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    env = quiet_env(bot_env(tmp_path / "ws", fake_telegram, fake_openai))
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    log = await started(env | {"BOT_LLM__BASE_URL": dead}, tmp_path, fake_telegram)

    [line] = [line for line in log.splitlines() if SAID in line]
    assert f"cannot reach the model at {dead}" in line and "BOT_LLM__BASE_URL" in line
    assert "Traceback" not in log


async def test_a_wrong_address_is_one_line(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    env = quiet_env(bot_env(tmp_path / "ws", fake_telegram, fake_openai))
    wrong = fake_openai.base_url.removesuffix("/v1")  # the /v1 left out, as people do
    log = await started(env | {"BOT_LLM__BASE_URL": wrong}, tmp_path, fake_telegram)

    [line] = [line for line in log.splitlines() if SAID in line]
    assert "BOT_LLM__BASE_URL" in line and "/v1" in line
