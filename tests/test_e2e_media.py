"""Telegram beyond text as a user meets it: `python -m bot run` in its own process against the
fakes — a voice note, a photo with its caption, a PDF, an answer shown while it is written, and a
group where the model sees who spoke."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

from tests.fakes.openai_api import FakeOpenAI, Reply, image_parts
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, bot_env, start_bot_process
from tests.pdfs import text_pdf

GROUP = -100555


async def stopped(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return await asyncio.to_thread(process.wait, 20)


def last_user_text(fake_openai: FakeOpenAI) -> str:
    content = fake_openai.requests[-1]["messages"][-1]["content"]
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


async def test_voice_photo_pdf_streaming_and_group_names_through_the_real_process(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    env = bot_env(tmp_path / "ws", fake_telegram, fake_openai) | {"BOT_MEDIA__VISION": "true"}
    long_answer = " ".join(f"Step {n}: water the basil." for n in range(1, 40))
    fake_openai.transcribe("remind me to buy oat milk")
    fake_openai.script(
        Reply("I will remind you: oat milk."),
        Reply("A sunny balcony with basil."),
        Reply("The lease ends in March."),
        Reply(long_answer, pieces=6, chunk_delay=0.4),
        Reply("Hello Ann!"),
    )
    process = start_bot_process(env, tmp_path, tmp_path / "bot.log")
    try:
        await fake_telegram.wait_for_poll(timeout=30)

        fake_telegram.push_media(OWNER, OWNER, "voice", data=b"OggS voice")
        [heard] = await fake_telegram.wait_for_messages(OWNER, 1, timeout=30)
        assert "remind me to buy oat milk" in last_user_text(fake_openai)

        fake_telegram.push_media(OWNER, OWNER, "photo", data=b"\xff\xd8 jpeg", caption="my balcony")
        [_, seen] = await fake_telegram.wait_for_messages(OWNER, 2, timeout=30)
        assert image_parts(fake_openai.requests[-1])
        assert "my balcony" in last_user_text(fake_openai)

        lease = text_pdf("Tenancy agreement", "The lease ends on 31 March 2027.")
        fake_telegram.push_media(
            OWNER, OWNER, "document", data=lease, file_name="lease.pdf", caption="when?"
        )
        [*_, read] = await fake_telegram.wait_for_messages(OWNER, 3, timeout=30)
        pdf_text = last_user_text(fake_openai)

        fake_telegram.push_text(OWNER, OWNER, "how do I care for basil?")
        messages = await fake_telegram.wait_for_messages(OWNER, 4, timeout=30)
        shown = [d.text for d in fake_telegram.drafts if d.text.startswith("Step")]

        fake_telegram.push_text(
            GROUP, OWNER, "@mnemo_test_bot hi there", chat_type="group", first_name="Ann"
        )
        [greeted] = await fake_telegram.wait_for_messages(GROUP, 1, timeout=30)
        group_text = last_user_text(fake_openai)
    finally:
        assert await stopped(process) == 0

    assert heard.text == "I will remind you: oat milk."
    assert seen.text == "A sunny balcony with basil."
    assert read.text == "The lease ends in March."
    assert "The lease ends on 31 March 2027." in pdf_text and "when?" in pdf_text
    assert messages[3].text.startswith("Step 1: water the basil.")
    assert len(shown) >= 2 and len(shown[0]) < len(shown[-1])  # growing while it was written
    assert all(long_answer.startswith(text) for text in shown)
    assert greeted.text == "Hello Ann!"
    assert "Ann: hi there" in group_text
