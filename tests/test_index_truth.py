"""The index is derived from the files alone: memory markdown, session files (current and
archived) and the items' JSONL. A rebuild answers as the live index does, a deleted index comes
back with the conversations in it, and an exchange cut from a session into its archive stays
findable once."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.index import Hit, MemoryIndex
from bot.index.sync.transcripts import TranscriptSource, turns
from bot.memory.items.indexing import ItemSource
from bot.models import ChatMessage, ToolCall
from bot.settings import MemorySettings
from bot.storage.sessions import SessionStore
from bot.storage.workspace import Workspace
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.harness import OWNER, make_settings, started_app
from tests.talk import say, write

DETAIL = "The safe's code is 4471 and it hides behind the lighthouse painting."
LONG = "Let me tell you about the house first. " * 10 + DETAIL
QUERIES = ("Dr Lee on Elm street", "blue pot spare key", "dentist appointment", "tea")
CONSOLIDATED = '{"history_entry": "[2026-11-24 09:00] Key and dentist.", "memory_update": null}'
NOW = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


def search(index: MemoryIndex, query: str, scopes: tuple[str, ...] = ("",)) -> list[Hit]:
    return index.search(query, scopes=scopes, k=10)


def answers(index: MemoryIndex) -> list[list[tuple[str, str]]]:
    scopes = ("", f"telegram:{OWNER}")
    return [[(h.citation, h.text) for h in search(index, q, scopes)] for q in QUERIES]


async def test_a_deleted_index_finds_a_detail_of_an_archived_conversation_again(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(
        workspace, telegram=None, openai=fake_openai, memory=MemorySettings(memory_window=0)
    )
    async with started_app(settings) as app:
        fake_openai.script(Reply("Noted, I'll remember where it is."))
        await say(app, LONG)
        assert await say(app, "/new") != []
    assert list((workspace / "sessions" / "archive").glob("*.json"))
    note = next((workspace / "memory").glob("????-??-??.md")).read_text()
    assert "4471" not in note  # past the daily note's cut: only the session file holds it
    shutil.rmtree(workspace / "index")

    async with started_app(settings) as app:
        assert app.items_index is not None and app.items_index.index.current is not None
        hits = search(app.items_index.index.current, "lighthouse painting safe code")

    assert hits and hits[0].kind == "exchange" and "4471" in hits[0].text
    assert hits[0].path.startswith(f"sessions/telegram%3A{OWNER}#")


async def test_a_rebuilt_index_answers_exactly_as_the_live_one(
    workspace: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(workspace, telegram=None, openai=fake_openai)
    async with started_app(settings) as app:
        fake_openai.script(
            Reply("Noted. <memory>The spare key is under the blue pot.</memory>"),
            Reply("Good luck at the dentist on Friday!"),
            Reply(
                '{"history_entry": "[2026-11-24 09:00] Key and dentist.", "memory_update": null}'
            ),
            Reply("Green tea it is."),
        )
        await say(app, "My spare key is under the blue pot.")
        await say(app, "I have a dentist appointment on Friday at 3.")
        await say(app, "/new")
        await say(app, "I prefer green tea to coffee. $ brew install tea")
        write(workspace, "MEMORY.md", "# Me\n- Dentist: Dr Lee, on Elm street.\n")
        assert app.items_index is not None and app.items_index.index.current is not None
        index = app.items_index.index.current
        await app.items_index.index.sync()  # the hand edit, as the next turn's system 55 would
        live = answers(index)
        rebuilt_report = index.rebuild()
        rebuilt = answers(index)

    assert rebuilt_report.indexed
    assert all(live), live  # every query finds something: the comparison means something
    assert rebuilt == live


async def test_an_exchange_cut_into_the_archive_stays_indexed_once(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    sessions = SessionStore(workspace, now=lambda: NOW)
    index = MemoryIndex(
        workspace.memory_root,
        workspace.index_dir,
        readers=(TranscriptSource(workspace.sessions_dir), ItemSource(workspace.memory_root)),
    )
    first = _turn("Where did I park? Level 3, spot 41.", "Level 3, spot 41.", NOW, "t1")
    second = _turn("And the ticket?", "In the glovebox.", NOW + timedelta(minutes=1), "t2")
    session = sessions.fresh(f"telegram:{OWNER}")
    await sessions.save(replace(session, messages=(*first, *second)))
    index.sync_files()
    assert [h.path for h in search(index, "park spot", (f"telegram:{OWNER}",))] == [
        f"sessions/telegram%3A{OWNER}#t1"
    ]

    await sessions.archive_part(session, first)  # consolidation's trim
    await sessions.save(replace(session, messages=second))
    report = index.sync_files()

    hits = search(index, "park spot", (f"telegram:{OWNER}",))
    assert [h.path for h in hits] == [f"sessions/telegram%3A{OWNER}#t1"]
    assert len(report.indexed) == 2
    index.close()


def test_a_turn_is_the_user_message_and_the_last_assistant_text_before_the_next() -> None:
    call = ToolCall(id="c1", name="current_time", arguments="{}")
    messages = (
        ChatMessage(role="system", content="[Conversation summary]\nearlier"),
        ChatMessage(role="user", content="what time is it?"),
        ChatMessage(role="assistant", content=None, tool_calls=(call,)),
        ChatMessage(role="tool", content="09:00", tool_call_id="c1"),
        ChatMessage(role="assistant", content="It is nine."),
        ChatMessage(role="user", content="unanswered"),
    )

    found = [(user.content, reply) for user, reply in turns(messages)]

    assert found == [("what time is it?", "It is nine.")]


def _turn(user: str, reply: str, at: datetime, turn: str) -> tuple[ChatMessage, ChatMessage]:
    return (
        ChatMessage(role="user", content=user, at=at, turn=turn),
        ChatMessage(role="assistant", content=reply, at=at),
    )
