"""Whose words a turn's memory would be: the sender's own, or quoted material (and as what)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from bot.memory.notes.quoted import QUOTE_MARK
from bot.memory.trust import turn_origin
from bot.models import Attachment
from tests.talk import message

AT = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
SAID = message("hello", at=AT)


def test_a_plain_message_is_the_senders_own() -> None:
    origin = turn_origin(SAID, at=AT)

    assert origin.trusted and origin.said.via == "message"
    assert origin.source == origin.said


def test_a_voice_note_and_a_photo_are_said_as_such() -> None:
    voice = replace(SAID, attachments=(Attachment("voice", "f1"),))
    photo = replace(SAID, attachments=(Attachment("photo", "f2"),))

    assert turn_origin(voice, at=AT).said.via == "voice"
    assert turn_origin(photo, at=AT).said.via == "photo"
    assert turn_origin(voice, at=AT).trusted


def test_others_words_make_the_turn_quoted_and_say_which() -> None:
    forwarded_voice = replace(SAID, forwarded=True, attachments=(Attachment("voice", "f"),))
    document = replace(SAID, attachments=(Attachment("document", "f"),))

    assert turn_origin(forwarded_voice, at=AT).quoted == "forwarded"
    assert turn_origin(document, at=AT, attached="page one").quoted == "document"
    assert turn_origin(SAID, at=AT, chatter=True).quoted == "group"
    assert turn_origin(SAID, at=AT, tool_results=[("web_fetch", "x")]).quoted == "tool"
    found = f"[1] QUOTED.md#L4\n- [q-1] {QUOTE_MARK} “x”"
    assert turn_origin(SAID, at=AT, tool_results=[("memory_search", found)]).quoted == "tool"
    assert turn_origin(SAID, at=AT, tool_results=[("memory_search", "notes")]).trusted
    quoted = turn_origin(document, at=AT, attached="page one")
    assert quoted.source.via == "document" and quoted.source.by == quoted.said.by
