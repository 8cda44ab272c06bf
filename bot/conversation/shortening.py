"""A kept message too large for the window, shortened in the session so the next turn fits.

Compaction keeps the last turn whatever its size; when even that passes the room it may keep
(a 60,000-character answer in an 8,192-token window), the longest texts among the kept
messages are cut, a half at a time at a line break, until the kept part fits. Each cut text
ends with `SHORTENED`, saying so; the whole messages are archived by the caller first, so the
full text stays in the chat's transcript and the index finds it there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from bot.models import ChatMessage

SHORTENED = (
    "[… shortened here to fit the model's context window: the whole message ({chars} "
    "characters) is kept in this chat's archive, where memory search finds it]"
)
MIN_CHARS = 400  # a text is never cut below this many characters


def shortened(
    messages: Sequence[ChatMessage], fits: Callable[[Sequence[ChatMessage]], bool]
) -> tuple[ChatMessage, ...] | None:
    """`messages` with their longest texts cut until `fits` accepts them (or none can be cut
    further), or None when they fit as they are."""
    if fits(messages):
        return None
    heads = {i: len(m.content or "") for i, m in enumerate(messages)}
    current = list(messages)
    while not fits(current):
        index = max(heads, key=lambda i: heads[i])
        if heads[index] <= MIN_CHARS:
            break
        full = messages[index].content or ""
        head = _line_cut(full, max(MIN_CHARS, heads[index] // 2))
        heads[index] = len(head)
        text = f"{head}\n\n{SHORTENED.format(chars=f'{len(full):,}')}"
        current[index] = replace(messages[index], content=text)
    return tuple(current)


def _line_cut(text: str, size: int) -> str:
    """The first `size` characters of `text`, ending at a line break when one is in the
    second half."""
    line = text.rfind("\n", size // 2, size)
    return text[: line if line > 0 else size].rstrip()
