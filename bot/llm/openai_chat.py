"""`OpenAIChat`: the `LLM` protocol over any OpenAI-compatible `/chat/completions` endpoint.

The only module that speaks the SDK: our messages in, a `Completion` out, SDK errors mapped onto
the `bot.errors.LLMError` tree, each with one line that says what failed and, where we know, what
to fix (`python -m bot doctor` prints it). Retries are the SDK's own loop (it honours
`Retry-After`). Every answer is streamed, so that the timeouts measure progress rather than the
whole answer (`bot.llm.stream`): `first_token_timeout` for the first piece, `timeout` for each
silence after it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

import openai
import structlog

from bot.errors import ContextOverflow, LLMRejected, LLMUnavailable
from bot.llm.stream import Silence, read_stream
from bot.llm.windows import ModelWindows
from bot.models import ChatMessage, Completion, ToolSpec

log = structlog.get_logger(__name__)

CONNECT_TIMEOUT = 15.0  # seconds to open a connection: a host that is away is told at once
_REJECTIONS = frozenset(range(400, 500)) - {408, 409, 429}
_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context size",  # llama.cpp's server: "exceeds the available context size"
    "too many tokens",
    "prompt is too long",
)
_STATED_LIMITS = (  # where providers say how long a prompt may be
    re.compile(r"maximum context length is (\d[\d,]*)"),  # OpenAI, vLLM, OpenRouter
    re.compile(r"(\d[\d,]*) (?:tokens )?maximum"),  # Anthropic: "… tokens > 200000 maximum"
    re.compile(r"context (?:size|length|window)\D{0,24}?(\d[\d,]*) tokens"),
    re.compile(r"\bn_ctx\W{0,4}(\d+)"),  # llama.cpp's server, in its error body
)


class OpenAIChat:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float,  # seconds of silence once an answer has started
        first_token_timeout: float | None = None,  # seconds to its first piece; `timeout` if None
        max_retries: int,
        temperature: float | None = None,
        max_tokens: int | None = None,
        windows: ModelWindows | None = None,  # learns the window an overflow error states
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.windows = windows
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.first_token_timeout = first_token_timeout or timeout
        longest = max(timeout, self.first_token_timeout)
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key,
            timeout=openai.Timeout(longest, connect=min(CONNECT_TIMEOUT, longest)),
            max_retries=max_retries,
        )

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        request: dict[str, Any] = {
            "model": model or self.model,
            "messages": [to_wire(m) for m in messages],
        }
        if tools:
            request["tools"] = [tool_to_wire(t) for t in tools]
        if (temp := temperature if temperature is not None else self.temperature) is not None:
            request["temperature"] = temp
        if (limit := max_tokens or self.max_tokens) is not None:
            request["max_tokens"] = limit
        try:
            completion = await self._stream(request)
        except openai.APIError as exc:
            error = _translate(exc, base_url=self.base_url, model=request["model"])
            if isinstance(error, ContextOverflow) and error.limit and self.windows:
                await asyncio.to_thread(self.windows.learn, request["model"], error.limit)
            raise error from exc
        except Silence as silence:
            raise self._silent(silence) from None
        if completion is None:
            raise LLMUnavailable(f"the model at {self.base_url} returned no choices")
        return completion

    async def _stream(self, request: dict[str, Any]) -> Completion | None:
        opening = self._client.chat.completions.create(
            **request, stream=True, stream_options={"include_usage": True}
        )
        return await read_stream(
            opening, first_piece=self.first_token_timeout, between_pieces=self.timeout
        )

    def _silent(self, silence: Silence) -> LLMUnavailable:
        log.warning("llm_silent", waited=silence.waited, started=silence.started)
        if silence.started:
            return LLMUnavailable(
                f"the model at {self.base_url} stopped answering for {silence.waited:g} s "
                "mid-answer: is the server still running? (or raise BOT_LLM__TIMEOUT)"
            )
        return LLMUnavailable(
            f"the model at {self.base_url} did not answer in time ({silence.waited:g} s without "
            "a word): check that it is running and BOT_LLM__BASE_URL; a slow local model may "
            "need a larger BOT_LLM__FIRST_TOKEN_TIMEOUT"
        )

    async def close(self) -> None:
        await self._client.close()


def to_wire(message: ChatMessage) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.role == "tool":
        wire["tool_call_id"] = message.tool_call_id
    return wire


def tool_to_wire(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def stated_limit(text: str) -> int | None:
    """The context window an overflow error states, or None when it states none."""
    for pattern in _STATED_LIMITS:
        if found := pattern.search(text):
            return int(found[1].replace(",", "")) or None
    return None


def _translate(exc: openai.APIError, *, base_url: str, model: str) -> Exception:
    """The SDK's error as ours. The provider's words stay in the message where they help (a
    refused request, a 5xx); a refused key or an unreachable server says what to fix instead.
    Whatever a provider echoes (a key, in full or masked) is cut where it is logged or printed
    (`bot.logs.Scrubber`)."""
    status = getattr(exc, "status_code", None)
    text = f"{getattr(exc, 'code', '') or ''} {exc.message}".lower()
    log.warning("llm_error", status=status, error=type(exc).__name__, detail=exc.message[:300])
    if status in (400, 413) and any(marker in text for marker in _OVERFLOW_MARKERS):
        return ContextOverflow(exc.message, limit=stated_limit(f"{text} {exc.body}"))
    if status == 401:
        return LLMRejected(
            f"the model at {base_url} rejected the API key (HTTP 401): check BOT_LLM__API_KEY"
        )
    if status == 404 or "model_not_found" in text or "not a valid model" in text:
        return LLMRejected(
            f"the model at {base_url} has no model {model!r} ({exc.message[:120]}): check "
            "BOT_LLM__MODEL"
        )
    if isinstance(exc, openai.APITimeoutError):
        return LLMUnavailable(
            f"the model at {base_url} did not answer in time: check the network and "
            "BOT_LLM__BASE_URL, or raise BOT_LLM__FIRST_TOKEN_TIMEOUT"
        )
    if isinstance(exc, openai.APIConnectionError):
        return LLMUnavailable(
            f"cannot reach the model at {base_url}: check the network and BOT_LLM__BASE_URL"
        )
    if isinstance(exc, openai.APIStatusError) and exc.status_code in _REJECTIONS:
        return LLMRejected(f"the model at {base_url} refused the request: {exc.message}")
    return LLMUnavailable(f"the model at {base_url} failed: {exc.message}")
