"""A real model's memory on real chats: REALTALK replayed through the bot, the model writing the
notes, each question scored on the whole memory part of the prompt a turn builds for it.

    python benchmarks/real_memory.py --gguf MODEL.gguf           (starts llama.cpp's server)
    python benchmarks/real_memory.py --base-url http://127.0.0.1:PORT/v1
                                            (any OpenAI-compatible endpoint; --upstream-model)
    options: --data eval-data/realtalk.json --chats 2 --seed 31 --days 3 --window 8192

Opt-in, by hand (never in CI): without a model (`--gguf`, `--base-url` or $MNEMO_REAL_MODEL, a
GGUF path) or without the REALTALK data it prints why and exits 0, so `make bench` passes by.

How a chat is replayed. The chat's first speaker is the user, the other the bot (the converter's
rule, `bot.eval.realtalk`). Each day (a REALTALK session) goes through the real app
(`bot.app.build_app`) on the replay's clock: each user message as an inbound message, the other
speaker's recorded words as the bot's reply (the main model is a stand-in that answers a turn
with them: no generation), `/new` at the day's end. Every request the bot's own path sends to
its fast model for memory (consolidation of the window and at `/new`, compaction's summary, the
flush, compression) goes to the real model, cached by the request's bytes under
`.bench-cache/real_memory/` (git-ignored): a run cut short goes on where it stopped, and a
second run costs no model time. The same days are replayed a second time with the fast model
answering nothing (consolidation falls back to its raw entry): that is "turns only", the bot's
memory without the model's own notes. A day's leading words of the other speaker (the bot
cannot speak first) are left out, and so is every question whose evidence is among them or
outside the replayed days.

How a question is scored. It is sent as a message the day after the last replayed day (the
app built again over the same workspace, consolidation and compaction off); the request the
turn builds is caught and its memory part read: `# Memory`, `# Memory for this message`,
`# Relevant Memory`. Evidence recall: the share of the question's evidence turns that part holds.
A turn is held by a line that shows it: at least 60% of the turn's content words in one line
(the whole turn, for turns of one or two content words). A line the model wrote (MEMORY.md,
HISTORY, the items made of them) holds the turns its provenance names and it shares content
with: it was written by the consolidation of one day's conversation (MEMORY.md's provenance
side file names the chat and the time; the replay's clock maps the time to that day), so it
counts for an evidence turn of that day when what it says (after its `whom's kind:` label)
shares min(2, either's count) content words with the turn (words compared by their first five
letters; the speakers' names and the words "user" and "assistant" left out). A line
without provenance counts for no turn. Answer coverage: the share of the gold answer's content
words present anywhere in the memory part (a model-free proxy of what a model can answer from).

Hygiene: every line the model wrote into MEMORY.md (each version), HISTORY and items, sorted
into junk kinds (`junk_of`): prompt echoes, placeholders, duplicates (the same normal form as
an earlier line of the same file, any bullet: `bot.memory.lines`), wrong person (about the user,
grounded in the other speaker's words only), degenerate text, ungrounded (no turn of its day
shares two content words with it).

Cost: prompt and output tokens and seconds of every model call, the cached ones apart.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import itertools
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from benchmarks.common import Quiet, kind_of, machine_line, serving, skip_sdk_transform
from bot.app import build_app
from bot.eval.dataset import Conversation, Question, Session, load_dataset
from bot.logs import configure
from bot.memory.lines import bare, fingerprint, normal
from bot.memory.upkeep.consolidation import Consolidator
from bot.memory.upkeep.requests import PROMPT_ECHOES, RAW_FALLBACK
from bot.models import Inbound
from bot.settings import (
    CompactionSettings,
    LLMSettings,
    MemorySettings,
    RagSettings,
    Settings,
    TelegramSettings,
)

REPOSITORY = Path(__file__).resolve().parents[1]
DATA = REPOSITORY / "eval-data" / "realtalk.json"
RAW = REPOSITORY / "eval-data" / "REALTALK" / "data"
CACHE = REPOSITORY / ".bench-cache" / "real_memory"
OWNER = 1
REPLAY_MODEL = "replay"  # the main model: the stand-in that answers a turn with recorded words
FAST_MODEL = "local"  # the fast model: memory's requests, to the real model
MODEL_ENV = "MNEMO_REAL_MODEL"
LONG = 7200.0  # seconds: a CPU model reads a long request for minutes
STOP = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't could did didn't do does doesn't doing
    don't down during each few for from further get got had hadn't has hasn't have haven't
    having he he'd he'll he's her here here's hers herself him himself his how how's i i'd
    i'll i'm i've if in into is isn't it it's its itself just let's like me more most much my
    myself no nor not now of off on once only or other ought our ours ourselves out over own
    really same she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this
    those through to too under until up us very was wasn't we we'd we'll we're we've were
    weren't what what's when when's where where's which while who who's whom why why's will
    with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
    also yes yeah oh ok okay well im ive dont thats youre lol haha hey hi hello one thing things
    going go know think want time day today good great nice yeah sure still though even back
    user assistant""".split()  # noqa: SIM905 (a word list reads better as text)
)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
PLACEHOLDERS = re.compile(
    r"^(?:fact|…|\.\.\.|n/?a|none|tbd|todo|\(empty\)|empty|\[forgotten\]|<[^>]*>|\[[^\]]*\])$"
    r"|\[YYYY-MM-DD|YYYY-MM-DD|HH:MM\]|<fact>|\{[a-z_]+\}",
    re.IGNORECASE,
)
ECHO_PHRASES = (
    "memory consolidation agent",
    "history_entry",
    "memory_update",
    "current long-term memory",
    "conversation to process",
    "return only the json",
    "material to summarise",
)
LABEL = re.compile(r"\b(?:USER|ASSISTANT)\s*:", re.IGNORECASE)
MEMORY_HEADINGS = ("# Memory", "# Memory for this message", "# Relevant Memory")


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.casefold().replace("\u2019", "'")) if w not in STOP]


def stems(text: str) -> set[str]:
    """Content words by their first five letters (`reading`, `read`; `games`, `game`)."""
    return {w[:5] for w in words(text)}


def told(line: str) -> str:
    """What a fact line says, without the `whom's kind:` label the instructions ask for."""
    label, colon, value = line.partition(":")
    return value if colon and len(label.split()) <= 5 else line


# ----------------------------------------------------------------------------- the chats


@dataclass(frozen=True)
class Exchange:
    said: str  # the user's words (one message: consecutive turns joined)
    reply: str  # the other speaker's recorded words, the bot's reply ("" for none)
    turns: tuple[str, ...]  # the turn ids it carries


@dataclass(frozen=True)
class Day:
    session: Session
    exchanges: tuple[Exchange, ...]
    dropped: frozenset[str]  # the other speaker's words before the user's first


def day_of(session: Session) -> Day:
    groups: list[tuple[str, list[str], list[str]]] = []
    for turn in session.turns:
        if groups and groups[-1][0] == turn.speaker:
            groups[-1][1].append(turn.text)
            groups[-1][2].append(turn.id)
        else:
            groups.append((turn.speaker, [turn.text], [turn.id]))
    dropped: set[str] = set()
    while groups and groups[0][0] != "user":
        dropped.update(groups.pop(0)[2])
    exchanges = []
    for index in range(0, len(groups), 2):
        said = groups[index]
        reply = groups[index + 1] if index + 1 < len(groups) else ("assistant", [], [])
        exchanges.append(Exchange("\n".join(said[1]), "\n".join(reply[1]), (*said[2], *reply[2])))
    return Day(session, tuple(exchanges), frozenset(dropped))


def gold_answers(conversation: str) -> dict[str, str]:
    path = RAW / f"{conversation}.json"
    if not path.is_file():
        return {}
    raw = json.loads(path.read_text())
    return {str(qa["question"]): str(qa.get("answer", "")) for qa in raw.get("qa", [])}


# ----------------------------------------------------------------------------- the model


@dataclass
class Cost:
    calls: int = 0
    prompt: int = 0
    output: int = 0
    seconds: float = 0.0

    def add(self, record: dict[str, Any]) -> None:
        self.calls += 1
        self.prompt += int(record.get("prompt_tokens", 0))
        self.output += int(record.get("completion_tokens", 0))
        self.seconds += float(record.get("seconds", 0.0))


@dataclass
class Model:
    """The bot's model server: a turn answered with the recorded reply (or, for a question,
    caught), memory's requests sent on to the real model through the cache (or, for turns
    only, answered with nothing)."""

    upstream: str | None
    upstream_model: str
    cache: Path
    max_output: int | None = None
    reply: str = ""
    caught: dict[str, Any] | None = None
    kinds: Counter[str] = field(default_factory=Counter)
    fresh: Cost = field(default_factory=Cost)
    cached: Cost = field(default_factory=Cost)
    session: aiohttp.ClientSession | None = None

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        kind = kind_of(body)
        if kind == "turn":
            self.caught = body
            return completion(body, self.reply or "OK.")
        self.kinds[kind] += 1
        if self.upstream is None:
            return completion(body, "NO_REPLY" if kind == "flush" else "{}")
        return await self.forward(body, kind)

    async def forward(self, body: dict[str, Any], kind: str) -> web.Response:
        sent = {k: v for k, v in body.items() if k not in {"stream", "stream_options"}}
        sent["model"] = self.upstream_model
        if self.max_output and not sent.get("max_tokens"):
            sent["max_tokens"] = self.max_output  # --max-output: a bound the bot did not set
        # the key leaves the answer's bound out: an answer that stopped before a new bound is the
        # answer under it too (the server samples with a fixed seed)
        keyed = {k: v for k, v in sent.items() if k != "max_tokens"}
        key = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:24]
        path = self.cache / f"{key}.json"
        if path.is_file():
            record = json.loads(path.read_text())
            bound = sent.get("max_tokens") or 10**9
            stopped = record.get("finish_reason", "stop") == "stop"
            made_under = record.get("bound") or 10**9
            if (stopped and int(record.get("completion_tokens", 0)) < bound) or (
                bound <= made_under
            ):
                self.cached.add(record)
                return web.json_response(record["response"])
        assert self.session is not None
        self.cache.mkdir(parents=True, exist_ok=True)
        path.with_suffix(".request").write_text(json.dumps(sent, indent=1))
        begun = time.monotonic()
        print(f"  model: {kind} request, {len(json.dumps(sent)):,} chars ...", file=sys.stderr)
        timeout = aiohttp.ClientTimeout(total=LONG)
        async with self.session.post(
            f"{self.upstream}/chat/completions", json=sent, timeout=timeout
        ) as answer:
            payload = await answer.json(content_type=None)
            if answer.status != 200:
                print(f"  model: HTTP {answer.status}: {str(payload)[:200]}", file=sys.stderr)
                return web.json_response(payload, status=answer.status)
        usage = payload.get("usage") or {}
        record = {
            "kind": kind,
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "completion_tokens": usage.get("completion_tokens", 0),
            "seconds": round(time.monotonic() - begun, 1),
            "bound": sent.get("max_tokens"),
            "finish_reason": (payload.get("choices") or [{}])[0].get("finish_reason"),
            "response": payload,
        }
        self.fresh.add(record)
        print(
            f"  model: {kind}: {record['prompt_tokens']} prompt + "
            f"{record['completion_tokens']} output tokens, {record['seconds']} s",
            file=sys.stderr,
        )
        self.cache.mkdir(parents=True, exist_ok=True)
        scratch_file = path.with_suffix(".tmp")
        scratch_file.write_text(json.dumps(record))
        scratch_file.replace(path)
        return web.json_response(payload)


def completion(body: dict[str, Any], text: str) -> web.Response:
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
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
    )


# ----------------------------------------------------------------------------- the replay


class Clock:
    def __init__(self) -> None:
        self.at = datetime(2000, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.at


def settings_for(root: Path, base_url: str, window: int, *, replaying: bool) -> Settings:
    models = root / "models.json"
    windows = {REPLAY_MODEL: window, FAST_MODEL: window}
    models.write_text(json.dumps({"version": 1, "context_windows": windows}))
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=root / "workspace",
        telegram=TelegramSettings(owner_ids=(OWNER,)),
        llm=LLMSettings(
            base_url=base_url,
            api_key=SecretStr("bench"),
            model=REPLAY_MODEL,
            fast_model=FAST_MODEL,
            first_token_timeout=LONG,
            timeout=LONG,
            max_retries=0,
        ),
        memory=MemorySettings(
            consolidation_timeout=LONG, memory_window=50 if replaying else 0, receipts=False
        ),
        compaction=CompactionSettings(models_file=models, summary_timeout=LONG, enabled=replaying),
        rag=RagSettings(embedder="none"),
    )


@dataclass
class Written:
    """A line the model wrote: where, its text, the day (index) whose consolidation wrote it."""

    where: str
    text: str
    day: int


@dataclass
class Replayed:
    root: Path
    written: list[Written] = field(default_factory=list)


def consolidator_of(app: Any) -> Consolidator:
    return next(s for s in app.services if isinstance(s, Consolidator))


async def replay(
    conversation: Conversation, days: Sequence[Day], model: Model, root: Path, window: int
) -> Replayed:
    """The days through the bot; every line the model wrote, with the day that wrote it."""
    found = Replayed(root)
    seen: dict[str, set[str]] = {}
    clock = Clock()
    async with serving(model.handle) as base_url:
        app = build_app(
            settings_for(root, base_url, window, replaying=True), api_key="bench", now=clock
        )
        await app.start()
        consolidator = consolidator_of(app)
        try:
            for number, day in enumerate(days):
                begun = time.monotonic()
                clock.at = datetime.combine(day.session.day, datetime.min.time(), UTC)
                clock.at += timedelta(hours=9)
                messages = [*((e.said, e.reply) for e in day.exchanges), ("/new", "")]
                for index, (said, reply) in enumerate(messages):
                    clock.at += timedelta(minutes=2)
                    model.reply = reply
                    inbound = Inbound(
                        id=f"replay:{conversation.id}:{number}:{index}",
                        channel="bench",
                        chat_id=OWNER,
                        user_id=OWNER,
                        text=said,
                        received_at=clock.at,
                    )
                    await app.router.handle(inbound, Quiet())
                    await consolidator.wait_idle()
                    collect(root / "workspace", number, seen, found.written)
                print(
                    f"{conversation.id} day {number + 1}/{len(days)} ({day.session.day}, "
                    f"{len(day.exchanges)} exchanges): {time.monotonic() - begun:.0f} s; "
                    f"model calls so far {dict(model.kinds)}",
                    file=sys.stderr,
                )
        finally:
            await app.aclose()
    return found


def model_files(workspace: Path) -> Iterator[tuple[str, Path]]:
    memory = workspace / "memory"
    yield "MEMORY.md", memory / "MEMORY.md"
    for path in sorted((memory / "chats").rglob("*.md")) if (memory / "chats").is_dir() else ():
        if path.name.upper().startswith("MEMORY"):
            yield "chat memory", path


def collect(workspace: Path, day: int, seen: dict[str, set[str]], written: list[Written]) -> None:
    """New lines of MEMORY.md and chat memory (each version), and new model-written HISTORY
    entries, with the day that wrote them."""
    for where, path in model_files(workspace):
        if not path.is_file():
            continue
        known = seen.setdefault(f"{where}:{path}", set())
        for line in path.read_text(errors="replace").splitlines():
            fact = bare(line)
            if not fact or fact.startswith("#") or line in known:
                continue
            known.add(line)
            written.append(Written(where, fact, day))
    history = workspace / "memory" / "HISTORY.md"
    if history.is_file():
        known = seen.setdefault("HISTORY", set())
        for chunk in re.split(r"\n\s*\n", history.read_text(errors="replace")):
            entry = "\n".join(x for x in chunk.splitlines() if not x.startswith("#")).strip()
            if not entry or entry in known:
                continue
            known.add(entry)
            if RAW_FALLBACK not in entry:
                written.append(Written("HISTORY", entry, day))


def model_items(workspace: Path, written: Sequence[Written]) -> list[Written]:
    """The items made of the model's lines (semantic facts of MEMORY.md and consolidation):
    each with its line's day."""
    days = {fingerprint(w.text): w.day for w in written}
    found = []
    for path in sorted((workspace / "memory" / "items").rglob("*.jsonl")):
        for raw in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError, AttributeError):
                item = json.loads(raw)
                text = str(item.get("text") or "")
                day = days.get(fingerprint(text))
                if text and day is not None:
                    found.append(Written("items", text, day))
    return found


async def ask(
    conversation: Conversation,
    questions: Sequence[Question],
    model: Model,
    root: Path,
    window: int,
    when: Sequence[datetime],
) -> list[str]:
    """Each question as a message at its time (`when`, in order): the memory part of the
    request its turn builds. The model is asked nothing (a renewal's summary gets `{}`)."""
    shown = []
    clock = Clock()
    model = dataclasses.replace(model, upstream=None, kinds=Counter())
    async with serving(model.handle) as base_url:
        settings = settings_for(root, base_url, window, replaying=False)
        app = build_app(settings, api_key="bench", now=clock)
        await app.start()
        try:
            for number, (question, at) in enumerate(zip(questions, when, strict=True)):
                clock.at = at
                model.caught, model.reply = None, "OK."
                inbound = Inbound(
                    id=f"ask:{conversation.id}:{window}:{number}",
                    channel="bench",
                    chat_id=OWNER,
                    user_id=OWNER,
                    text=question.text,
                    received_at=clock.at,
                )
                await app.router.handle(inbound, Quiet())
                shown.append(memory_part(model.caught))
        finally:
            await app.aclose()
    return shown


ASKED = ("next day", "dated")  # asked the day after the last replayed day, or on its own date


def asked_at(question: Question, asked: str, after: datetime, number: int) -> datetime:
    """When a question is asked: the day after the replay (`next day`), or the day the dataset
    gives it (`dated`; never before the day after), a minute apart in their order."""
    at = after
    if asked == "dated" and question.asked is not None:
        at = max(
            after, datetime.combine(question.asked, datetime.min.time(), UTC) + timedelta(hours=12)
        )
    return at + timedelta(minutes=number)


def memory_part(body: dict[str, Any] | None) -> str:
    """What a request shows of memory: its system messages from the first `# Memory…`
    heading on (the persona and the rules before it are not memory)."""
    if body is None:
        return ""
    parts = []
    for message in body["messages"]:
        if message["role"] != "system":
            continue
        text = message.get("content") or ""
        starts = [text.find(h + "\n") for h in MEMORY_HEADINGS if text.find(h + "\n") >= 0]
        if starts:
            parts.append(text[min(starts) :])
    return "\n".join(parts)


# ----------------------------------------------------------------------------- scoring


@dataclass
class Scored:
    recall: list[float] = field(default_factory=list)
    coverage: list[float] = field(default_factory=list)


def holds(line_words: set[str], turn_words: list[str], turn_text: str, line: str) -> bool:
    unique = set(turn_words)
    if len(unique) <= 2:
        return bool(unique) and " ".join(turn_text.casefold().split()) in " ".join(
            line.casefold().split()
        )
    return len(unique & line_words) >= 0.6 * len(unique)


def score(
    shown: str,
    question: Question,
    answer: str,
    texts: dict[str, str],
    day_of_turn: dict[str, int],
    model_lines: dict[str, int],
    names: set[str],
) -> tuple[float, float]:
    lines = [line for line in shown.splitlines() if line.strip()]
    by_line = [(line, set(words(line))) for line in lines]
    held = 0
    for turn in question.evidence:
        text = texts[turn]
        turn_words = words(text)
        own = stems(text) - {n[:5] for n in names}
        for line, line_words in by_line:
            fact = shown_fact(line)
            day = model_lines.get(fingerprint(fact))
            if day is not None:
                says = stems(told(fact)) - {n[:5] for n in names}
                need = min(2, len(own), len(says))
                if need and day == day_of_turn[turn] and len(own & says) >= need:
                    break
            elif holds(line_words, turn_words, text, line):
                break
        else:
            continue
        held += 1
    recall = held / len(question.evidence)
    gold = set(words(answer))
    present = set(words(shown))
    coverage = len(gold & present) / len(gold) if gold else 0.0
    return recall, coverage


_CITE = re.compile(r"^\s*(?:[-*+•]\s+)?(?:\[[^\]]*\]\s*)+")


def shown_fact(line: str) -> str:
    """A shown line's fact: without its bullet and its citations (`[path#id] fact`)."""
    return bare(_CITE.sub("", line))


# ----------------------------------------------------------------------------- hygiene

JUNK_KINDS = (
    "prompt echo",
    "placeholder",
    "duplicate",
    "wrong person",
    "degenerate",
    "ungrounded",
)


def junk_of(
    line: Written,
    earlier: set[str],
    day_turns: Sequence[tuple[str, str]],
    user_names: set[str],
    names: set[str],
) -> str | None:
    """The line's junk kind (the first that applies, in `JUNK_KINDS` order), or None."""
    text = line.text
    folded = normal(text)
    if folded in PROMPT_ECHOES or any(p in folded for p in ECHO_PHRASES):
        return "prompt echo"
    if LABEL.search(text) or any(
        len(m.split()) >= 6 and m in folded for m in (normal(t) for _, t in day_turns)
    ):
        return "prompt echo"  # the conversation copied: a message's label or a whole message
    if PLACEHOLDERS.search(text.strip()):
        return "placeholder"
    key = f"{line.where}:{normal(text)}"
    if key in earlier:
        return "duplicate"
    earlier.add(key)
    said = words(text)
    if len(text) > 600 or (len(said) >= 12 and len(set(said)) < 0.4 * len(said)):
        return "degenerate"
    if re.search(r"(\b\w+\b)(?:\W+\1\b){3,}", text, re.IGNORECASE):
        return "degenerate"
    own = stems(told(text)) - {n[:5] for n in names}
    overlaps = [(len(own & stems(t)), who) for who, t in day_turns]
    best = max((n for n, _ in overlaps), default=0)
    need = min(2, (len(own) + 1) // 2)  # "User's hobby: playing games": one of its two words
    if best < need or not own:
        return "ungrounded"
    if line.where != "HISTORY" and about_user(text, user_names):
        by_user = max((n for n, who in overlaps if who == "user"), default=0)
        if by_user < need and by_user < best:
            return "wrong person"
    return None


def about_user(text: str, user_names: set[str]) -> bool:
    head = text.casefold().split()[:3]
    return any(w.strip(":,'s") in {"user", "user's", *user_names} for w in head)


# ----------------------------------------------------------------------------- the run


@dataclass
class ChatRun:
    conversation: Conversation
    days: list[Day]
    questions: list[Question]
    answers: dict[str, str]
    scores: dict[str, Scored] = field(default_factory=dict)  # "turns"/"model" @ window
    written: list[Written] = field(default_factory=list)
    junk: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)


def pick(dataset_path: Path, chats: int, seed: int, days: int) -> list[ChatRun]:
    dataset = load_dataset(dataset_path)
    ids = sorted(c.id for c in dataset.conversations)
    chosen = random.Random(seed).sample(ids, chats)
    runs = []
    for conversation in dataset.conversations:
        if conversation.id not in chosen:
            continue
        replayed = [day_of(s) for s in conversation.sessions[:days]]
        kept = {t for d in replayed for e in d.exchanges for t in e.turns}
        questions = sorted(
            (
                q
                for q in dataset.questions
                if q.conversation == conversation.id and q.evidence and set(q.evidence) <= kept
            ),
            key=lambda q: q.asked or date.min,
        )  # in the order they are asked, dated
        runs.append(ChatRun(conversation, replayed, questions, gold_answers(conversation.id)))
    return sorted(runs, key=lambda r: chosen.index(r.conversation.id))


async def run_chat(chat: ChatRun, model: Model, windows: Sequence[int], scratch_root: Path) -> None:
    conversation = chat.conversation
    texts = {t.id: t.text for t in conversation.turns}
    day_of_turn = {t.id: n for n, d in enumerate(chat.days) for t in d.session.turns}
    names = {w for _, name in conversation.names for w in words(name)}
    user_names = set(words(conversation.name_of("user") or ""))
    after = datetime.combine(chat.days[-1].session.day, datetime.min.time(), UTC)
    after += timedelta(days=1, hours=12)
    for variant, upstream in (("turns", None), ("model", model.upstream)):
        root = scratch_root / f"{conversation.id}-{variant}"
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        replaying = dataclasses.replace(model, upstream=upstream, kinds=Counter())
        replaying.fresh, replaying.cached = model.fresh, model.cached
        print(f"{conversation.id}: replaying {len(chat.days)} days ({variant})", file=sys.stderr)
        replayed = await replay(conversation, chat.days, replaying, root, windows[0])
        model_lines: dict[str, int] = {}
        if variant == "model":
            items = model_items(root / "workspace", replayed.written)
            chat.written = [*replayed.written, *items]
            model_lines = {fingerprint(w.text): w.day for w in chat.written}
            hygiene(chat, names, user_names)
        for window, asked in itertools.product(windows, ASKED):
            when = [asked_at(q, asked, after, n) for n, q in enumerate(chat.questions)]
            shown = await ask(conversation, chat.questions, replaying, root, window, when)
            scored = chat.scores.setdefault(f"{variant}@{window}@{asked}", Scored())
            for question, part in zip(chat.questions, shown, strict=True):
                answer = chat.answers.get(question.text, "")
                lines = model_lines
                recall, coverage = score(part, question, answer, texts, day_of_turn, lines, names)
                scored.recall.append(recall)
                scored.coverage.append(coverage)
        (scratch_root / f"{conversation.id}-{variant}-shown.txt").write_text(
            "\n\n=====\n\n".join(
                f"Q: {q.text}\n{p}" for q, p in zip(chat.questions, shown, strict=True)
            )
        )


def hygiene(chat: ChatRun, names: set[str], user_names: set[str]) -> None:
    earlier: set[str] = set()
    by_day = [[(t.speaker, t.text) for t in day.session.turns] for day in chat.days]
    for line in chat.written:
        kind = junk_of(line, earlier, by_day[line.day], user_names, names)
        chat.junk["lines"] += 1
        chat.junk[f"lines {line.where}"] += 1
        if kind:
            chat.junk[kind] += 1
            chat.examples.setdefault(kind, []).append(f"[{line.where}] {line.text[:140]}")


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def report(
    runs: Sequence[ChatRun], windows: Sequence[int], fresh: Cost, cached: Cost, seconds: float
) -> None:
    questions = sum(len(r.questions) for r in runs)
    for r in runs:
        exchanges = sum(len(d.exchanges) for d in r.days)
        print(
            f"chat {r.conversation.id}: {len(r.days)} days, {exchanges} exchanges, "
            f"{len(r.questions)} questions"
        )
    print(f"{questions} questions whose evidence lies in the replayed days")
    print(
        f"{'memory shown':<30}{'window':>8}{'asked':>10}{'evidence recall':>17}"
        f"{'answer coverage':>17}"
    )
    for variant, label in (("turns", "turns only"), ("model", "turns + model-written")):
        for window, asked in itertools.product(windows, ASKED):
            scored = [r.scores[f"{variant}@{window}@{asked}"] for r in runs]
            recall = mean([x for s in scored for x in s.recall])
            coverage = mean([x for s in scored for x in s.coverage])
            print(f"{label:<30}{window:>8,}{asked:>10}{recall:>17.3f}{coverage:>17.3f}")
    total: Counter[str] = Counter()
    for run in runs:
        total.update(run.junk)
    lines = total["lines"]
    wheres = ", ".join(
        f"{k.removeprefix('lines ')} {v}"
        for k, v in sorted(total.items())
        if k.startswith("lines ")
    )
    print(f"lines the model wrote: {lines} ({wheres})")
    print(f"{'junk':<16}{'lines':>7}{'share':>8}")
    for kind in JUNK_KINDS:
        share = total[kind] / lines if lines else 0.0
        print(f"{kind:<16}{total[kind]:>7}{share:>8.1%}")
    for run in runs:
        for kind in JUNK_KINDS:
            for example in run.examples.get(kind, [])[:3]:
                print(f"  {kind}: {example}")
    print(
        f"model cost: {fresh.calls} calls, {fresh.prompt:,} prompt + {fresh.output:,} output "
        f"tokens, {fresh.seconds:,.0f} s of model time; from the cache: {cached.calls} calls, "
        f"{cached.prompt:,} + {cached.output:,} tokens ({cached.seconds:,.0f} s when made)"
    )
    print(f"the whole run: {seconds:,.0f} s; {machine_line()}")


def skip(reason: str) -> int:
    print(f"real_memory: skipped: {reason}")
    return 0


async def main(options: argparse.Namespace) -> int:
    configure(fmt="console", level="ERROR")
    skip_sdk_transform()
    begun = time.monotonic()
    runs = pick(options.data, options.chats, options.seed, options.days)
    windows = options.windows
    print(machine_line(), flush=True)
    model = Model(options.base_url, options.upstream_model, options.cache, options.max_output)
    async with aiohttp.ClientSession() as session:
        model.session = session
        with tempfile.TemporaryDirectory(prefix="mnemo-real-memory-") as folder:
            scratch_root = Path(options.keep) if options.keep else Path(folder)
            for chat in runs:
                await run_chat(chat, model, windows, scratch_root)
    report(runs, windows, model.fresh, model.cached, time.monotonic() - begun)
    return 0


@contextlib.contextmanager
def llama_server(gguf: Path, ctx: int, threads: int) -> Iterator[str]:
    """llama.cpp's server from the xllamacpp wheel, as `make real-model-check` starts it."""
    sys.path.insert(0, str(REPOSITORY / "scripts"))
    from real_model_check import model_server  # type: ignore[import-not-found]

    log = Path(tempfile.mkdtemp(prefix="mnemo-real-memory-server-")) / "server.log"
    with model_server(gguf, ctx=ctx, threads=threads, log=log) as base_url:
        yield base_url


def cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, default=os.environ.get(MODEL_ENV) or None)
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint")
    parser.add_argument("--upstream-model", default="local", help="its model name (local)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--chats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--windows", type=int, nargs="+", default=[8192, 32768])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument(
        "--max-output", type=int, default=None, help="bound answers the bot leaves unbounded"
    )
    parser.add_argument("--keep", default=None, help="keep the workspaces in this folder")
    options = parser.parse_args(argv)
    if not options.data.is_file():
        return skip(f"no REALTALK data at {options.data} (python -m bot.eval.realtalk makes it)")
    if options.base_url is None:
        if options.gguf is None or not Path(options.gguf).is_file():
            return skip(f"no model: give --gguf MODEL.gguf, ${MODEL_ENV} or --base-url")
        try:
            import xllamacpp  # noqa: F401
        except ImportError:
            return skip("xllamacpp is not installed (make real-model-check installs it)")
        with llama_server(Path(options.gguf).resolve(), options.windows[0], options.threads) as url:
            options.base_url = url
            return asyncio.run(main(options))
    return asyncio.run(main(options))


if __name__ == "__main__":
    sys.exit(cli())
