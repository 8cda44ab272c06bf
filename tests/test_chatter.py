"""`ChatterStore`: a group's chatter kept bounded (messages and characters), once per message,
dropped by what a turn showed, and a damaged file set aside."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.models import Said
from bot.storage.chatter import ChatterStore
from bot.storage.files import FileLocks
from bot.storage.workspace import Workspace

KEY = "telegram:-100500"
T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def store(root: Path, *, max_messages: int = 20, max_chars: int = 3000) -> ChatterStore:
    return ChatterStore(
        Workspace(root), FileLocks(), max_messages=max_messages, max_chars=max_chars
    )


def said(n: int, text: str | None = None) -> Said:
    return Said(f"telegram:update:{n}", "Ann", text or f"message {n}", T0 + timedelta(minutes=n))


async def test_chatter_survives_a_restart_in_order(tmp_path: Path) -> None:
    for n in range(3):
        await store(tmp_path).keep(KEY, said(n))

    assert await store(tmp_path).pending(KEY) == (said(0), said(1), said(2))
    assert await store(tmp_path).pending("telegram:-100600") == ()


async def test_only_the_last_messages_are_kept(tmp_path: Path) -> None:
    chatter = store(tmp_path, max_messages=3)
    for n in range(5):
        await chatter.keep(KEY, said(n))

    assert [s.text for s in await chatter.pending(KEY)] == ["message 2", "message 3", "message 4"]


async def test_the_oldest_go_past_the_characters_and_a_long_one_is_cut(tmp_path: Path) -> None:
    chatter = store(tmp_path, max_chars=25)
    await chatter.keep(KEY, said(1, "a" * 10))
    await chatter.keep(KEY, said(2, "b" * 10))
    await chatter.keep(KEY, said(3, "c" * 10))
    assert [s.text for s in await chatter.pending(KEY)] == ["b" * 10, "c" * 10]

    await chatter.keep(KEY, said(4, "d" * 100))
    assert [s.text for s in await chatter.pending(KEY)] == ["d" * 25]


async def test_a_message_replayed_is_kept_once(tmp_path: Path) -> None:
    chatter = store(tmp_path)
    await chatter.keep(KEY, said(1))
    await chatter.keep(KEY, said(1))

    assert await chatter.pending(KEY) == (said(1),)


async def test_dropping_what_a_turn_showed_keeps_what_came_since(tmp_path: Path) -> None:
    chatter = store(tmp_path)
    await chatter.keep(KEY, said(1))
    shown = await chatter.pending(KEY)
    await chatter.keep(KEY, said(2))

    await chatter.drop(KEY, {s.id for s in shown})

    assert await chatter.pending(KEY) == (said(2),)
    await chatter.drop(KEY, {said(2).id})
    assert not Workspace(tmp_path).chatter_path(KEY).exists()


async def test_no_chatter_is_kept_with_a_bound_of_zero(tmp_path: Path) -> None:
    chatter = store(tmp_path, max_messages=0)
    await chatter.keep(KEY, said(1))

    assert await chatter.pending(KEY) == ()
    assert not Workspace(tmp_path).chatter_path(KEY).exists()


async def test_a_damaged_file_is_set_aside_and_the_chat_starts_again(tmp_path: Path) -> None:
    path = Workspace(tmp_path).chatter_path(KEY)
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "said": [{"id": 7}]')

    chatter = store(tmp_path)
    assert await chatter.pending(KEY) == ()
    await chatter.keep(KEY, said(1))

    assert path.with_name(path.name + ".unreadable").read_text().startswith('{"version": 1')
    document = json.loads(path.read_text())
    assert document["version"] == 1
    assert [s["text"] for s in document["said"]] == ["message 1"]
