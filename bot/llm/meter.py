"""Prompt accounting: how many tokens a turn's prompt will take, and the model's window.

The count is offline (`TokenCounter`), then corrected by what the provider reported:

    estimate = (beyond + tools + session messages + pending) × factor × (1 + margin)

System 20 builds the system prompt and the message's context after system 18 has to decide,
so the estimate uses their size measured on the session's previous turn (before the first
one: `system_tokens` and the memory's room): the request's tokens beyond the conversation.
After each turn, system 50 keeps in the session's marks that size and `factor`: the
provider's `usage.prompt_tokens` for the turn's first completion over our count of the same
request, clamped, so a model with another tokenizer is corrected. The tools' definitions are
counted too (`tool_tokens`).

`estimate` is the one "how full" figure: /status, /context, /compact and `python -m bot prompt`
show it (`how_full`), through `bot.turn.preview.PromptPreview.estimate`, which measures a
session no turn has measured yet on its first prompt, built (not assumed).

The window is asked for each time (`ModelWindows`: it may be learnt from a provider's error).
Before each request the tool loop `check`s that it fits the window with room for the answer
(`output_reserve`): one that would not is never sent (`ContextOverflow`, and the runner
compacts). The memory sections get a share of the window (`memory_room`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.errors import ContextOverflow
from bot.llm.tokens import TokenCounter
from bot.llm.wire import tool_to_wire
from bot.models import ChatMessage, Session, SessionMarks, ToolSpec
from bot.settings import LLMSettings

MIN_FACTOR, MAX_FACTOR = 0.5, 3.0
MARGIN = 0.1  # 10% on top of the corrected count
CONVERSATION_FLOOR = 4096  # tokens of the window's room the conversation has before memory …
MEMORY_SHARE = 0.25  # … which gets this share of the rest
OUTPUT_SHARE = 8  # without a set output limit, 1/8 of the window stays for the answer …
OUTPUT_CAP = 4096  # … up to this many tokens


class Windows(Protocol):
    def for_model(self, model: str) -> int: ...

    def source(self, model: str) -> str: ...


@dataclass(frozen=True)
class PromptEstimate:
    tokens: int  # what decisions use: counted × factor × (1 + margin), rounded up
    counted: int  # the offline count: system prompt (measured or assumed) + messages
    factor: float
    window: int  # the model's context window

    @property
    def share(self) -> float:
        """How much of the window the prompt takes (1.0 = all of it)."""
        return self.tokens / self.window


HOW_FULL = "Context: {tokens:,} of {window:,} tokens ({share}), " + (
    "the next prompt with its instructions, memory, conversation and tools"
)


def how_full(estimate: PromptEstimate) -> str:
    """The one "how full" line (/status, /context, `python -m bot prompt`): the next prompt as
    the meter estimates it (what compaction decides by) against the window."""
    share = estimate.share
    shown = "under 1%" if 0 < share < 0.005 else f"{share:.0%}"
    return HOW_FULL.format(tokens=estimate.tokens, window=estimate.window, share=shown)


def how_counted(estimate: PromptEstimate, margin: float) -> str:
    """How `how_full`'s figure is made, for a person checking it (the offline count is of the
    next prompt: the last one and what came after it)."""
    bound = " held at its floor" if estimate.factor <= MIN_FACTOR else ""
    bound = " held at its ceiling" if estimate.factor >= MAX_FACTOR else bound
    return (
        f"Counted: {estimate.counted:,} tokens offline × {estimate.factor:.2f} (the provider's "
        f"count of the last prompt against ours{bound}) + {margin:.0%} margin = {estimate.tokens:,}"
    )


@dataclass(frozen=True)
class Calibration:
    """What a turn taught the meter, for the session's marks (`SessionMarks`)."""

    system_tokens: int  # what the request held beyond its conversation
    factor: float | None = None  # reported / counted, clamped; None: nothing was reported


class PromptMeter:
    def __init__(
        self,
        tokens: TokenCounter,
        windows: Windows,
        model: str,
        *,
        system_tokens: int,  # persona and instructions: with `memory_room`, assumed before a
        # turn has measured the real system prompt
        margin: float = MARGIN,
        tools: Sequence[ToolSpec] = (),  # the tools offered with each request
        max_output_tokens: int | None = None,  # the answer's limit, when one is set
    ) -> None:
        self.tokens = tokens
        self.windows = windows
        self.model = model
        self.system_tokens = system_tokens
        self.margin = margin
        self.tool_tokens = tool_tokens(tokens, tools)
        self.max_output_tokens = max_output_tokens

    @classmethod
    def from_settings(
        cls,
        config: LLMSettings,
        tokens: TokenCounter,
        windows: Windows,
        *,
        system_tokens: int,
        tools: Sequence[ToolSpec] = (),
    ) -> PromptMeter:
        """For the chat model, its answer's limit as set."""
        return cls(
            tokens,
            windows,
            config.model,
            system_tokens=system_tokens,
            tools=tools,
            max_output_tokens=config.max_output_tokens,
        )

    @property
    def window(self) -> int:
        return self.windows.for_model(self.model)

    @property
    def output_reserve(self) -> int:
        """Tokens of the window kept for the answer."""
        return self.max_output_tokens or min(OUTPUT_CAP, self.window // OUTPUT_SHARE)

    def memory_room(self) -> int:
        """Tokens the memory sections may take together: a share of what the window leaves
        beside the answer's room and the tools."""
        return memory_room(self.window, tools=self.tool_tokens, output=self.output_reserve)

    def estimate(
        self,
        session: Session,
        pending: Sequence[ChatMessage] = (),
        *,
        beyond: int | None = None,  # measured now, for a session no turn has measured yet
    ) -> PromptEstimate:
        """The prompt of the session's next completion: the system prompt, the session's
        messages and `pending` (e.g. the turn's user message), corrected and with the margin."""
        system = self._beyond(session) if beyond is None else beyond
        counted = (
            system + self.tool_tokens + self.tokens.count_messages([*session.messages, *pending])
        )
        factor = correction(session.marks)
        tokens = math.ceil(counted * factor * (1 + self.margin))
        return PromptEstimate(tokens=tokens, counted=counted, factor=factor, window=self.window)

    def conversation_room(self, session: Session, tokens: int) -> int:
        """The counted conversation tokens an estimate of `tokens` leaves room for, beside what
        the session's requests take beyond their conversation (as last measured) and tools."""
        beyond = self._beyond(session) + self.tool_tokens
        return max(0, int(tokens / (correction(session.marks) * (1 + self.margin))) - beyond)

    def _beyond(self, session: Session) -> int:
        """What the session's requests hold beyond the conversation, as last measured."""
        assumed = self.system_tokens + self.memory_room()
        measured = session.marks.system_tokens
        return assumed if measured is None else measured

    def check(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec],
        marks: SessionMarks,
    ) -> None:
        """`ContextOverflow` (nothing is sent) when the request would not leave the answer
        its room in the window; `marks` are the session's (its correction factor)."""
        counted = self.tokens.count_messages(messages) + (self.tool_tokens if tools else 0)
        tokens = math.ceil(counted * correction(marks) * (1 + self.margin))
        room = self.window - self.output_reserve
        if tokens > room:
            raise ContextOverflow(f"the request would take ~{tokens} tokens of {room}")

    def calibrate(
        self,
        *,
        request: Sequence[ChatMessage],
        conversation: Sequence[ChatMessage],
        reported: int | None,
    ) -> Calibration:
        """What a turn whose first completion was sent `request` (the system prompt, the
        session, the user's message with its context), made of `conversation` (the session
        and the user's message as written) teaches: what the request holds beyond the
        conversation and, if the provider reported the prompt's tokens, the correction
        factor."""
        messages = self.tokens.count_messages(request)
        beyond = max(0, messages - self.tokens.count_messages(conversation))
        counted = messages + self.tool_tokens
        if not (reported and counted):
            return Calibration(system_tokens=beyond)
        factor = min(MAX_FACTOR, max(MIN_FACTOR, reported / counted))
        return Calibration(system_tokens=beyond, factor=round(factor, 4))


def memory_room(window: int, *, tools: int, output: int | None = None) -> int:
    """`PromptMeter.memory_room` of a window, its tools' tokens and the answer's room (without
    a set output limit: `OUTPUT_SHARE` of the window, at most `OUTPUT_CAP`)."""
    reserve = min(OUTPUT_CAP, window // OUTPUT_SHARE) if output is None else output
    free = window - reserve - tools - CONVERSATION_FLOOR
    return int(MEMORY_SHARE * max(0, free))


def tool_tokens(tokens: TokenCounter, tools: Sequence[ToolSpec]) -> int:
    """What the tools' definitions take in a request, as we count them."""
    return tokens.count(json.dumps([tool_to_wire(tool) for tool in tools])) if tools else 0


def correction(marks: SessionMarks) -> float:
    """The stored factor, clamped; 1.0 when there is none."""
    factor = marks.token_factor
    if factor is None or not math.isfinite(factor):
        return 1.0
    return min(MAX_FACTOR, max(MIN_FACTOR, factor))
