"""A photo with replicas (skipped without `MNEMO_TEST_PG`), each replica with a workspace folder
of its own and no folder shared: sent through one replica, asked about through another. The
photo itself is kept in the database (`bot.replicas.shared_documents`), not on the disk of the
replica that fetched it, and the second replica's prompt carries the first turn."""

from __future__ import annotations

from pathlib import Path

import psycopg

from bot.settings import MediaSettings
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, running_bot
from tests.test_photos import JPEG
from tests.test_replicas_queue import replicated


async def test_a_photo_sent_through_one_replica_is_asked_about_through_another(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI, pg_url: str
) -> None:
    fake_openai.script(Reply("A red bicycle."), Reply("You sent a red bicycle."))
    media = MediaSettings(vision=True)
    first, second = (
        replicated(tmp_path / name, fake_telegram, fake_openai, pg_url).model_copy(
            update={"media": media}
        )
        for name in ("r1", "r2")
    )
    async with running_bot(first, fake_telegram):
        fake_telegram.push_media(OWNER, OWNER, "photo", data=JPEG, caption="what is this?")
        await fake_telegram.wait_for_messages(OWNER, 1)
    async with running_bot(second, fake_telegram):  # another machine: its own empty folder
        fake_telegram.push_text(OWNER, OWNER, "what did I send?")
        _, answer = await fake_telegram.wait_for_messages(OWNER, 2)

    assert answer.text == "You sent a red bicycle."
    later = fake_openai.requests[-1]["messages"]
    assert {"role": "user", "content": "[photo: what is this?]"} in later
    assert {"role": "assistant", "content": "A red bicycle."} in later
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        cursor = await conn.execute(
            "SELECT body FROM mnemo_documents WHERE path LIKE 'memory/files/%%photo%%'"
        )
        assert [bytes(row[0]) for row in await cursor.fetchall()] == [JPEG]
    assert list((tmp_path / "r1").rglob("*photo*")) == []  # nothing on the receiving disk
