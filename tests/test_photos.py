"""Photos: shown to a model that reads images as an image part of this turn's message only
(later turns carry the `[photo: caption]` line, which the session and the daily note keep); a
model that does not read images gets no call and the user one line; the photo is kept."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from bot.media.photo import UNSEEN
from bot.settings import CompactionSettings, MediaSettings
from tests.fakes.openai_api import FakeOpenAI, Reply, image_parts
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot
from tests.talk import session

JPEG = b"\xff\xd8\xff\xe0 a small photo"
DATA_URL = "data:image/jpeg;base64," + base64.b64encode(JPEG).decode()


def notes(workspace: Path) -> str:
    return "".join(path.read_text() for path in (workspace / "memory").glob("????-??-??.md"))


async def test_a_photo_and_its_caption_reach_the_model_once_and_memory_keeps_the_line(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(
        workspace, telegram=fake_telegram, openai=fake_openai, media=MediaSettings(vision=True)
    )
    fake_openai.script(Reply("A red bicycle."), Reply("You sent a bicycle."))
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(OWNER, OWNER, "photo", data=JPEG, caption="what is this?")
        await fake_telegram.wait_for_messages(OWNER, 1)
        fake_telegram.push_text(OWNER, OWNER, "what did I send?")
        first, second = await fake_telegram.wait_for_messages(OWNER, 2)

    assert (first.text, second.text) == ("A red bicycle.", "You sent a bicycle.")
    shown, later = fake_openai.requests
    assert image_parts(shown) == [("user", DATA_URL)]
    assert shown["messages"][-1]["content"][0] == {"type": "text", "text": "[photo: what is this?]"}
    assert image_parts(later) == []
    assert {"role": "user", "content": "[photo: what is this?]"} in later["messages"]
    assert fake_telegram.downloads == [f"photo-{1000}"]  # the largest size only
    assert session(workspace)["messages"][0]["content"] == "[photo: what is this?]"
    assert "base64" not in json.dumps(session(workspace))
    assert "User: [photo: what is this?] | Assistant: A red bicycle." in notes(workspace)
    [kept] = (workspace / "memory" / "files").glob("*photo*")
    assert kept.read_bytes() == JPEG


async def test_a_model_that_does_not_read_images_is_not_called_and_the_user_is_told(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(
        workspace, telegram=fake_telegram, openai=fake_openai, media=MediaSettings(vision=False)
    )
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(OWNER, OWNER, "photo", data=JPEG, caption="look")
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    [kept] = (workspace / "memory" / "files").glob("*photo*")
    assert reply.text == UNSEEN.format(model="fake-model", name=f"files/{kept.name}")
    assert fake_openai.calls == 0
    assert kept.read_bytes() == JPEG


async def test_models_json_says_which_models_read_images(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    models = tmp_path / "models.json"
    document = {"version": 1, "context_windows": {"fake-model": 32768}, "vision": ["fake-model"]}
    models.write_text(json.dumps(document))
    settings = make_settings(
        tmp_path / "ws",
        telegram=fake_telegram,
        openai=fake_openai,
        compaction=CompactionSettings(models_file=models),
    )
    fake_openai.script(Reply("A cat."))
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(OWNER, OWNER, "photo", data=JPEG)
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.text == "A cat."
    assert image_parts(fake_openai.last_request) == [("user", DATA_URL)]
    assert fake_openai.last_request["messages"][-1]["content"][0]["text"] == "[photo]"
