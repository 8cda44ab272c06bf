"""What the benchmarks share: the model server in-process, a quiet chat, a scratch folder, the
model2vec model the index benchmarks embed with, which of the bot's requests a fake model got
(`kind_of`), and the figures every script prints first about the machine it runs on
(`machine_line`).

A benchmark runs as a script (`python benchmarks/<name>.py`) or as a module
(`python -m benchmarks.<name>`, what `make bench` does): each puts the repository on `sys.path`
before its imports.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.conversation.flush import FLUSH_REQUEST

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

REPOSITORY = Path(__file__).resolve().parents[1]
SMALL_MODEL = REPOSITORY / "tests" / "data" / "minilm-m2v-small"  # tests/data/small_model.py
MODEL_ENV = "MNEMO_BENCH_MODEL2VEC"


@contextlib.asynccontextmanager
async def serving(handle: Handler) -> AsyncIterator[str]:
    """An OpenAI-compatible `/v1/chat/completions` on 127.0.0.1 answered by `handle`; yields
    its base URL."""
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", streaming(handle))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


def streaming(handle: Handler) -> Handler:
    """`handle`, answering a streamed request (the bot streams every answer) with its
    completion in server-sent events, as OpenAI does: the message in one chunk, then the
    usage, then `[DONE]`. Errors and plain requests pass as they are."""

    async def streamed(request: web.Request) -> web.StreamResponse:
        response = await handle(request)
        body = await request.json()
        if not body.get("stream") or response.status != 200:
            return response
        assert isinstance(response, web.Response) and response.body is not None
        completion = json.loads(bytes(response.body))  # type: ignore[arg-type]
        choice = completion["choices"][0]
        delta = dict(choice["message"])
        for n, call in enumerate(delta.get("tool_calls") or []):
            call["index"] = n
        head = {key: completion[key] for key in ("id", "created", "model")}
        chunks = [
            {
                **head,
                "object": "chat.completion.chunk",
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason")}
                ],
            },
            {
                **head,
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": completion.get("usage"),
            },
        ]
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        for chunk in chunks:
            await stream.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await stream.write(b"data: [DONE]\n\n")
        await stream.write_eof()
        return stream

    return streamed


def skip_sdk_transform() -> None:
    """Send chat requests without the openai SDK's per-message schema walk (~0.2 ms a message,
    seconds per request for long sessions). Our messages are already in wire form: what the
    model receives is the same JSON."""
    from openai._utils import is_given
    from openai.resources.chat.completions import completions as sdk_completions

    async def as_given(data: dict[str, Any], expected_type: object) -> dict[str, Any]:
        return {key: value for key, value in data.items() if is_given(value)}

    sdk_completions.async_maybe_transform = as_given  # type: ignore[attr-defined,assignment]


class Quiet:
    """A chat that takes every reply in one part and shows nothing."""

    def __init__(self) -> None:
        self.sent = 0

    def parts(self, text: str) -> list[str]:
        return [text]

    async def send_part(self, part: object) -> None:
        self.sent += 1

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        yield

    async def acknowledge(self) -> None:
        pass


def scratch() -> str | None:
    """Memory-backed /dev/shm when there is one (for figures that are not about the disk)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def rss_mb() -> float:
    """This process's resident memory now, in MB."""
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * resource.getpagesize() / 1e6


def machine_line() -> str:
    """The machine a figure was measured on: cores, load averages, Python."""
    one, five, fifteen = os.getloadavg()
    return (
        f"machine: {os.cpu_count()} cores, load {one:.2f} {five:.2f} {fifteen:.2f} "
        f"(1/5/15 min), Python {platform.python_version()}"
    )


def print_missed(missed: list[str]) -> None:
    """One `missed:` line for each target a run missed (the scripts exit 1 then)."""
    for line in missed:
        print(f"missed: {line}")


def model_option(parser: argparse.ArgumentParser) -> None:
    """`--model PATH`: the model2vec folder to embed with; else `$MNEMO_BENCH_MODEL2VEC`, else
    the small model the tests ship (its figures are not the README's: see benchmarks/README.md)."""
    parser.add_argument(
        "--model",
        type=Path,
        default=Path(os.environ.get(MODEL_ENV) or SMALL_MODEL),
        metavar="PATH",
        help=f"a model2vec model folder (default: ${MODEL_ENV}, else the tests' small model)",
    )


def model_line(folder: Path) -> str:
    """Which model2vec model a figure was measured with."""
    shown = folder.resolve()
    with contextlib.suppress(ValueError):
        shown = shown.relative_to(REPOSITORY)
    return f"model2vec: {shown}"


def vocabulary(folder: Path) -> list[str]:
    """The whole words (ASCII letters, three or more) of a model2vec model's tokenizer, in its
    order: what the synthetic turns are made of, so that the model knows every word."""
    tokens = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    return [t for t in tokens if t.isalpha() and t.isascii() and len(t) >= 3]


def kind_of(body: dict[str, Any]) -> str:
    """Which of the bot's requests a chat completion's `body` is (the fake models' split):
    flush, consolidation, compression, summary, else a turn."""
    messages = body["messages"]
    system = messages[0].get("content") or ""
    if messages[-1].get("content") == FLUSH_REQUEST:
        return "flush"
    if system.startswith("You are a memory consolidation agent"):
        return "consolidation"
    if system.startswith("You compress"):
        return "compression"
    if system.startswith("You summarise"):
        return "summary"
    return "turn"
