"""Voice notes: kept, transcribed at /v1/audio/transcriptions, and the turn runs on the words,
which the session and the daily note keep as a voice message; transcription off or down is one
line, and the recording stays kept."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bot.media.voice import FAILED, OFF
from bot.models import Attachment, Inbound
from bot.settings import MediaSettings
from bot.storage.inbox import Inbox
from tests.fakes.openai_api import Fail, FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot
from tests.talk import session

OGG = b"OggS\x00\x02 a voice note"


def notes(workspace: Path) -> str:
    return "".join(path.read_text() for path in (workspace / "memory").glob("????-??-??.md"))


def kept(workspace: Path) -> list[Path]:
    return sorted((workspace / "memory" / "files").glob("*"))


async def test_the_words_of_a_voice_note_reach_the_model_the_session_and_the_note(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    fake_openai.transcribe("remind me to buy oat milk")
    fake_openai.script(Reply("Noted: oat milk."))
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(OWNER, OWNER, "voice", data=OGG)
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.text == "Noted: oat milk."
    [asked] = fake_openai.transcription_requests
    assert (asked["model"], asked["data"]) == ("whisper-1", OGG)
    assert asked["file_name"].endswith(".ogg")
    said = fake_openai.last_request["messages"][-1]
    assert said == {"role": "user", "content": "[voice] remind me to buy oat milk"}
    saved = session(workspace)["messages"]
    assert saved[0]["content"] == "[voice] remind me to buy oat milk"
    assert "User: [voice] remind me to buy oat milk | Assistant: Noted: oat milk." in notes(
        workspace
    )
    [file] = kept(workspace)
    assert file.read_bytes() == OGG


async def test_transcription_down_is_one_line_and_the_recording_is_kept(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    down = Fail(503, "upstream unavailable", type="server_error")
    fake_openai.transcribe(down, down)  # tried again once
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(OWNER, OWNER, "voice", data=OGG)
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    [file] = kept(workspace)
    reason = "the transcription service is down (HTTP 503)"
    assert reply.text == FAILED.format(reason=reason, name=f"files/{file.name}")
    assert file.read_bytes() == OGG
    assert fake_openai.calls == 0


async def test_a_refused_key_is_told_without_the_key(
    tmp_path: Path, fake_telegram: FakeTelegram
) -> None:
    async with FakeOpenAI(api_key="sk-the-right-one") as fake_openai:
        settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
        async with running_bot(settings, fake_telegram):
            fake_telegram.push_media(OWNER, OWNER, "voice", data=OGG)
            [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert "refused the key (HTTP 401)" in reply.text
    assert "sk-" not in reply.text


async def test_transcription_off_is_one_line(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    settings = make_settings(
        workspace,
        telegram=fake_telegram,
        openai=fake_openai,
        media=MediaSettings(transcription_model=""),
    )
    async with running_bot(settings, fake_telegram):
        fake_telegram.push_media(OWNER, OWNER, "voice", data=OGG)
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    [file] = kept(workspace)
    assert reply.text == OFF.format(name=f"files/{file.name}")
    assert fake_openai.transcription_requests == []


async def test_a_journaled_voice_note_is_answered_after_a_restart(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    workspace = tmp_path / "ws"
    file_id = fake_telegram.serve_file(OGG)
    voice = Attachment("voice", file_id, None, "audio/ogg", len(OGG), duration=2)
    left = Inbound(
        id="telegram:update:900",
        channel="telegram",
        chat_id=OWNER,
        user_id=OWNER,
        text="",
        received_at=datetime.now(UTC),
        message_id=9,
        attachments=(voice,),
    )
    inbox = Inbox(workspace / "state" / "inbox")  # a stop came after journaling it
    await inbox.accept(left)
    inbox.close()
    settings = make_settings(workspace, telegram=fake_telegram, openai=fake_openai)
    fake_openai.transcribe("what's on today?")
    fake_openai.script(Reply("Nothing planned."))
    async with running_bot(settings, fake_telegram):
        [reply] = await fake_telegram.wait_for_messages(OWNER, 1)

    assert reply.text == "Nothing planned."
    assert fake_telegram.downloads == [file_id]
    assert fake_openai.last_request["messages"][-1]["content"] == "[voice] what's on today?"
    assert list((workspace / "state" / "inbox").iterdir()) == []
