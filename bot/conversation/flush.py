"""The pre-compaction memory flush: one silent turn in which the model writes down
what is worth keeping before older messages are summarised away.

The model sees the conversation and may answer with memory tags; the tags are stored like any
reply's (the model's inference; what it draws from a turn that carried others' words is kept as
a quote of them, `bot.memory.trust`), and its text is never sent to anyone.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog

from bot.errors import LLMError
from bot.llm.client import LLM
from bot.memory.facts import TagSink
from bot.memory.notes.tags import extract_tags
from bot.memory.trust import inferred_over
from bot.models import ChatMessage, MemoryItem, MemoryScope, Session

log = structlog.get_logger(__name__)

NO_REPLY = "NO_REPLY"
FLUSH_SYSTEM = (
    "Memory flush. This conversation is about to be compacted: older messages will be replaced "
    "by a short summary. Before that happens, write down anything durable that would be lost: "
    "facts about the user, preferences, decisions, commitments, open tasks. Use the memory tags "
    "described below, one fact per tag; skip what memory already holds. Nobody will see your "
    f"text. If nothing needs saving, answer exactly {NO_REPLY}."
)
FLUSH_REQUEST = "(memory flush: save what should outlive compaction, or answer NO_REPLY)"


@dataclass(frozen=True)
class FlushResult:
    facts: int  # <memory> and <chat-memory> facts the model wrote
    working_memory: bool
    stored: bool  # False if the model failed or a store failed
    items: tuple[MemoryItem, ...] = ()  # semantic items made of the facts


class MemoryFlush:
    def __init__(
        self, llm: LLM, memory: TagSink, *, instructions: str, model: str, timeout: float
    ) -> None:
        self.llm = llm
        self.memory = memory
        self.instructions = instructions
        self.model = model
        self.timeout = timeout

    async def run(self, session: Session, *, scope: MemoryScope) -> FlushResult:
        """The silent turn over `session`; model failures are logged and reported, not raised."""
        prompt = [
            ChatMessage(role="system", content=f"{FLUSH_SYSTEM}\n\n{self.instructions}"),
            *session.messages,
            ChatMessage(role="user", content=FLUSH_REQUEST),
        ]
        try:
            async with asyncio.timeout(self.timeout):
                completion = await self.llm.complete(prompt, model=self.model)
        except (LLMError, TimeoutError) as exc:
            log.warning("memory_flush_failed", error=type(exc).__name__)
            return FlushResult(facts=0, working_memory=False, stored=False)
        tags = extract_tags(completion.content or "")
        origin = inferred_over(session.messages, chat=session.key, at=datetime.now(UTC))
        stored = await self.memory.store_tags(
            tags, scope=scope, session_key=session.key, turn=None, origin=origin
        )
        facts = len(tags.memories) + len(tags.chat_memories)
        log.info("memory_flush_done", facts=facts, working_memory=tags.working_memory is not None)
        return FlushResult(
            facts=facts,
            working_memory=tags.working_memory is not None,
            stored=stored.ok,
            items=stored.items,
        )
