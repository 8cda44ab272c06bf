"""Consolidation through the real pipeline: history and memory, background and one at a time,
timeouts and raw fallback, compression, the hand-edit race, crash safety, /new, groups."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.conversation.compaction import cut_point
from bot.llm.tokens import TokenCounter
from bot.memory.upkeep.consolidation import Consolidator
from bot.models import GLOBAL_SCOPE, ChatMessage, Role
from bot.settings import CompactionSettings, MemorySettings
from bot.storage.files import FileLocks
from bot.storage.jobs import JobStore, new_job
from tests.fakes.openai_api import Fail, FakeOpenAI, Hang, Reply, Respond, Step, ToolCalls
from tests.harness import FRIEND, OWNER, make_settings, models_file, started_app
from tests.talk import say as say_at
from tests.talk import session

NOW = datetime(2026, 11, 21, 10, 30, tzinfo=UTC)
GROUP = -100555
ROLE = "You are a memory consolidation agent."
COMPRESS = "compress: merge duplicates, drop stale or low-value facts, stay under"
MEMORY = "# Memory\n- Ann lives in Porto\n"
UPDATED = "# Memory\n- Ann lives in Porto\n- Ann plans a trip to Lisbon\n"
ENTRY = "[2026-11-21 10:30] Ann talked about a trip to Lisbon."
Json = dict[str, Any]
say = partial(say_at, at=NOW)  # every message arrives at NOW


async def talk(
    app: App, fake: FakeOpenAI, first: int, last: int, *then: Step, **where: Any
) -> None:
    """Exchanges m<first>..m<last>, each answered r<n>; `then` is scripted after the last."""
    for n in range(first, last + 1):
        fake.script(Reply(f"r{n}"), *(then if n == last else ()))
        assert await say(app, f"m{n}", **where) == [f"r{n}"]


def answer(
    entry: str | None = ENTRY, memory: str | None = None, removed: list[str] | None = None
) -> Reply:
    fields = {"history_entry": entry, "memory_update": memory, "removed": removed}
    return Reply(json.dumps({k: v for k, v in fields.items() if v is not None}))


def consolidations(fake: FakeOpenAI) -> list[str]:
    """The user parts of the consolidation requests the model received, in order."""
    return [
        r["messages"][-1]["content"]
        for r in fake.requests
        if r["messages"][0]["content"].startswith(ROLE)
    ]


def consolidator(app: App) -> Consolidator:
    return next(s for s in app.services if isinstance(s, Consolidator))


async def settle(app: App) -> None:
    await asyncio.wait_for(consolidator(app).wait_idle(), timeout=10)


def session_messages(workspace: Path, key: str = f"telegram:{OWNER}") -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in session(workspace, key)["messages"]]


def job_files(workspace: Path) -> list[Path]:
    return sorted((workspace / "state" / "consolidation").glob("*.json"))


@contextlib.asynccontextmanager
async def consolidating(
    workspace: Path, fake: FakeOpenAI, *, timezone: str = "UTC", **memory: Any
) -> AsyncIterator[App]:
    """The app with a small window: a 4th exchange (8 messages) consolidates the first 6."""
    limits = MemorySettings(**{"memory_window": 6, "keep_messages": 2, **memory})
    settings = make_settings(
        workspace, telegram=None, openai=fake, memory=limits, timezone=timezone
    )
    async with started_app(settings) as app:
        yield app


@pytest.fixture
async def app(workspace: Path, fake_openai: FakeOpenAI) -> AsyncIterator[App]:
    async with consolidating(workspace, fake_openai) as app:
        yield app


@pytest.fixture
def memory(workspace: Path) -> Path:
    folder = workspace / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "MEMORY.md").write_text(MEMORY)
    return folder


# ----------------------------------------------------------------------------- the main path


async def test_past_the_window_old_messages_become_history_and_memory(
    app: App, fake_openai: FakeOpenAI, workspace: Path, memory: Path
) -> None:
    await talk(app, fake_openai, 1, 3)
    assert consolidations(fake_openai) == []  # 6 messages: not past the window

    await talk(app, fake_openai, 4, 4, answer(ENTRY, UPDATED))
    await settle(app)

    [prompt] = consolidations(fake_openai)
    assert (
        f"## Current Long-term Memory\n{MEMORY.strip()}\n\n## Conversation to Process\n" in prompt
    )
    assert "\n[2026-11-21 10:30] USER: m1\n" in prompt
    assert strip_times(prompt) == [
        "USER: m1", "ASSISTANT: r1", "USER: m2", "ASSISTANT: r2", "USER: m3", "ASSISTANT: r3"
    ]  # fmt: skip
    assert COMPRESS not in prompt
    request = fake_openai.requests[-1]
    assert (request["model"], request["temperature"]) == ("fake-model", 0.3)
    heading = re.compile(
        r"## \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d <!-- consolidation \w+\.0 -->\n"
    )
    for name in ("HISTORY.md", f"HISTORY-{app.now():%Y-%m}.md"):
        text = (memory / name).read_text()
        assert heading.fullmatch(text.removesuffix(f"{ENTRY}\n\n")), name
    assert (memory / "MEMORY.md").read_text() == UPDATED
    assert session_messages(workspace) == [("user", "m4"), ("assistant", "r4")]
    assert job_files(workspace) == []


async def test_the_reply_never_waits_for_consolidation(
    app: App, fake_openai: FakeOpenAI, workspace: Path, memory: Path
) -> None:
    await talk(app, fake_openai, 1, 3)

    await talk(app, fake_openai, 4, 4, Hang(then=answer(ENTRY, UPDATED)))  # the reply arrives…

    await fake_openai.wait_until_hanging()  # …while the consolidation is still with the model
    assert not (memory / "HISTORY.md").exists()
    assert len(job_files(workspace)) == 1  # durable before the session was trimmed
    assert session_messages(workspace) == [("user", "m4"), ("assistant", "r4")]
    fake_openai.release()
    await settle(app)
    assert ENTRY in (memory / "HISTORY.md").read_text()
    assert job_files(workspace) == []


async def test_one_consolidation_at_a_time(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    owner_history = workspace / "memory" / "HISTORY.md"
    friend = workspace / "memory" / "chats" / f"telegram%3A{FRIEND}"
    first_done_when_second_asked: list[bool] = []

    def second(request: Json) -> Step:
        first_done_when_second_asked.append(owner_history.exists())
        return answer("[2026-11-21 10:30] The friend asked about bikes.")

    await talk(app, fake_openai, 1, 3)
    await talk(app, fake_openai, 4, 4, Hang(then=answer()))
    await fake_openai.wait_until_hanging()
    await talk(app, fake_openai, 1, 3, user=FRIEND)
    await talk(app, fake_openai, 4, 4, Respond(second), user=FRIEND)
    await asyncio.sleep(0.3)

    assert len(consolidations(fake_openai)) == 1
    assert fake_openai.hanging == 1
    fake_openai.release()
    await settle(app)
    assert first_done_when_second_asked == [True]
    assert len(consolidations(fake_openai)) == 2
    assert "bikes" in (friend / "HISTORY.md").read_text()
    assert "bikes" not in owner_history.read_text()


# ----------------------------------------------------------------------------- failures


async def test_a_timeout_leaves_a_raw_fallback_entry(
    fake_openai: FakeOpenAI, workspace: Path, memory: Path
) -> None:
    async with consolidating(
        workspace,
        fake_openai,
        consolidation_timeout=0.3,
        raw_fallback_messages=3,
        raw_fallback_chars=20,
    ) as app:
        await talk(app, fake_openai, 1, 2)
        fake_openai.script(Reply("r3"))
        await say(app, "m3 " + "long words " * 20)
        await talk(app, fake_openai, 4, 4, Hang())
        await settle(app)

    history = (memory / "HISTORY.md").read_text()
    entry = history.split("\n", 1)[1]
    lines = [re.sub(r"^\[[\d: -]+\] ", "", line) for line in entry.splitlines()]
    assert lines[0].startswith("[raw-fallback]")
    assert lines[1:4] == ["ASSISTANT: r2", "USER: m3 long words long…", "ASSISTANT: r3"]
    assert "m1" not in history
    assert (memory / "MEMORY.md").read_text() == MEMORY
    assert job_files(workspace) == []
    assert session_messages(workspace) == [("user", "m4"), ("assistant", "r4")]


@pytest.mark.parametrize(
    "step",
    [
        Reply("I'm sorry, I cannot produce JSON today. Ann talked about Lisbon."),
        Fail(500, "the model is down", type="server_error"),
        Fail(400, "bad request"),
    ],
    ids=["prose", "server-error", "rejected"],
)
async def test_an_unusable_answer_leaves_memory_untouched_and_a_raw_entry(
    app: App, fake_openai: FakeOpenAI, workspace: Path, memory: Path, step: Step
) -> None:
    await talk(app, fake_openai, 1, 3)

    await talk(app, fake_openai, 4, 4, step)
    await settle(app)

    assert (memory / "MEMORY.md").read_text() == MEMORY
    history = (memory / "HISTORY.md").read_text()
    assert "[raw-fallback]" in history
    assert "USER: m1" in history and "ASSISTANT: r3" in history
    assert job_files(workspace) == []


async def test_a_missing_field_keeps_its_file_as_it_was(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    await talk(app, fake_openai, 1, 3)
    await talk(app, fake_openai, 4, 4, answer(entry=None, memory=UPDATED))
    await settle(app)
    assert (memory / "MEMORY.md").read_text() == UPDATED
    assert "[raw-fallback]" in (memory / "HISTORY.md").read_text()

    await talk(
        app, fake_openai, 5, 7, answer(entry="[2026-11-21 10:31] More about Lisbon.", memory=None)
    )
    await settle(app)
    assert (memory / "MEMORY.md").read_text() == UPDATED
    assert "More about Lisbon." in (memory / "HISTORY.md").read_text()


@pytest.mark.parametrize("size", [99, 150])
async def test_compression_is_asked_for_when_memory_passes_its_limit(
    fake_openai: FakeOpenAI, workspace: Path, memory: Path, size: int
) -> None:
    big = "# Memory\n" + "- a fact\n" * ((size - 9) // 9)
    big += "x" * (size - len(big))
    (memory / "MEMORY.md").write_text(big)
    async with consolidating(workspace, fake_openai, max_memory_size=100) as app:
        await talk(app, fake_openai, 1, 3)
        await talk(app, fake_openai, 4, 4, answer(memory="# Memory\n- a fact\n"))
        await settle(app)

    [prompt] = consolidations(fake_openai)
    assert big.strip() in prompt
    assert (f"{COMPRESS} 100 bytes" in prompt) == (size > 100)
    assert (memory / "MEMORY.md").read_text() == "# Memory\n- a fact\n"


# ----------------------------------------------------------------------------- hand edits


async def test_a_hand_edit_during_consolidation_survives_and_the_work_is_redone(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    edited = MEMORY + "- Ann's cat is called Miso\n"
    redone = edited + "- Ann plans a trip to Lisbon\n"
    await talk(app, fake_openai, 1, 3)
    await talk(
        app,
        fake_openai,
        4,
        4,
        Hang(then=answer("[2026-11-21 10:30] first try", UPDATED)),
        answer("[2026-11-21 10:30] second try", redone),
    )
    await fake_openai.wait_until_hanging()

    (memory / "MEMORY.md").write_text(edited)
    fake_openai.release()
    await settle(app)

    first, second = consolidations(fake_openai)
    assert "Miso" not in first
    assert f"## Current Long-term Memory\n{edited.strip()}\n" in second
    assert (memory / "MEMORY.md").read_text() == redone
    history = (memory / "HISTORY.md").read_text()
    assert "second try" in history and "first try" not in history


async def test_a_second_hand_edit_during_the_redo_is_merged_never_overwritten(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    edited = MEMORY + "- Ann's cat is called Miso\n"
    edited_again = "# Memory\n- Ann's cat is called Miso\n- Ann's dog is called Rex\n"
    await talk(app, fake_openai, 1, 3)
    await talk(
        app,
        fake_openai,
        4,
        4,
        Hang(then=answer(memory=UPDATED)),
        Hang(then=answer(memory=edited + "- Ann plans a trip to Lisbon\n")),
    )
    await fake_openai.wait_until_hanging()
    (memory / "MEMORY.md").write_text(edited)
    fake_openai.release()
    await fake_openai.wait_for_requests(6)
    await fake_openai.wait_until_hanging()

    (memory / "MEMORY.md").write_text(edited_again)  # Porto removed by hand, Rex added
    fake_openai.release()
    await settle(app)

    assert (memory / "MEMORY.md").read_text() == (
        edited_again + "\n## Consolidated\n- Ann plans a trip to Lisbon\n"
    )
    assert ENTRY in (memory / "HISTORY.md").read_text()


async def test_when_the_redo_fails_the_first_answer_is_merged(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    edited = "# Memory\n- Ann's cat is called Miso\n"  # Porto removed by hand
    await talk(app, fake_openai, 1, 3)
    await talk(
        app,
        fake_openai,
        4,
        4,
        Hang(then=answer(memory=UPDATED)),
        Fail(500, "down", type="server_error"),
    )
    await fake_openai.wait_until_hanging()
    (memory / "MEMORY.md").write_text(edited)
    fake_openai.release()
    await settle(app)

    assert (memory / "MEMORY.md").read_text() == (
        edited + "\n## Consolidated\n- Ann plans a trip to Lisbon\n"
    )
    assert ENTRY in (memory / "HISTORY.md").read_text()


# ----------------------------------------------------------------------------- crash safety


async def test_a_job_left_on_disk_is_done_at_the_next_start(
    fake_openai: FakeOpenAI, workspace: Path, memory: Path
) -> None:
    messages = (
        ChatMessage(role="user", content="I moved to Lisbon", at=NOW),
        ChatMessage(role="assistant", content="Congratulations!", at=NOW),
    )
    job = new_job(GLOBAL_SCOPE, f"telegram:{OWNER}", messages, at=NOW)
    await JobStore(workspace / "state" / "consolidation", FileLocks()).save(job)
    moved = answer(memory="# Memory\n- Ann lives in Lisbon\n", removed=["- Ann lives in Porto"])
    fake_openai.script(moved)

    async with consolidating(workspace, fake_openai) as app:
        await settle(app)

    [prompt] = consolidations(fake_openai)
    assert "[2026-11-21 10:30] USER: I moved to Lisbon" in prompt
    assert "[2026-11-21 10:30] ASSISTANT: Congratulations!" in prompt
    # a replacement is not a drop: Porto, named removed, stays as history, marked superseded
    assert re.fullmatch(
        r"# Memory\n- Ann lives in Lisbon\n- Ann lives in Porto _\(was, until [\d-]{10}\)_\n",
        (memory / "MEMORY.md").read_text(),
    )
    assert ENTRY in (memory / "HISTORY.md").read_text()
    assert job_files(workspace) == []


async def test_two_processes_sharing_the_folder_run_a_job_left_on_disk_once(
    fake_openai: FakeOpenAI, workspace: Path, memory: Path
) -> None:
    """Replicas given one workspace folder: both find the job at their start; the second waits
    for the first's run of that scope, then finds the job done."""
    messages = (ChatMessage(role="user", content="m1", at=NOW),)
    await JobStore(workspace / "state" / "consolidation", FileLocks()).save(
        new_job(GLOBAL_SCOPE, f"telegram:{OWNER}", messages, at=NOW)
    )
    fake_openai.script(Hang(then=answer(ENTRY, UPDATED)))

    async with consolidating(workspace, fake_openai) as one:
        await fake_openai.wait_until_hanging()
        async with consolidating(workspace, fake_openai) as two:
            await asyncio.sleep(0.3)  # the second's worker has the job and waits for the scope
            fake_openai.release()
            await settle(one)
            await settle(two)

    assert len(consolidations(fake_openai)) == 1
    assert (memory / "HISTORY.md").read_text().count(ENTRY) == 1
    assert (memory / "MEMORY.md").read_text() == UPDATED
    assert job_files(workspace) == []


async def test_times_in_the_prompt_are_in_the_users_time_zone(
    fake_openai: FakeOpenAI, workspace: Path
) -> None:
    messages = (ChatMessage(role="user", content="good night", at=NOW),)  # 10:30 UTC
    await JobStore(workspace / "state" / "consolidation", FileLocks()).save(
        new_job(GLOBAL_SCOPE, f"telegram:{OWNER}", messages, at=NOW)
    )
    fake_openai.script(Reply("no JSON, so a raw entry"))

    async with consolidating(workspace, fake_openai, timezone="Asia/Tokyo") as app:
        await settle(app)

    [prompt] = consolidations(fake_openai)
    assert "[2026-11-21 19:30] USER: good night" in prompt
    history = (workspace / "memory" / "HISTORY.md").read_text()
    assert "[2026-11-21 19:30] USER: good night" in history
    assert re.search(r"^## \S+\+09:00 <!-- consolidation \w+\.0 -->$", history, re.MULTILINE)


async def test_a_consolidation_cut_short_by_shutdown_resumes_after_restart(
    fake_openai: FakeOpenAI, workspace: Path, memory: Path
) -> None:
    async with consolidating(workspace, fake_openai) as app:
        await talk(app, fake_openai, 1, 3)
        await talk(app, fake_openai, 4, 4, Hang())
        await fake_openai.wait_until_hanging()
    assert len(job_files(workspace)) == 1
    assert not (memory / "HISTORY.md").exists()
    assert session_messages(workspace) == [("user", "m4"), ("assistant", "r4")]

    fake_openai.script(answer(ENTRY, UPDATED))
    async with consolidating(workspace, fake_openai) as app:
        await settle(app)

    first, again = consolidations(fake_openai)
    assert first == again
    assert (memory / "MEMORY.md").read_text() == UPDATED
    assert (memory / "HISTORY.md").read_text().count(ENTRY) == 1
    assert job_files(workspace) == []


@pytest.mark.parametrize("cut", ["job-not-removed", "monthly-not-written"])
async def test_a_job_run_again_after_a_crash_writes_each_history_file_once(
    fake_openai: FakeOpenAI, workspace: Path, memory: Path, cut: str
) -> None:
    """A crash after the entry was written but before the job was removed (or, worse, between
    HISTORY.md and the monthly file): the job runs again at the next start, asks the model
    nothing, and each history file holds the entry once, the same text in both."""
    messages = (ChatMessage(role="user", content="m1", at=NOW),)
    job = new_job(GLOBAL_SCOPE, f"telegram:{OWNER}", messages, at=NOW)
    jobs = JobStore(workspace / "state" / "consolidation", FileLocks())
    await jobs.save(job)
    fake_openai.script(answer(ENTRY, UPDATED))
    async with consolidating(workspace, fake_openai) as app:
        await settle(app)
    monthly = memory / "HISTORY-2026-11.md"
    written = (memory / "HISTORY.md").read_text()
    assert written == monthly.read_text() and written.count(ENTRY) == 1
    await jobs.save(job)  # the crash: the job file is back
    if cut == "monthly-not-written":
        monthly.write_text("")

    async with consolidating(workspace, fake_openai) as app:
        await settle(app)

    assert len(consolidations(fake_openai)) == 1
    assert (memory / "HISTORY.md").read_text() == written
    assert monthly.read_text() == written
    assert job_files(workspace) == []


# ----------------------------------------------------------------------------- /new


async def test_new_waits_for_the_consolidation_before_it_replies(
    app: App, fake_openai: FakeOpenAI, workspace: Path, memory: Path
) -> None:
    working = workspace / "memory" / "working" / f"telegram%3A{OWNER}.md"
    working.parent.mkdir()
    working.write_text("Drafting the Lisbon itinerary.\n")
    await talk(app, fake_openai, 1, 1)
    fake_openai.script(answer(ENTRY, UPDATED))

    assert await say(app, "/new") == [
        "Started a new conversation. I saved what mattered from the last one (2 messages) to "
        "memory."
    ]

    assert ENTRY in (memory / "HISTORY.md").read_text()  # no waiting needed
    assert (memory / "MEMORY.md").read_text() == UPDATED
    [prompt] = consolidations(fake_openai)
    assert "USER: m1" in prompt and "ASSISTANT: r1" in prompt
    assert session_messages(workspace) == []
    assert len(list((workspace / "sessions" / "archive").glob("*.json"))) == 1
    assert not working.exists()
    assert job_files(workspace) == []


async def test_new_with_a_hanging_model_replies_within_the_timeout(
    fake_openai: FakeOpenAI, workspace: Path, memory: Path
) -> None:
    async with consolidating(workspace, fake_openai, consolidation_timeout=0.3) as app:
        await talk(app, fake_openai, 1, 1)
        fake_openai.script(Hang())
        loop = asyncio.get_running_loop()
        started = loop.time()

        replies = await say(app, "/new")

        elapsed = loop.time() - started
    assert replies == [
        "Started a new conversation. The model could not summarise the last one (2 messages), "
        "so I kept it in history as a raw note."
    ]
    assert 0.3 <= elapsed < 2
    history = (memory / "HISTORY.md").read_text()
    assert "[raw-fallback]" in history and "USER: m1" in history
    assert (memory / "MEMORY.md").read_text() == MEMORY
    assert session_messages(workspace) == []


async def test_new_says_so_when_the_model_answers_prose(
    app: App, fake_openai: FakeOpenAI, workspace: Path, memory: Path
) -> None:
    await talk(app, fake_openai, 1, 1)
    fake_openai.script(Reply("Sure, the user said m1 and I said r1."))

    assert await say(app, "/new") == [
        "Started a new conversation. The model could not summarise the last one (2 messages), "
        "so I kept it in history as a raw note."
    ]

    assert "[raw-fallback]" in (memory / "HISTORY.md").read_text()
    assert (memory / "MEMORY.md").read_text() == MEMORY
    assert session_messages(workspace) == []


async def test_new_on_an_empty_conversation_asks_no_model(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    assert await say(app, "/new") == ["Started a new conversation. Your memory files are kept."]

    assert fake_openai.calls == 0
    assert not (memory / "HISTORY.md").exists()


# ----------------------------------------------------------------------------- scope and shape


async def test_a_group_consolidates_into_its_own_memory_only(
    app: App, fake_openai: FakeOpenAI, workspace: Path, memory: Path
) -> None:
    (memory / "MEMORY.md").write_text("# Memory\n- The owner's PIN is 4321\n")
    group = {"chat": GROUP, "chat_type": "group"}
    await talk(app, fake_openai, 1, 3, **group)
    picnic = answer("[2026-11-21 10:30] The group planned a picnic.", "- picnic")

    await talk(app, fake_openai, 4, 4, picnic, **group)
    await settle(app)

    [prompt] = consolidations(fake_openai)
    assert "4321" not in prompt
    assert "## Current Long-term Memory\n(empty)\n" in prompt
    folder = memory / "chats" / f"telegram%3A{GROUP}"
    assert "picnic" in (folder / "HISTORY.md").read_text()
    assert (folder / "MEMORY.md").read_text() == "- picnic\n"
    assert not (memory / "HISTORY.md").exists()
    assert (memory / "MEMORY.md").read_text() == "# Memory\n- The owner's PIN is 4321\n"
    assert session_messages(workspace, f"telegram:{GROUP}") == [
        ("user", f"user {OWNER}: m4"),  # a group's message carries who said it
        ("assistant", "r4"),
    ]


async def test_a_window_of_zero_trims_to_the_last_messages_and_never_consolidates(
    fake_openai: FakeOpenAI, workspace: Path, memory: Path
) -> None:
    async with consolidating(workspace, fake_openai, memory_window=0, keep_messages=10) as app:
        await talk(app, fake_openai, 1, 6)
        kept = session_messages(workspace)
        assert [content for _, content in kept] == [f"{x}{n}" for n in range(2, 7) for x in "mr"]

        assert await say(app, "/new") == ["Started a new conversation. Your memory files are kept."]

    assert fake_openai.calls == 6
    assert consolidations(fake_openai) == []
    assert not (memory / "HISTORY.md").exists()
    assert job_files(workspace) == []
    archived = "".join(p.read_text() for p in (workspace / "sessions" / "archive").glob("*"))
    assert all(f'"m{n}"' in archived and f'"r{n}"' in archived for n in range(1, 7))


def strip_times(prompt: str) -> list[str]:
    after = prompt.split("## Conversation to Process\n")[1]
    conversation = after.split("\n\n## Your Task\n")[0].splitlines()  # the task comes last
    return [re.sub(r"^\[[\d: -]+\] ", "", line) for line in conversation]


async def test_the_prompt_names_tools_and_leaves_tool_results_out(
    app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(ToolCalls([("current_time", {})]), Reply("It is 10:30."))
    assert await say(app, "what time is it?") == ["It is 10:30."]

    await talk(app, fake_openai, 2, 3, answer())  # 8 messages: the first 6 go
    await settle(app)

    [prompt] = consolidations(fake_openai)
    assert strip_times(prompt) == [
        "USER: what time is it?",
        "ASSISTANT [tools: current_time]:",
        "ASSISTANT: It is 10:30.",
        "USER: m2",
        "ASSISTANT: r2",
    ]


async def test_the_kept_part_starts_at_a_user_message_with_tool_results_by_their_call(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    await talk(app, fake_openai, 1, 2)
    fake_openai.script(ToolCalls([("current_time", {})]), Reply("Still 10:30."), answer())

    assert await say(app, "and now?") == ["Still 10:30."]  # 8 messages; 2 would split a call
    await settle(app)

    [prompt] = consolidations(fake_openai)
    assert strip_times(prompt) == ["USER: m1", "ASSISTANT: r1", "USER: m2", "ASSISTANT: r2"]
    kept = session_messages(workspace)
    assert [role for role, _ in kept] == ["user", "assistant", "tool", "assistant"]
    assert kept[0] == ("user", "and now?")


def test_the_cut_leaves_at_least_keep_messages_starting_at_a_user_message() -> None:
    def chat(roles: str) -> list[ChatMessage]:
        names: dict[str, Role] = {"u": "user", "a": "assistant", "t": "tool", "s": "system"}
        return [ChatMessage(role=names[r], content=r) for r in roles]

    assert cut_point(chat("uauaua"), keep=2) == 4
    assert cut_point(chat("uauaatata"), keep=2) == 2  # back to the user message
    assert cut_point(chat("suauaua"), keep=3) == 3
    assert cut_point(chat("uatatatata"), keep=2) == 0  # one long tool loop: no cut
    assert cut_point(chat("ua"), keep=10) == 0


async def test_the_part_consolidation_cuts_is_archived_whole(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    await talk(app, fake_openai, 1, 4, answer())
    await settle(app)

    [archived] = (workspace / "sessions" / "archive").glob(f"telegram_{OWNER}-*.json")
    kept = json.loads(archived.read_text())
    assert [m["content"] for m in kept["messages"]] == ["m1", "r1", "m2", "r2", "m3", "r3"]


async def test_a_line_the_update_drops_without_saying_so_is_kept(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    (memory / "MEMORY.md").write_text(
        "# Family\n- Ann is my sister\n- Tom is my son\n\n# Home\n- Porto\n"
    )
    update = "# Family\n- Ann is my sister\n- Ann moved to Lisbon\n\n# Home\n- Lisbon\n"
    await talk(app, fake_openai, 1, 4, answer(memory=update, removed=["- Porto"]))
    await settle(app)

    assert (memory / "MEMORY.md").read_text() == (
        "# Family\n- Ann is my sister\n- Ann moved to Lisbon\n- Tom is my son\n\n# Home\n- Lisbon\n"
    )


async def test_fenced_and_list_shaped_answers_are_stored_clean(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    fenced = json.dumps(
        {
            "history_entry": ["[2026-02-07 10:00] Talked about Porto.", "Ann visits in May."],
            "memory_update": "```markdown\n# About me\n- Lives in Porto\n```",
        }
    )
    await talk(app, fake_openai, 1, 4, Reply(f"```json\n{fenced}\n```\nDone!"))
    await settle(app)

    assert (memory / "MEMORY.md").read_text() == (
        "# About me\n- Lives in Porto\n\n# Memory\n- Ann lives in Porto\n"  # the old line kept
    )
    history = (memory / "HISTORY.md").read_text()
    assert "Talked about Porto.\nAnn visits in May." in history
    assert "```" not in history and "[raw-fallback]" not in history


async def test_the_leftovers_of_a_broken_answer_are_no_facts(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    # a small model's JSON cut short: what is left of memory_update is punctuation
    await talk(app, fake_openai, 1, 4, answer(memory="{\n- }\n- Tom plays chess\n],\n"))
    await settle(app)

    text = (memory / "MEMORY.md").read_text()
    assert "- Tom plays chess" in text
    assert not [line for line in text.splitlines() if line.strip(" -") in ("{", "}")]


async def test_the_request_ends_with_the_task_and_bounds_the_answer(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    await talk(app, fake_openai, 1, 4, answer(ENTRY, UPDATED))
    await settle(app)

    [request] = [r for r in fake_openai.requests if r["messages"][0]["content"].startswith(ROLE)]
    asked = request["messages"][-1]["content"]
    # what changes (the memory, the conversation) comes before the task, the task last
    assert asked.index("## Conversation to Process") < asked.index("## Your Task")
    assert asked.rstrip().endswith("list it in removed.")
    assert "names whom it is about" not in asked  # the rule is asked for in the model's words
    assert "starting with whom it is about" in asked and "the kind of thing it is" in asked
    assert request["max_tokens"] > 0  # a model that loops is stopped there


async def test_lines_that_are_no_facts_never_reach_memory(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    # what Qwen2.5 1.5B wrote on a real chat: the conversation copied, the assistant's words as
    # the user's, and one fact twice in two bullet forms
    fake_openai.script(Reply("I dabble in art and drawing on commissions."))
    assert await say(app, "I like running and cycling a lot, even in the rain.") != []
    update = (
        f"{MEMORY}- User's hobby: running and cycling\n* User's hobby: running and cycling.\n"
        "- [2026-11-21 10:30] USER: m1\n- USER: m2\n"
        "- I dabble in art and drawing on commissions\n- User's hobby: drawing\n"
        "- Ann's hobby: drawing\n"
    )
    await talk(app, fake_openai, 1, 3, answer(ENTRY, update))
    await settle(app)

    assert (memory / "MEMORY.md").read_text() == (
        f"{MEMORY}- User's hobby: running and cycling\n- Ann's hobby: drawing\n"
    )


async def test_a_hand_written_line_is_never_taken_for_a_copy(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    # the rules judge only what the model adds: a line a person wrote stays, whatever its form
    (memory / "MEMORY.md").write_text("- USER: prefers short answers\n- User's hobby: chess\n")
    kept = "- USER: prefers short answers\n- User's hobby: chess\n- User's hobby: chess\n"
    await talk(app, fake_openai, 1, 4, answer(ENTRY, kept + "- Ann lives in Porto\n"))
    await settle(app)

    assert (memory / "MEMORY.md").read_text() == (
        "- USER: prefers short answers\n- User's hobby: chess\n- User's hobby: chess\n"
        "- Ann lives in Porto\n"
    )


async def test_a_history_line_that_quotes_a_line_of_a_message_is_no_summary(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    fake_openai.script(Reply("Nice."))
    assert await say(app, "Hi there\nI like to bake for fun, cheese tarts mostly") != []
    copied = "At 10:30 Ann wrote I like to bake for fun, cheese tarts mostly"  # no label
    await talk(app, fake_openai, 1, 3, answer(f"{copied}\nAnn talked about baking.", UPDATED))
    await settle(app)

    history = (memory / "HISTORY.md").read_text()
    assert "cheese tarts" not in history
    assert "Ann talked about baking." in history


async def test_an_answer_cut_short_keeps_the_field_it_finished(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    # the list came whole, then the entry ran on until the answer's bound cut it
    cut = '{"memory_update": ["- Ann lives in Porto", "- Ann plans a trip to Lisbon"],\n'
    cut += '"history_entry": "2026-11-21 10:30 - USER: m1 - ASSISTANT: r1 - USER: m1 - ASS'
    await talk(app, fake_openai, 1, 4, Reply(cut))
    await settle(app)

    assert (
        memory / "MEMORY.md"
    ).read_text() == "- Ann lives in Porto\n- Ann plans a trip to Lisbon\n"
    assert "[raw-fallback]" in (memory / "HISTORY.md").read_text()


async def test_a_history_entry_that_copies_the_conversation_is_no_summary(
    app: App, fake_openai: FakeOpenAI, memory: Path
) -> None:
    copied = "2026-11-21 10:30 - User: m1 - ASSISTANT: r1 - User: m2"
    await talk(app, fake_openai, 1, 4, answer(copied, UPDATED))
    await settle(app)

    history = (memory / "HISTORY.md").read_text()
    assert "User: m1 - ASSISTANT" not in history
    assert "[raw-fallback]" in history  # the last messages, marked, not passed off as a summary
    assert (memory / "MEMORY.md").read_text() == UPDATED  # the facts are kept


# ----------------------------------------------------------------------------- within the window


def model_answers(request: dict[str, Any]) -> Reply:
    """A consolidation answer for a conversation, a compressed half for a part of memory."""
    system, user = (m["content"] for m in request["messages"][:2])
    if system.startswith("You compress"):
        part = user.split("\n", 1)[1].splitlines()
        return Reply(json.dumps({"memory_update": "\n".join(part[: len(part) // 2])}))
    return Reply(
        json.dumps({"history_entry": "[2026-02-07 10:00] More talk.", "memory_update": None})
    )


async def test_no_request_exceeds_the_models_window_and_nothing_is_lost(
    fake_openai: FakeOpenAI, workspace: Path, memory: Path, tmp_path: Path
) -> None:
    window = 2000  # the fast model's, which consolidates; the main model's is the default
    big = "# Facts\n" + "".join(
        f"- fact number {n}: the quick brown fox jumps\n" for n in range(150)
    )
    (memory / "MEMORY.md").write_text(big)
    fake_openai.answer_all(model_answers)
    windows = models_file(tmp_path, window=window, model="fake-fast")
    document = json.loads(windows.read_text())
    windows.write_text(json.dumps({**document, "default_context_window": 32768}))
    compaction = CompactionSettings(models_file=windows)
    settings = make_settings(
        workspace,
        telegram=None,
        openai=fake_openai,
        fast_model="fake-fast",
        memory=MemorySettings(memory_window=6, keep_messages=2),
        compaction=compaction,
    )
    async with started_app(settings) as app:
        for n in range(1, 5):
            fake_openai.script(Reply(f"r{n}"))
            await say(app, f"m{n} " + "long words here " * 120)
        await settle(app)

    counter = TokenCounter()
    upkeep = (ROLE, "You compress")
    asked = [r for r in fake_openai.requests if r["messages"][0]["content"].startswith(upkeep)]
    sizes = [sum(counter.count(m["content"] or "") for m in r["messages"]) for r in asked]
    assert max(sizes) <= window
    consolidations_asked = consolidations(fake_openai)
    assert len(consolidations_asked) >= 2  # the conversation went in parts
    assert any(r["messages"][0]["content"].startswith("You compress") for r in asked)
    assert len((memory / "MEMORY.md").read_text()) < len(big)
    history = (memory / "HISTORY.md").read_text()
    assert history.count("More talk.") == len(consolidations_asked)
