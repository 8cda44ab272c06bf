"""A crash run: the bot as a process (`python -m bot run`, as `make run` starts it) against the
fake Bot API and model, bursts of messages from several chats, SIGKILL and SIGTERM at random
points, then a last start that answers what is left. `tests/test_crash.py` asserts on its
figures; `benchmarks/crash_run.py` prints them for larger runs.

What it counts, from outside the code (the fakes' records and the workspace's files):
- lost: a message never answered; duplicated: answered more than once, but for a reply sent in
  the last `IN_FLIGHT` seconds before a SIGKILL (in flight: the one window no journal closes,
  between Telegram taking a part and the bot's record of it; counted apart);
- recalled: model calls for a message whose answer was already in a session file when the
  bot was killed (it must be sent from there, not made again);
- extra calls: model calls beyond one per message (a kill during a call may cost one);
- broken files: a JSON or JSONL file in the workspace that does not parse;
- history: HISTORY.md and the monthly files holding different entries, or one entry twice;
- unnoted / noted twice: an answered message with no daily-note line, or more than one;
- out of order: in a chat, a reply to a message sent after a reply to a later message.

`together=True` is the default setting's way (a 0.5 s debounce: quick follow-ups answered in
one reply, "re: m00003 m00004", and noted in one line holding them all) in three places, a
private chat, a group and a forum topic (each message from one of two people there).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, bot_env, start_bot_process

ONE = r"(?:\w+: )?m\d{5}[a-z ]*"  # a message as the model reads it ("U2101: " in a group)
TEXT = re.compile(rf"^{ONE}(?:\n{ONE})*$")  # one message, or follow-ups answered together
WORDS = " about the shed roof and the tar paper it needs"  # `together`: each message's words
NUMBER = re.compile(r"m\d{5}")
REPLY = re.compile(r"^re: m\d{5}(?: m\d{5})*$")
NOTED = re.compile(r"\] User: (.*?) \| Assistant: ")
GROUP, TOPIC, THREAD = -100500, -100600, 7  # the group and the forum (its topic THREAD)
MENTION = "@mnemo_test_bot "  # the fake's bot: a group message must address it
NOTE_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
IN_FLIGHT = 0.05  # seconds before a SIGKILL in which a reply sent may be sent again
USERS = (OWNER, 2101, 2102, 2103, 2104, 2105, 2106, 2107, 2108, 2109, 2110, 2111, 2112, 2113)


@dataclass
class CrashFigures:
    messages: int
    chats: int
    kills: int  # SIGKILLs
    terms: int  # SIGTERMs
    lost: int = 0
    duplicated: int = 0
    in_flight: int = 0  # answered twice, the first sent just before a SIGKILL
    recalled: int = 0
    extra_calls: int = 0
    broken_files: list[str] = field(default_factory=list)
    history_problems: list[str] = field(default_factory=list)
    unnoted: int = 0  # answered, with no daily-note line
    noted_twice: int = 0  # answered, with more than one
    out_of_order: int = 0  # replies to a message sent after one to a later message, per chat
    term_exit_codes: list[int] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)  # a few lost or duplicated messages
    seconds: float = 0.0

    def line(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("term_exit_codes", "examples")}


@dataclass(frozen=True)
class Place:
    chat: int
    users: tuple[int, ...]
    kind: str = "private"
    thread: int | None = None
    words: str = ""  # after the message's number

    def push(self, telegram: FakeTelegram, rng: random.Random, text: str) -> None:
        user = rng.choice(self.users)
        text += self.words
        if self.kind == "private":
            telegram.push_text(self.chat, user, text)
            return
        telegram.push_text(
            self.chat,
            user,
            MENTION + text,
            chat_type="supergroup",
            first_name=f"U{user}",
            message_thread_id=self.thread,
        )


def places_for(users: tuple[int, ...], *, together: bool) -> list[Place]:
    """Each user's private chat; `together`: the owner's, a group and a forum topic."""
    if not together:
        return [Place(user, (user,)) for user in users]
    two = (users[0], users[1])
    return [
        Place(users[0], (users[0],), words=WORDS),
        Place(GROUP, two, "supergroup", words=WORDS),
        Place(TOPIC, two, "supergroup", THREAD, words=WORDS),
    ]


async def crash_run(
    tmp: Path,
    *,
    chats: int = 3,
    messages: int = 60,
    stops: int = 6,
    sigterm_every: int = 3,
    seed: int = 1,
    window: int = 12,
    together: bool = False,
) -> CrashFigures:
    """`stops` stops (every `sigterm_every`-th a SIGTERM, the rest SIGKILL) while `messages`
    messages from `chats` chats arrive in bursts; then a last run answers what is left."""
    rng = random.Random(seed)
    workspace, log_path = tmp / "ws", tmp / "bot.log"
    users = USERS[: max(chats, 2)]
    places = places_for(users[:chats] if not together else users, together=together)
    texts = [f"m{n:05d}" for n in range(messages)]
    figures = CrashFigures(messages, len(places), 0, 0)
    started = time.monotonic()
    async with FakeTelegram() as telegram, FakeOpenAI() as model:
        model.answer_all(lambda request: _answer(request, rng))
        env = bot_env(workspace, telegram, model) | {
            "BOT_TELEGRAM__ALLOWED_USER_IDS": json.dumps(list(users[1:])),
            "BOT_TELEGRAM__SHUTDOWN_GRACE": "3",
            "BOT_MEMORY__MEMORY_WINDOW": str(window),
            "BOT_MEMORY__KEEP_MESSAGES": "4",
            "BOT_LOG__LEVEL": "INFO",
        }
        if together:
            env["BOT_TELEGRAM__DEBOUNCE"] = "0.5"
        chat_ids = [place.chat for place in places]
        saved_calls: dict[str, int] = {}  # message → model calls when its answer was saved
        in_flight: set[str] = set()  # replies sent just before a SIGKILL
        pushed = 0
        for stop in range(1, stops + 1):
            process = await _started(env, tmp, log_path)
            try:
                burst = rng.randint(1, max(1, 2 * messages // stops))
                for text in texts[pushed : pushed + burst]:
                    rng.choice(places).push(telegram, rng, text)
                pushed = min(messages, pushed + burst)
                await asyncio.sleep(rng.uniform(0.2, 2.0) - IN_FLIGHT)
                before = _sent(telegram, chat_ids)
                await asyncio.sleep(IN_FLIGHT)
            finally:
                if stop % sigterm_every == 0:
                    process.send_signal(signal.SIGTERM)
                    figures.terms += 1
                    figures.term_exit_codes.append(await _exit(process, 30))
                else:
                    process.kill()
                    figures.kills += 1
                    await _exit(process, 30)
                    in_flight |= (_sent(telegram, chat_ids) - before).keys()
            calls = _calls(model)
            for text in _saved(workspace) - saved_calls.keys():
                saved_calls[text] = calls[text]
        for text in texts[pushed:]:
            rng.choice(places).push(telegram, rng, text)
        process = await _started(env, tmp, log_path)
        try:
            await _all_answered(telegram, chat_ids, texts, within=120)
            await asyncio.sleep(0.5)  # a duplicate would come now
        finally:
            process.send_signal(signal.SIGTERM)
            figures.term_exit_codes.append(await _exit(process, 30))
        _count(figures, _sent(telegram, chat_ids), texts, _calls(model), saved_calls, in_flight)
        figures.out_of_order = _out_of_order(telegram, chat_ids)
    figures.broken_files = _broken_files(workspace)
    figures.history_problems = _history_problems(workspace)
    noted = _noted(workspace)
    figures.unnoted = sum(1 for text in texts if noted[text] == 0)
    figures.noted_twice = sum(1 for text in texts if noted[text] > 1)
    figures.seconds = round(time.monotonic() - started, 1)
    return figures


def _answer(request: dict[str, Any], rng: random.Random) -> Reply:
    messages = request["messages"]
    last = messages[-1].get("content") if messages else None
    if isinstance(last, str) and TEXT.match(last):
        said = " ".join(NUMBER.findall(last))
        return Reply(f"re: {said}", delay=rng.uniform(0.02, 0.3))
    if "history_entry" in json.dumps(messages):
        entry = f"[2026-11-24 10:00] A consolidation ({rng.getrandbits(32):08x})."
        return Reply(json.dumps({"history_entry": entry, "memory_update": None}))
    return Reply("A short summary of the conversation.")


async def _started(env: dict[str, str], tmp: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """A new bot process, once it logged that it started (a poll still open from the process
    before it is no sign)."""
    starts = _starts(log_path)
    process = start_bot_process(env, tmp, log_path)
    for _ in range(600):
        if _starts(log_path) > starts or process.poll() is not None:
            return process
        await asyncio.sleep(0.05)
    return process


def _starts(log_path: Path) -> int:
    if not log_path.exists():
        return 0
    return log_path.read_text(encoding="utf-8", errors="replace").count('"telegram_started"')


async def _exit(process: subprocess.Popen[bytes], within: float) -> int:
    return await asyncio.to_thread(process.wait, within)


def _calls(model: FakeOpenAI) -> Counter[str]:
    asked: Counter[str] = Counter()
    for request in model.requests:
        last = request["messages"][-1].get("content") if request["messages"] else None
        if isinstance(last, str) and TEXT.match(last):
            asked.update(NUMBER.findall(last))
    return asked


def _saved(workspace: Path) -> set[str]:
    """Messages whose answer is in a session file (current or archived)."""
    saved: set[str] = set()
    for path in (workspace / "sessions").rglob("*.json"):
        try:
            messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
        except (OSError, ValueError, KeyError):
            continue
        for message in messages:
            content = message.get("content")
            if message.get("role") == "assistant" and isinstance(content, str):
                saved |= set(NUMBER.findall(content)) if REPLY.match(content) else set()
    return saved


async def _all_answered(
    telegram: FakeTelegram, chat_ids: list[int], texts: list[str], *, within: float
) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if set(texts) <= _sent(telegram, chat_ids).keys():
            return
        await asyncio.sleep(0.2)


def _replies(telegram: FakeTelegram, chat: int) -> list[list[str]]:
    """The chat's replies in sending order, each as the messages it answers."""
    sent = (m.text for m in telegram.sent_messages(chat))
    return [NUMBER.findall(text) for text in sent if REPLY.match(text)]


def _sent(telegram: FakeTelegram, chat_ids: list[int]) -> Counter[str]:
    """How many replies answered each message."""
    return Counter(
        text for chat in chat_ids for reply in _replies(telegram, chat) for text in reply
    )


def _out_of_order(telegram: FakeTelegram, chat_ids: list[int]) -> int:
    """Replies that answer a message older than one an earlier reply in the chat answered (a
    message's messages arrive in the order of their numbers)."""
    late = 0
    for chat in chat_ids:
        newest = ""
        for reply in _replies(telegram, chat):
            late += 1 if reply and min(reply) < newest else 0
            newest = max([newest, *reply])
    return late


def _count(
    figures: CrashFigures,
    sent: Counter[str],
    texts: list[str],
    calls: Counter[str],
    saved_calls: dict[str, int],
    in_flight: set[str],
) -> None:
    figures.lost = sum(1 for text in texts if sent[text] == 0)
    twice = [text for text in texts if sent[text] > 1]
    figures.in_flight = sum(1 for text in twice if text in in_flight)
    figures.duplicated = len(twice) - figures.in_flight
    odd = [f"{text}×{sent[text]}" for text in texts if sent[text] != 1]
    figures.examples = odd[:10]
    figures.recalled = sum(1 for text, then in saved_calls.items() if calls[text] > then)
    figures.extra_calls = sum(max(0, calls[text] - 1) for text in texts)


def _broken_files(workspace: Path) -> list[str]:
    broken: list[str] = []
    for path in sorted(workspace.rglob("*.json*")):
        if not path.is_file() or path.suffix not in (".json", ".jsonl"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        documents = text.splitlines() if path.suffix == ".jsonl" else [text]
        try:
            for document in documents:
                if document.strip():
                    json.loads(document)
        except ValueError:
            broken.append(str(path.relative_to(workspace)))
    return broken


def _noted(workspace: Path) -> Counter[str]:
    """How many daily-note lines each message has, in every scope's notes."""
    noted: Counter[str] = Counter()
    for path in (workspace / "memory").rglob("*.md"):
        if NOTE_FILE.match(path.name):
            text = path.read_text(encoding="utf-8", errors="replace")
            for found in NOTED.finditer(text):
                noted.update(set(NUMBER.findall(found[1])))
    return noted


def _history_problems(workspace: Path) -> list[str]:
    """HISTORY.md and the monthly files must hold the same entries, each once."""
    problems: list[str] = []
    for main in sorted((workspace / "memory").rglob("HISTORY.md")):
        entries = _entries(main)
        monthly: Counter[str] = Counter()
        for month in main.parent.glob("HISTORY-*.md"):
            monthly += _entries(month)
        where = main.parent.relative_to(workspace)
        if any(n > 1 for n in entries.values()):
            problems.append(f"{where}: an entry twice in HISTORY.md")
        if entries != monthly:
            problems.append(f"{where}: HISTORY.md and the monthly files differ")
    return problems


def _entries(path: Path) -> Counter[str]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return Counter(line for line in lines if line.startswith("["))
