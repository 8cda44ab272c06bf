"""Reading a streamed chat completion: its pieces into one `Completion`, every wait bounded.

Why streamed: the model's timeouts measure progress, not the whole answer. A hosted model
answers in seconds; a small local model on a CPU may read a long prompt for a minute or more and
then write a few tokens a second. Two limits fit both:

    send ──(first_piece: the server reads the prompt, queues, the SDK retries)──▶ first piece
         ──(between_pieces: each silence once the answer has started)──▶ … ──▶ last piece

A model that keeps writing is never cut off, however long its answer; one that goes silent for
longer than the limit is, with `Silence` (`bot.llm.openai_chat` says what to change).

`on_text`, when given, gets each piece of the answer's text as it arrives (a reply shown while it
is written, `bot.turn.live`); it must not block.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.models import Completion, ToolCall, Usage


class Silence(Exception):  # a condition, mapped to LLMUnavailable by the client
    """The model sent nothing for `waited` seconds (`started`: after its first piece)."""

    def __init__(self, waited: float, *, started: bool) -> None:
        super().__init__(f"no answer for {waited:g} s")
        self.waited = waited
        self.started = started


class ChunkStream(Protocol):
    """What the SDK's `AsyncStream` offers us: chunks, and closing the connection."""

    def __aiter__(self) -> AsyncIterator[Any]: ...

    async def close(self) -> None: ...


async def read_stream(
    opening: Awaitable[ChunkStream],
    *,
    first_piece: float,
    between_pieces: float,
    on_text: Callable[[str], None] | None = None,
) -> Completion | None:
    """The completion that `opening` (the SDK's streaming `create(...)`) streams; None when
    the stream held no choice at all."""
    parts = _Parts()
    stream: ChunkStream | None = None
    try:
        try:
            async with asyncio.timeout(first_piece):
                stream = await opening
                chunks = aiter(stream)
                chunk = await anext(chunks, None)
        except TimeoutError:
            raise Silence(first_piece, started=False) from None
        while chunk is not None:
            if (text := parts.add(chunk)) and on_text is not None:
                on_text(text)
            try:
                async with asyncio.timeout(between_pieces):
                    chunk = await anext(chunks, None)
            except TimeoutError:
                raise Silence(between_pieces, started=True) from None
    finally:
        if stream is not None:
            await stream.close()
    return parts.completion()


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Parts:
    """What the chunks said so far: text, tool calls by index, usage (a last chunk with
    `stream_options.include_usage`), the model's name."""

    content: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    usage: Usage | None = None
    model: str = ""
    answered: bool = False

    def add(self, chunk: Any) -> str:
        """Take in one chunk (its JSON, as the server sent it); the text it added ("" when
        none). A field of the wrong kind counts as missing."""
        text = ""
        chunk = _mapping(chunk)
        self.model = _text(chunk.get("model")) or self.model
        if usage := _mapping(chunk.get("usage")):
            self.usage = Usage(
                prompt_tokens=_count(usage.get("prompt_tokens")),
                completion_tokens=_count(usage.get("completion_tokens")),
                cached_tokens=_count(
                    _mapping(usage.get("prompt_tokens_details")).get("cached_tokens")
                ),
            )
        for choice in _list(chunk.get("choices"))[:1]:
            self.answered = True
            delta = _mapping(_mapping(choice).get("delta"))
            if text := _text(delta.get("content")):
                self.content.append(text)
            for position, piece in enumerate(_list(delta.get("tool_calls"))):
                self._add_call(_mapping(piece), position)
        return text

    def _add_call(self, piece: dict[str, Any], position: int) -> None:
        index = piece.get("index")
        call = self.calls.setdefault(index if isinstance(index, int) else position, _Call())
        call.id = _text(piece.get("id")) or call.id
        if function := _mapping(piece.get("function")):
            call.name = _text(function.get("name")) or call.name
            call.arguments.append(_text(function.get("arguments")))

    def completion(self) -> Completion | None:
        """The answer, or None when no chunk carried a choice (the server answered nothing)."""
        if not self.answered:
            return None
        calls = tuple(
            ToolCall(
                id=call.id or f"call_{index}",
                name=call.name,
                arguments="".join(call.arguments) or "{}",
            )
            for index, call in sorted(self.calls.items())
            if call.name
        )
        text = "".join(self.content)
        return Completion(
            content=None if calls and not text else text,
            tool_calls=calls,
            usage=self.usage,
            model=self.model,
        )


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
