"""What comes with a Telegram message (`bot.media`): kept in the workspace, refused in one line
when it cannot be read or is too large (before any download), journaled like text."""

from __future__ import annotations

from pathlib import Path

from bot.media.document import NOT_YET
from bot.media.other import SUPPORTED
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot


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


async def test_a_document_gets_one_line_for_now(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(OWNER, OWNER, "document", file_name="notes.txt", caption="read")
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.text == NOT_YET
    assert fake_openai.calls == 0
