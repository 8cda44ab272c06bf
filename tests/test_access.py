"""Access and privacy: who may talk, and whose memory a chat sees."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.models import GLOBAL_SCOPE, ChatType, Inbound, MemoryScope
from bot.tools.clock import CurrentTime
from bot.tools.registry import ToolContext
from bot.turn.access import LOCAL_USER_ID, AccessPolicy

NOW = datetime(2026, 11, 21, 9, 5, tzinfo=UTC)


def inbound(user: int, chat: int, chat_type: ChatType = "private") -> Inbound:
    return Inbound(
        id="x",
        channel="telegram",
        chat_id=chat,
        user_id=user,
        text="hi",
        received_at=NOW,
        chat_type=chat_type,
    )


def test_empty_lists_mean_owners_only_never_everybody() -> None:
    policy = AccessPolicy(owner_ids=[], allowed_user_ids=[])
    assert not policy.allows(42)
    assert policy.allows(LOCAL_USER_ID)  # the console


def test_owners_and_allowed_users_may_talk() -> None:
    policy = AccessPolicy(owner_ids=[1], allowed_user_ids=[2])
    assert policy.allows(1) and policy.allows(2) and not policy.allows(3)
    assert policy.is_owner(1) and not policy.is_owner(2)


def test_only_the_owners_private_chat_sees_global_memory() -> None:
    policy = AccessPolicy(owner_ids=[1], allowed_user_ids=[2])
    assert policy.scope_for(inbound(1, 1)) == GLOBAL_SCOPE
    assert policy.scope_for(inbound(1, -100, "supergroup")) == MemoryScope("telegram:-100")
    assert policy.scope_for(inbound(2, 2)) == MemoryScope("telegram:2")


async def test_current_time_tool_reports_the_clock() -> None:
    tool = CurrentTime(lambda: NOW)
    text = await tool.run({}, ToolContext(session_key="telegram:1", scope=GLOBAL_SCOPE))
    assert text == "Saturday 2026-11-21 09:05 UTC"
