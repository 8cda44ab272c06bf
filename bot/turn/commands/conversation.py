"""/new (and /reset) and /compact: closing the conversation, or making room in it."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from bot.conversation.closing import ConversationClose, kept
from bot.conversation.compaction import CompactionResult, Compactor
from bot.models import Inbound
from bot.storage.sessions import SessionStore
from bot.turn.access import AccessPolicy
from bot.turn.chats import ChatLocks
from bot.turn.commands.handler import Progress, plural
from bot.turn.preview import PromptPreview

NEW_EMPTY = "Started a new conversation. Your memory files are kept."
NEW_SAVING = "Saving this conversation ({messages}) to memory, then starting a new one…"
NEW_SAVED = (
    "Started a new conversation. I saved what mattered from the last one ({messages}) to memory."
)
NEW_RAW = (
    "Started a new conversation. The model could not summarise the last one ({messages}), so I "
    "kept it in history as a raw note."
)
COMPACTING = "Summarising {count} older messages…"
COMPACT_USAGE = (
    "Usage: /compact [N] — summarise all but the last N messages (N a positive whole number; "
    "{keep} when left out)."
)


@dataclass(eq=False)
class NewConversation:
    """Consolidate the session (awaited, bounded; raw fallback), then archive it."""

    names = ("new", "reset")
    slow = True

    closing: ConversationClose
    sessions: SessionStore
    locks: ChatLocks
    access: AccessPolicy

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        key = inbound.session_key
        async with self.locks.hold(key):
            session = await self.sessions.load(key)
            messages = plural(len(kept(session)), "message")
            if self.closing.consolidates(session):
                progress.doing(NEW_SAVING.format(messages=messages))
            scope = self.access.scope_for(inbound)
            closed = await self.closing.close(session, scope, at=inbound.received_at, wait=True)
        if closed.consolidated is None:
            return NEW_EMPTY
        return (NEW_SAVED if closed.consolidated else NEW_RAW).format(messages=messages)


@dataclass(eq=False)
class Compact:
    """Summarise all but the last N messages now, under the chat's lock."""

    names = ("compact",)
    slow = True

    compactor: Compactor
    sessions: SessionStore
    locks: ChatLocks
    access: AccessPolicy
    gauge: PromptPreview  # how full the prompt is, before and after (as /status says)
    _: KW_ONLY
    keep: int  # /compact without N

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        keep = keep_count(args, default=self.keep)
        if keep is None:
            return COMPACT_USAGE.format(keep=self.keep)
        key, scope = inbound.session_key, self.access.scope_for(inbound)
        async with self.locks.hold(key):
            session = await self.sessions.load(key)
            progress.doing(COMPACTING.format(count=max(len(session.messages) - keep, 0)))
            before = await self.gauge.estimate(inbound, session)
            result = await self.compactor.compact(session, keep=keep, reason="manual", scope=scope)
            after = await self.gauge.estimate(inbound, result.session)
        return compact_receipt(result, keep=keep, tokens=(before.tokens, after.tokens))


def keep_count(args: str, *, default: int) -> int | None:
    """/compact's N: `default` when absent, None unless a positive whole number."""
    if not args:
        return default
    return int(args) if args.isdecimal() and int(args) > 0 else None


def compact_receipt(result: CompactionResult, *, keep: int, tokens: tuple[int, int]) -> str:
    """What /compact did: messages and tokens (how full the prompt is, as /status says it)
    before → after, or that the summary failed and nothing changed."""
    before, after = result.messages_before, result.messages_after
    if result.failed:
        return (
            f"Not compacted: the model could not summarise the messages before the last {keep}, "
            f"so all {before} stay as they were (nothing dropped). Try /compact again later."
        )
    if not result.compacted:
        if before <= keep:
            return f"Nothing to compact: {before} messages, and /compact keeps the last {keep}."
        return (
            f"Nothing to compact: what comes before the last {keep} messages is already a "
            "summary, or part of the same exchange with tools."
        )
    how = (
        "The older messages are now one summary"
        if result.summarized
        else "A kept message too long for the window is shortened"
    )
    return (
        f"Compacted: {before} → {after} messages, "
        f"~{tokens[0]:,} → ~{tokens[1]:,} tokens. "
        f"{how}; a verbatim copy is in the history."
    )
