"""System 30, the LLM tool loop: call the model, run the tools it asks for, up to a step limit.

The one control loop of a turn. The last step offers no tools, so the model has to answer. A
request that would not fit the model's window is not sent (`PromptMeter.check` raises
`ContextOverflow`: the runner compacts the session and runs the turn again). Each request is
kept, by reference, as the chat's last (`LastRequests`, for /context). The text of each answer
goes to the turn's `live` reply as it comes, when it has one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import datetime

import structlog

from bot.llm.client import LLM
from bot.llm.inspection import LastRequests, SentRequest
from bot.llm.meter import PromptMeter
from bot.models import ChatMessage, Completion, ToolSpec
from bot.pipeline import TurnContext
from bot.systems.origin import origin_of
from bot.tools.registry import ToolContext, ToolRegistry

EMPTY_REPLY = "(The model returned an empty answer.)"
NO_ANSWER = "(The model kept calling tools and gave no answer after {steps} steps{unknown}.)"
UNKNOWN = "; it asked for tools that do not exist: {names}"
log = structlog.get_logger(__name__)


@dataclass(eq=False)
class ToolLoop:
    order = 30
    name = "tool-loop"

    llm: LLM
    tools: ToolRegistry
    _: KW_ONLY
    max_steps: int
    now: Callable[[], datetime]
    meter: PromptMeter | None = None  # given: a request over the window is never sent
    sent: LastRequests | None = None  # given: each request is kept as the chat's last

    async def process(self, ctx: TurnContext) -> None:
        prompt = ctx.request()
        tool_ctx = ToolContext(
            session_key=ctx.inbound.session_key,
            scope=ctx.scope,
            forgotten=ctx.forgotten,
            stored=ctx.stored,
            origin=origin_of(ctx),
            recalled=ctx.recalled,
            inbound=ctx.inbound,
        )
        unknown: list[str] = []  # names the model called that no tool has, in order
        for step in range(1, self.max_steps + 1):
            offered = self.tools.specs if step < self.max_steps else ()
            request = [*prompt, *ctx.new_messages]
            if self.meter is not None:
                self.meter.check(request, tools=offered, marks=ctx.session.marks)
            self._keep(ctx, request, offered)
            if ctx.live is not None:
                ctx.live.restart(calls_possible=bool(offered))
            on_text = ctx.live.add if ctx.live is not None else None
            completion = await self.llm.complete(request, tools=offered, on_text=on_text)
            ctx.model = completion.model
            if completion.usage is not None:
                ctx.usages.append(completion.usage)
            calls = completion.tool_calls if offered else ()
            ctx.new_messages.append(self._assistant(completion, calls))
            if not calls:
                ctx.reply = (completion.content or "").strip() or self._empty(completion, unknown)
                return
            for call in calls:
                if call.name not in (spec.name for spec in offered):
                    log.warning("tool_unknown", tool=call.name[:80])
                    unknown.append(call.name)
                result = await self.tools.call(call, tool_ctx)
                ctx.new_messages.append(
                    ChatMessage(role="tool", content=result, tool_call_id=call.id, name=call.name)
                )

    def _empty(self, completion: Completion, unknown: Sequence[str]) -> str:
        """The line for an answer with no text: what the model did instead, when it kept
        calling tools past the last step (logged)."""
        if not completion.tool_calls:
            return EMPTY_REPLY
        names = list(dict.fromkeys(unknown))
        log.warning(
            "tool_loop_no_answer",
            steps=self.max_steps,
            calls=[call.name[:80] for call in completion.tool_calls],
            unknown=names,
        )
        listed = UNKNOWN.format(names=", ".join(n[:80] for n in names)) if names else ""
        return NO_ANSWER.format(steps=self.max_steps, unknown=listed)

    def _keep(
        self, ctx: TurnContext, request: list[ChatMessage], offered: Sequence[ToolSpec]
    ) -> None:
        if self.sent is None:
            return
        sent = SentRequest(
            messages=tuple(request),
            tools=tuple(offered),
            parts=ctx.prompt_parts,
            conversation=ctx.session.messages,
            message=ctx.user_message,
            at=self.now(),
            steps=tuple(ctx.new_messages),
        )
        self.sent.record(ctx.inbound.session_key, sent)

    def _assistant(self, completion: Completion, calls: tuple[object, ...]) -> ChatMessage:
        return ChatMessage(
            role="assistant",
            content=completion.content,
            tool_calls=completion.tool_calls if calls else (),
            at=self.now(),
        )
