"""What comes with a Telegram message (`bot.media`): kept in the workspace, refused in one line
when it cannot be read or is too large (before any download), journaled like text."""

from __future__ import annotations

from pathlib import Path

from bot.media.files import TOO_LARGE
from bot.media.other import SUPPORTED
from bot.settings import MediaSettings
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot

MB = 1024 * 1024


async def test_a_sticker_or_a_location_gets_one_line_of_what_is_supported(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(OWNER, OWNER, "sticker")
        fake_telegram.push_media(OWNER, OWNER, "location")
        sticker, location = await fake_telegram.wait_for_messages(OWNER, 2)

    assert sticker.text == SUPPORTED.format(what="sticker")
    assert location.text == SUPPORTED.format(what="location")
    assert fake_openai.calls == 0
    assert fake_telegram.downloads == []


async def test_a_file_over_the_limit_is_refused_in_one_line_before_any_download(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(OWNER, OWNER, "voice", size=50 * MB)
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.text == TOO_LARGE.format(size="50 MB", limit="20 MB")
    assert fake_telegram.calls_to("getFile") == []
    assert fake_telegram.downloads == []
    assert fake_openai.calls == 0
    assert list((workspace / "state" / "inbox").iterdir()) == []


async def test_a_lower_configured_limit_is_the_one_told(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(
        tmp_path / "ws",
        telegram=fake_telegram,
        openai=fake_openai,
        media=MediaSettings(max_file_mb=1),
    )
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(OWNER, OWNER, "photo", size=3 * MB)
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.text == TOO_LARGE.format(size="3 MB", limit="1 MB")
    assert fake_telegram.downloads == []
