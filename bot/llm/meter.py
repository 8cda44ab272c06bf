"""Prompt accounting: how many tokens a turn's prompt will take, and the model's window.

The count is offline (`TokenCounter`), then corrected by what the provider reported:

    estimate = (memory and instructions + session messages + pending) × factor × (1 + margin)

System 20 builds the system prompt and the message's context after system 18 has to decide, so
the estimate uses their size measured on the session's previous turn (or `system_tokens` before
the first one): the request's tokens beyond the conversation itself. After each turn, system 50
stores in the session's metadata that size and `factor`: the provider's `usage.prompt_tokens`
for the turn's first completion over our count of the same request, clamped, so a model with
another tokenizer (or tool definitions we do not count) is corrected.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.llm.tokens import TokenCounter
from bot.llm.windows import ContextWindows
from bot.models import ChatMessage, Session

SYSTEM_TOKENS = "prompt_system_tokens"  # session metadata: last request beyond its conversation
FACTOR = "prompt_token_factor"  # session metadata: reported / counted, clamped
MIN_FACTOR, MAX_FACTOR = 0.5, 3.0
MARGIN = 0.1  # 10% on top of the corrected count


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


class PromptMeter:
    def __init__(
        self,
        tokens: TokenCounter,
        windows: ContextWindows,
        model: str,
        *,
        system_tokens: int,  # assumed before a turn has measured the real system prompt
        margin: float = MARGIN,
    ) -> None:
        self.tokens = tokens
        self.model = model
        self.window = windows.for_model(model)
        self.system_tokens = system_tokens
        self.margin = margin

    def estimate(self, session: Session, pending: Sequence[ChatMessage] = ()) -> PromptEstimate:
        """The prompt of the session's next completion: the system prompt, the session's
        messages and `pending` (e.g. the turn's user message), corrected and with the margin."""
        system = _int(session.metadata.get(SYSTEM_TOKENS), self.system_tokens)
        counted = system + self.tokens.count_messages([*session.messages, *pending])
        factor = correction(session.metadata)
        tokens = math.ceil(counted * factor * (1 + self.margin))
        return PromptEstimate(tokens=tokens, counted=counted, factor=factor, window=self.window)

    def calibrate(
        self,
        *,
        request: Sequence[ChatMessage],
        conversation: Sequence[ChatMessage],
        reported: int | None,
    ) -> dict[str, str]:
        """Session metadata after a turn whose first completion was sent `request` (the system
        prompt, the session, the user's message with its context), made of `conversation`
        (the session and the user's message as written): what the request holds beyond the
        conversation and, if the provider reported the prompt's tokens, the correction
        factor."""
        counted = self.tokens.count_messages(request)
        beyond = max(0, counted - self.tokens.count_messages(conversation))
        update = {SYSTEM_TOKENS: str(beyond)}
        if reported and counted:
            factor = min(MAX_FACTOR, max(MIN_FACTOR, reported / counted))
            update[FACTOR] = f"{factor:.4f}"
        return update


def correction(metadata: Mapping[str, str]) -> float:
    """The stored factor, clamped; 1.0 when there is none (or it is unreadable)."""
    try:
        factor = float(metadata.get(FACTOR, "1"))
    except ValueError:
        return 1.0
    if not math.isfinite(factor):
        return 1.0
    return min(MAX_FACTOR, max(MIN_FACTOR, factor))


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
