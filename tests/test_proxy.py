"""A proxy for Telegram and the model (`BOT_TELEGRAM__PROXY`, `BOT_LLM__PROXY`): every request
goes through it, a bad URL is refused with an example, and a proxy's password is a secret."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.cli.doctor import check_model, check_telegram
from bot.cli.doctor_media import check_transcription
from bot.errors import ConfigError
from bot.settings import load_settings, secret_values
from tests.fakes.http_proxy import FakeProxy
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import API_KEY, OWNER, make_settings, running_bot


async def test_telegram_and_the_model_are_reached_through_the_proxy(
    workspace: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.transcribe("")
    fake_openai.script(Reply("OK"))
    async with FakeProxy() as proxy:
        settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
        telegram = settings.telegram.model_copy(update={"proxy": proxy.url})
        llm = settings.llm.model_copy(update={"proxy": proxy.url, "api_key": SecretStr(API_KEY)})
        proxied = settings.model_copy(update={"telegram": telegram, "llm": llm})

        token = await check_telegram(proxied)
        model = await check_model(proxied)
        heard = await check_transcription(proxied)

    assert (token.level, model.level, heard.level) == ("ok", "ok", "ok"), (token, model, heard)
    assert any(url.endswith("/getMe") for url in proxy.seen), proxy.seen
    assert f"{fake_openai.base_url}/chat/completions" in proxy.seen
    assert f"{fake_openai.base_url}/audio/transcriptions" in proxy.seen


def test_a_proxy_url_is_checked_and_its_password_is_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tmp_path / ".env"
    env.write_text("BOT_TELEGRAM__PROXY=socks5://ann:hunter22@127.0.0.1:1080\n")
    monkeypatch.delenv("BOT_LLM__PROXY", raising=False)

    settings = load_settings(env)
    env.write_text("BOT_LLM__PROXY=ftp://127.0.0.1:21\n")
    with pytest.raises(ConfigError) as refused:
        load_settings(env)

    assert settings.telegram.proxy == "socks5://ann:hunter22@127.0.0.1:1080"
    assert "hunter22" in secret_values(settings)
    assert "BOT_LLM__PROXY" in str(refused.value) and "socks5://127.0.0.1:1080" in str(
        refused.value
    )


async def test_the_running_bot_polls_and_answers_through_the_proxy(
    workspace: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply("Hello through the proxy"))
    async with FakeProxy() as proxy:
        settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
        telegram = settings.telegram.model_copy(update={"proxy": proxy.url})
        llm = settings.llm.model_copy(update={"proxy": proxy.url})
        proxied = settings.model_copy(update={"telegram": telegram, "llm": llm})
        async with running_bot(proxied, fake_telegram):
            fake_telegram.push_text(OWNER, OWNER, "hi")
            [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.text == "Hello through the proxy"
    methods = {url.rsplit("/", 1)[1] for url in proxy.seen}
    assert {"getUpdates", "sendMessage", "completions"} <= methods, methods
