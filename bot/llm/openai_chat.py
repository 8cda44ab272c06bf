"""`OpenAIChat`: the `LLM` protocol over any OpenAI-compatible `/chat/completions` endpoint.

The only module that speaks the SDK: our messages in, a `Completion` out, SDK errors mapped onto
the `bot.errors.LLMError` tree by cause (`LLMCause`: key rejected, out of credit, model not
found, rate-limited, timed out, overloaded, …), worded by `bot.llm.failures`. Retries are the
SDK's own loop (it honours `Retry-After`). Every answer is streamed, so that the timeouts
measure progress rather than the whole answer (`bot.llm.stream`): `first_token_timeout` for the
first piece, `timeout` for each silence after it; `on_text` sees the text as it comes.

The SDK is imported, and the client made, at the first request (or `warm`): the SDK is most of
what a start imports, and a replica answers `/healthz` before it needs a model.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import structlog

from bot.errors import ContextOverflow, LLMCause, LLMError, LLMRejected, LLMUnavailable
from bot.llm import failures
from bot.llm.stream import Silence, read_stream
from bot.llm.text_calls import calls_in_text
from bot.llm.windows import ModelWindows
from bot.llm.wire import to_wire, tool_to_wire
from bot.logs import Scrubber
from bot.models import ChatMessage, Completion, ToolSpec
from bot.settings import LLMSettings
from bot.storage.inbox import LeaseLapsed, look_first, wire_hook

if TYPE_CHECKING:
    import openai

log = structlog.get_logger(__name__)

LAPSES = 3  # looks again after a request stopped at the wire, before the turn gives up
CONNECT_TIMEOUT = 15.0  # seconds to open a connection: a host that is away is told at once
# a provider's 4xx that asking again would not change (the SDK retries 408, 409 and 429)
REJECTIONS = frozenset(range(400, 500)) - {408, 409, 429}
_PASSING = frozenset(  # causes that pass by themselves: `LLMUnavailable`; the rest `LLMRejected`
    {
        LLMCause.RATE_LIMITED,
        LLMCause.TIMED_OUT,
        LLMCause.OVERLOADED,
        LLMCause.UNREACHABLE,
        LLMCause.FAILED,
    }
)
_CREDIT_MARKERS = (
    "insufficient_quota",  # OpenAI's 429 code and type
    "exceeded your current quota",
    "insufficient credits",  # OpenRouter (402)
    "insufficient balance",  # DeepSeek (402)
    "credit balance",  # Anthropic: "Your credit balance is too low"
    "billing",
)
_MISSING_MODEL_MARKERS = (
    "does not exist",  # OpenAI: "The model `x` does not exist or you do not have access to it."
    "not found",  # Ollama: 'model "x" not found, try pulling it first'
    "not a valid model",  # OpenRouter
    "invalid model",
    "unknown model",
    "no such model",
)
_ERROR_CODE = re.compile(r"^Error code: \d+(?: - )?")  # the SDK's prefix to a provider's message
DETAIL_CHARS = 200
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
        proxy: str | None = None,  # an http(s):// or socks5:// proxy for every request
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.windows = windows
        self._scrub = Scrubber((api_key,))
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.first_token_timeout = first_token_timeout or timeout
        self._api_key, self._max_retries, self._proxy = api_key, max_retries, proxy

    @classmethod
    def from_settings(
        cls, config: LLMSettings, api_key: str, windows: ModelWindows | None = None
    ) -> OpenAIChat:
        """The model client (also `python -m bot doctor`'s, without the rest of the app)."""
        return cls(
            base_url=config.base_url,
            api_key=api_key,
            model=config.model,
            timeout=config.timeout,
            first_token_timeout=config.first_token_timeout,
            max_retries=config.max_retries,
            temperature=config.temperature,
            max_tokens=config.max_output_tokens,
            windows=windows,
            proxy=config.proxy,
        )

    @cached_property
    def _client(self) -> openai.AsyncOpenAI:
        import openai

        longest = max(self.timeout, self.first_token_timeout)
        return openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._api_key,
            timeout=openai.Timeout(longest, connect=min(CONNECT_TIMEOUT, longest)),
            max_retries=self._max_retries,
            # a replica's turn checks its hold as the request goes out (`wire_hook`)
            http_client=openai.DefaultAsyncHttpxClient(
                proxy=self._proxy, event_hooks={"request": [wire_hook]}
            ),
        )

    def warm(self) -> None:
        """Import the SDK and make the client now (blocking: in a thread, after the start)."""
        assert self._client is not None

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
        import openai

        try:
            completion = await self._asked(request, on_text)
        except openai.APIError as exc:
            if isinstance(lapsed := exc.__cause__, LeaseLapsed):  # stopped at the wire
                raise lapsed from None
            error = _translate(
                exc, base_url=self.base_url, model=request["model"], scrub=self._scrub
            )
            if isinstance(error, ContextOverflow) and error.limit and self.windows:
                await asyncio.to_thread(self.windows.learn, request["model"], error.limit)
            raise error from exc
        except Silence as silence:
            raise self._silent(silence) from None
        if completion is None:
            raise LLMUnavailable(
                f"the model at {self.base_url} returned no choices",
                model=request["model"],
                host=failures.host_of(self.base_url),
            )
        return _calls_in_text(completion, tools)

    async def _asked(
        self, request: dict[str, Any], on_text: Callable[[str], None] | None
    ) -> Completion | None:
        """The request streamed after the turn's look (a replica's turn given away meanwhile
        asks the model nothing); one stopped at the wire (its hold lapsed while this process
        did not run) is looked at again and made, up to `LAPSES` times."""
        import openai

        for tries in range(1, LAPSES + 1):
            await look_first()
            try:
                return await self._stream(request, on_text)
            except openai.APIConnectionError as exc:
                if not isinstance(exc.__cause__, LeaseLapsed) or tries == LAPSES:
                    raise
        raise AssertionError("unreachable: the last try returns or raises")

    async def _stream(
        self, request: dict[str, Any], on_text: Callable[[str], None] | None
    ) -> Completion | None:
        # the SDK's `chat.completions.create` checks the request against its types and builds
        # a model of every chunk: CPU on the event loop that 64 chats at once feel (issue 23);
        # the request is ours, plain JSON already, and the chunks are read as sent
        import openai

        opening = self._client.post(
            "/chat/completions",
            body={**request, "stream": True, "stream_options": {"include_usage": True}},
            cast_to=object,
            stream=True,
            stream_cls=openai.AsyncStream[object],
        )
        return await read_stream(
            opening,
            first_piece=self.first_token_timeout,
            between_pieces=self.timeout,
            on_text=on_text,
        )

    def _silent(self, silence: Silence) -> LLMUnavailable:
        log.warning("llm_silent", waited=silence.waited, started=silence.started)
        timed_out = functools.partial(
            LLMUnavailable,
            cause=LLMCause.TIMED_OUT,
            model=self.model,
            host=failures.host_of(self.base_url),
        )
        if silence.started:
            return timed_out(
                f"the model at {self.base_url} stopped answering for {silence.waited:g} s "
                "mid-answer: is the server still running? (or raise BOT_LLM__TIMEOUT)"
            )
        return timed_out(
            f"the model at {self.base_url} did not answer in time ({silence.waited:g} s without "
            "a word): check that it is running and BOT_LLM__BASE_URL; a slow local model may "
            "need a larger BOT_LLM__FIRST_TOKEN_TIMEOUT"
        )

    async def reachable(self) -> None:
        """Raise the `LLMError` a request would meet — a server that is down, a wrong address, a
        rejected key — by asking for the list of models (`GET /models`): no token spent, nothing
        asked of the model. A provider whose list is public (OpenRouter) cannot tell a wrong key
        this way; its first answer will."""
        import openai

        try:
            await self._client.get("/models", cast_to=object, options={"max_retries": 0})
        except openai.APIError as exc:
            raise _translate(  # the caller says it, in one line of its own
                exc, base_url=self.base_url, model=self.model, scrub=self._scrub, logged=False
            ) from exc

    async def close(self) -> None:
        if "_client" in self.__dict__:  # made (`cached_property`)
            await self._client.close()


def _calls_in_text(completion: Completion, tools: Sequence[ToolSpec]) -> Completion:
    """The completion, its text taken as tool calls when it is only those
    (`bot.llm.text_calls`: small local models write them so)."""
    if not tools or completion.tool_calls or not completion.content:
        return completion
    calls = calls_in_text(completion.content, {tool.name for tool in tools})
    if not calls:
        return completion
    log.info("llm_tool_calls_in_text", calls=len(calls))
    return replace(completion, content=None, tool_calls=calls)


def stated_limit(text: str) -> int | None:
    """The context window an overflow error states, or None when it states none."""
    for pattern in _STATED_LIMITS:
        if found := pattern.search(text):
            return int(found[1].replace(",", "")) or None
    return None


def _translate(
    exc: openai.APIError, *, base_url: str, model: str, scrub: Scrubber, logged: bool = True
) -> LLMError:
    """The SDK's error as ours, with its cause (`_cause`) and what `bot.llm.failures` needs to
    word it. The provider's words (`detail`) are scrubbed of the key it may echo (in full or
    masked); the log line (unless the caller says it in its own, `logged=False`) is cut the
    same way (`bot.logs.Scrubber`)."""
    status = getattr(exc, "status_code", None)
    text = f"{exc.code or ''} {exc.type or ''} {exc.message}".lower()
    if logged:
        log.warning("llm_error", status=status, error=type(exc).__name__, detail=exc.message[:300])
    if status in (400, 413) and any(marker in text for marker in _OVERFLOW_MARKERS):
        return ContextOverflow(exc.message, limit=stated_limit(f"{text} {exc.body}"), model=model)
    cause = _cause(exc, status, text)
    detail = scrub(_ERROR_CODE.sub("", exc.message))[:DETAIL_CHARS]
    kind = LLMUnavailable if cause in _PASSING else LLMRejected
    return kind(
        failures.line(cause, base_url=base_url, status=status, detail=detail),
        cause=cause,
        model=model,
        host=failures.host_of(base_url),
        status=status,
        detail=detail,
        retry_after=_retry_after(exc),
    )


def _cause(exc: openai.APIError, status: int | None, text: str) -> LLMCause:
    """Why the request failed, from the status and the words and codes providers send:
    OpenAI, OpenRouter (402 credits), Anthropic (529, "credit balance"), Ollama, llama.cpp."""
    import openai

    if isinstance(exc, openai.APITimeoutError) or status == 408:
        return LLMCause.TIMED_OUT
    if isinstance(exc, openai.APIConnectionError):
        return LLMCause.UNREACHABLE
    if status is None:
        return LLMCause.FAILED
    if status == 401:
        return LLMCause.KEY_REJECTED
    client_error = 400 <= status < 500
    if status == 402 or (client_error and any(m in text for m in _CREDIT_MARKERS)):
        return LLMCause.OUT_OF_CREDIT
    if status == 404 or (client_error and _names_missing_model(text)):
        return LLMCause.MODEL_NOT_FOUND if _names_missing_model(text) else LLMCause.NO_ENDPOINT
    if status == 429:
        return LLMCause.RATE_LIMITED
    if status >= 500:
        return LLMCause.OVERLOADED
    return LLMCause.REFUSED if status in REJECTIONS else LLMCause.FAILED


def _names_missing_model(text: str) -> bool:
    return "model_not_found" in text or (
        "model" in text and any(marker in text for marker in _MISSING_MODEL_MARKERS)
    )


def _retry_after(exc: openai.APIError) -> float | None:
    """The seconds a 429 asks us to wait (`Retry-After`), when it says."""
    response = getattr(exc, "response", None)
    if response is None:
        return None
    try:
        return float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
