"""The `LLM` protocol: what the core needs from a chat model, in our own types."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from bot.models import ChatMessage, Completion, ToolSpec


class LLM(Protocol):
    model: str

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> Completion:
        """One completion; raises `LLMUnavailable`, `LLMRejected` or `ContextOverflow`.
        `on_text` gets each piece of the answer's text as it arrives (it must not block)."""
        ...
