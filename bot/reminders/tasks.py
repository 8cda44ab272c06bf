"""`TaskTurns`: a scheduled task's turn. The model does what the item asks, with the chat's
memory and conversation in its prompt (system 20), but nothing of the turn is saved: the
instruction is never stored as something the user said, and the reply is only delivered.

It may not schedule (the `remind` tool is not offered, and refuses a turn of this kind), so a
task never triggers itself. Its model calls stop at a per-task and a daily token cap; hitting
either ends the task without a message to the chat and tells the owner, in one line, once a day
per task (an entry of the ledger, as a reminder is). Whether there is anything to send is
decided here, from the turn's tool calls (`nothing_to_report`) or an empty answer. A model that
fails makes the run send nothing either (logged): the chat did not ask at that moment.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from bot import versioned
from bot.errors import LLMError
from bot.llm.client import LLM
from bot.models import ChatMessage, Completion, Inbound, ToolSpec
from bot.pipeline import Pipeline, System, TurnContext
from bot.reminders.tool import NAME as REMIND
from bot.settings import Settings
from bot.storage.files import ON_DISK, Documents, Locks
from bot.storage.inbox import Journal
from bot.storage.sessions import SessionStore
from bot.storage.workspace import Workspace
from bot.systems.tool_loop import EMPTY_REPLY, ToolLoop
from bot.tools.registry import ToolContext, ToolRegistry
from bot.turn.delivery import Replier
from bot.turn.router import Router

log = structlog.get_logger(__name__)
NOTHING = "nothing_to_report"
INSTRUCTION = (
    "[A scheduled task the user set up earlier runs now; the user did not write this. Do what "
    "it asks and answer with what they should read. When there is nothing worth telling them, "
    f"call {NOTHING} and stop.]\nTask: {{task}}"
)


class CapReached(Exception):
    pass


class NothingToReport:
    spec = ToolSpec(
        name=NOTHING,
        description="Call when the scheduled task found nothing worth telling: nothing is sent.",
        parameters={"type": "object", "properties": {}, "additionalProperties": False},
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return "Noted: nothing will be sent. Stop here."


@dataclass(frozen=True)
class Caps:
    per_task: int  # tokens one run of a task may use
    per_day: int  # tokens all tasks together may use in a day


class CappedLLM:
    """The model, refusing a call once `cap` tokens were used (prompt and answer)."""

    def __init__(self, llm: LLM, cap: int) -> None:
        self.llm = llm
        self.model = llm.model
        self.cap = cap
        self.spent = 0

    async def complete(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Completion:
        if self.spent >= self.cap:
            raise CapReached
        completion = await self.llm.complete(messages, **kwargs)
        if completion.usage is not None:
            self.spent += completion.usage.prompt_tokens + completion.usage.completion_tokens
        else:  # a provider that does not tell: about four characters a token
            self.spent += sum(len(m.content or "") for m in messages) // 4
        return completion


@dataclass(eq=False)
class DailySpend:
    """Tokens the tasks used today (the bot's day), in `state/task_tokens.json`: a document of
    the workspace (`documents`; the replicas share it, so the day's cap is the cluster's),
    changed under the path's lock."""

    path: Path
    now: Callable[[], datetime]
    locks: Locks
    documents: Documents = ON_DISK

    async def add(self, tokens: int) -> None:
        await self._update(lambda spent, told: (spent + tokens, told))

    async def first_telling(self, item_id: str) -> bool:
        """Whether the owner was not yet told today of this task's cap (now they are)."""
        first: list[bool] = []

        def tell(spent: int, told: list[str]) -> tuple[int, list[str]]:
            first.append(item_id not in told)
            return spent, sorted({*told, item_id})

        await self._update(tell)
        return first[0]

    async def _update(self, change: Callable[[int, list[str]], tuple[int, list[str]]]) -> None:
        async with self.locks.hold(self.path):
            day, spent, told = await asyncio.to_thread(self._read)
            today = self.now().date().isoformat()
            spent, told = change(*((spent, told) if day == today else (0, [])))
            body = {"day": today, "tokens": spent, "told": told}
            document = versioned.encode(1, body, ascii_only=True)
            await asyncio.to_thread(self.documents.write, self.path, document.encode("utf-8"))

    async def today(self) -> int:
        day, spent, _ = await asyncio.to_thread(self._read)
        return spent if day == self.now().date().isoformat() else 0

    def _read(self) -> tuple[str, int, list[str]]:
        try:
            document = json.loads((self.documents.read(self.path) or b"").decode("utf-8"))
            told = [str(t) for t in document.get("told", [])]
            return str(document["day"]), int(document["tokens"]), told
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return "", 0, []


@dataclass(eq=False, kw_only=True)
class TaskTurns:
    context: System
    llm: LLM
    tools: ToolRegistry
    router: Router
    sessions: SessionStore
    caps: Caps
    spend: DailySpend
    now: Callable[[], datetime]
    max_steps: int = 4

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        workspace: Workspace,
        locks: Locks,
        tools: ToolRegistry,
        *,
        context: System,
        llm: LLM,
        router: Router,
        sessions: SessionStore,
        now: Callable[[], datetime],
    ) -> TaskTurns:
        """Over the turn's `tools` without `remind` (a task does not schedule), and with
        `nothing_to_report`; each task and each day capped by `settings.reminders`."""
        config = settings.reminders
        task_tools = tools.without(REMIND)
        task_tools.add(NothingToReport())
        return cls(
            context=context,
            llm=llm,
            tools=task_tools,
            router=router,
            sessions=sessions,
            caps=Caps(per_task=config.task_tokens, per_day=config.daily_task_tokens),
            spend=DailySpend(workspace.task_tokens_path, now, locks, workspace.documents),
            now=now,
            max_steps=settings.llm.max_tool_steps,
        )

    async def run(self, inbound: Inbound, replier: Replier) -> str:
        """What the chat is sent ("" for nothing)."""
        left = self.caps.per_day - await self.spend.today()
        if left <= 0:
            await self._tell_owner(inbound, "the daily token cap")
            return ""
        llm = CappedLLM(self.llm, min(self.caps.per_task, left))
        ctx = await self._context(inbound)
        loop = ToolLoop(llm, self.tools, max_steps=self.max_steps, now=self.now)
        try:
            await Pipeline([self.context, loop]).run(ctx)
        except CapReached:
            capped = "its token cap" if llm.cap == self.caps.per_task else "the daily token cap"
            await self._tell_owner(inbound, capped)
            return ""
        except LLMError as exc:  # the model is down: the chat is not told of a run it never asked
            log.warning("task_llm_failed", error=type(exc).__name__, cause=str(exc.cause))
            return ""
        finally:
            await self.spend.add(llm.spent)
        log.info("task_done", tokens=llm.spent, nothing=_nothing(ctx))
        return "" if _nothing(ctx) else ctx.reply or ""

    async def _context(self, inbound: Inbound) -> TurnContext:
        return TurnContext(
            inbound=inbound,
            turn_id=uuid.uuid4().hex[:12],
            scope=self.router.access.scope_for(inbound),
            session=await self.sessions.load(inbound.session_key),
            user_message=ChatMessage(
                role="user", content=INSTRUCTION.format(task=inbound.text), at=self.now()
            ),
        )

    async def _tell_owner(self, inbound: Inbound, cap: str) -> None:
        """One line to each owner, in their private chat, once a day per task."""
        item_id = inbound.id.split(":")[1]
        if not await self.spend.first_telling(item_id):
            return
        line = f"A scheduled task stopped at {cap}: {inbound.text[:80]} [{item_id}]"
        log.warning("task_cap_reached", item=item_id, cap=cap)
        inbox: Journal = self.router.inbox
        day = self.now().date().isoformat()
        for owner in sorted(self.router.access.owners()):
            notice = Inbound(
                id=f"reminder:{item_id}-cap:{day}:{owner}",
                channel=inbound.channel,
                chat_id=owner,
                user_id=owner,
                text=line,
                received_at=self.now(),
                kind="reminder",
            )
            entry = await inbox.accept_answered(notice, line)
            outlet = self.router.outlets.get(inbound.channel)
            if entry is not None and outlet is not None:
                outlet(entry)


def _nothing(ctx: TurnContext) -> bool:
    """Nothing to send: the model said so with the tool, or gave no answer."""
    called = {c.name for m in ctx.new_messages for c in m.tool_calls}
    reply = (ctx.reply or "").strip()
    return NOTHING in called or not reply or reply == EMPTY_REPLY
