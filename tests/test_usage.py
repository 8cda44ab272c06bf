"""What the model spends: /usage and `python -m bot usage` against the fake model's own token
counts, the price table, and the daily caps (a stop, told to the owner in one line)."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.cli import spending
from bot.models import Usage
from bot.settings import UsageSettings
from bot.storage.files import FileLocks
from bot.usage import Prices, UsageLedger
from bot.usage.ledger import Spent
from bot.usage.report import summary
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import FRIEND, OWNER, make_settings, running_bot, started_app
from tests.talk import say

FIGURES = re.compile(r"([\d,]+) in \(([\d,]+) cached(?:, \d+%)?\) · ([\d,]+) out · ([\d,]+) calls?")
CONSOLIDATED = json.dumps({"history_entry": "[2026-11-27 10:00] Ann talked."})


def figures(line: str) -> tuple[int, int, int, int]:
    """(in, cached, out, calls) of a report line."""
    found = FIGURES.search(line)
    assert found is not None, line
    tokens_in, cached, tokens_out, calls = (int(n.replace(",", "")) for n in found.groups())
    return tokens_in, cached, tokens_out, calls


def expected(usages: list[dict[str, Any]]) -> tuple[int, int, int, int]:
    """(in, cached, out, calls) as the fake model sent them."""
    return (
        sum(u["prompt_tokens"] for u in usages),
        sum(u.get("prompt_tokens_details", {}).get("cached_tokens", 0) for u in usages),
        sum(u["completion_tokens"] for u in usages),
        len(usages),
    )


async def test_usage_shows_the_providers_own_token_counts_per_kind(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=None, openai=fake_openai)
    async with started_app(settings) as app:
        fake_openai.script(
            Reply("Hello Ann", prompt_tokens=1200, cached_tokens=1024),
            Reply("Lisbon is lovely", prompt_tokens=1500, cached_tokens=1200),
            Reply(CONSOLIDATED, prompt_tokens=900),
        )
        await say(app, "hi, I am Ann")
        await say(app, "tell me about Lisbon")
        await say(app, "/new")
        [report] = await say(app, "/usage")
        [friend] = await say(app, "/usage", user=FRIEND)
    lines = report.splitlines()
    chats = [u for u in fake_openai.usages if "prompt_tokens" in u]
    assert figures(lines[0]) == expected(chats) == (3600, 2224, figures(lines[0])[2], 3)
    reply = next(line for line in lines if line.startswith("  reply:"))
    assert figures(reply) == expected(chats[:2])
    consolidation = next(line for line in lines if line.startswith("  consolidation:"))
    assert figures(consolidation) == expected(chats[2:])
    assert lines[0].startswith(f"Today ({app.now().date().isoformat()}): ")
    assert f"telegram:{OWNER}:" in report  # the owner, in private, sees every chat
    assert "No price known for fake-model: tokens only." in report
    assert friend == "No model calls recorded in this chat this month."


async def test_the_command_line_shows_the_same_figures(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(tmp_path / "ws", telegram=None, openai=fake_openai)
    async with started_app(settings) as app:
        fake_openai.script(Reply("Hello", prompt_tokens=700, cached_tokens=512))
        await say(app, "hi")
    printed: list[str] = []
    assert spending.run(settings, argparse.Namespace(chat=None), out=printed.append) == 0
    [text] = printed
    assert figures(text.splitlines()[0]) == expected(fake_openai.usages)
    assert "By chat, this month:" in text


def test_known_models_are_priced_and_the_cached_share_costs_less() -> None:
    prices = Prices.load(Path("config/prices.json"))
    line = Spent("2026-11-27", "telegram:1", "reply", "gpt-4o-mini-2024-07-18", 1_000_000, 0, 0, 1)
    cached = Spent("2026-11-27", "telegram:1", "reply", "gpt-4o-mini", 1_000_000, 0, 1_000_000, 1)
    assert summary([line], prices).endswith("$0.1500")
    assert summary([cached], prices).endswith("$0.0750")
    assert "$" not in summary([Spent("d", "c", "reply", "my-local-model", 5, 5, 0, 1)], prices)


async def test_the_ledger_keeps_this_month_and_the_last_only(tmp_path: Path) -> None:
    days = [datetime(2026, m, d, 12, tzinfo=UTC) for m, d in ((9, 30), (10, 31), (11, 27))]
    clock = iter(days)
    ledger = UsageLedger(tmp_path / "usage.json", FileLocks(), now=lambda: next(clock))
    for _ in days:
        await ledger.record("telegram:1", "reply", "m", Usage(10, 2))
    assert sorted({s.day for s in ledger.lines()}) == ["2026-10-31", "2026-11-27"]


async def test_the_ledger_reads_what_another_process_wrote_and_leaves_a_read_alone(
    tmp_path: Path,
) -> None:
    now = datetime(2026, 11, 27, 12, tzinfo=UTC)
    path = tmp_path / "usage.json"
    ledger = UsageLedger(path, FileLocks(), now=lambda: now)
    await ledger.record("telegram:1", "reply", "m", Usage(10, 2))
    held = ledger.read()
    other = UsageLedger(path, FileLocks(), now=lambda: now)  # another process, say
    await other.record("telegram:1", "reply", "m", Usage(5, 1))

    assert [(s.tokens_in, s.tokens_out, s.calls) for s in ledger.lines()] == [(15, 3, 2)]
    assert held["days"]["2026-11-27"]["telegram:1"]["reply"]["m"]["calls"] == 1


async def test_a_burst_of_records_from_two_processes_counts_every_call(tmp_path: Path) -> None:
    now = datetime(2026, 11, 27, 12, tzinfo=UTC)
    path = tmp_path / "usage.json"
    ours, theirs = (UsageLedger(path, FileLocks(tmp_path / "locks"), now=lambda: now) for _ in "ab")

    await asyncio.gather(
        *(ours.record(f"telegram:{n % 4}", "reply", "m", Usage(10, 2)) for n in range(40)),
        *(theirs.record("telegram:9", "flush", "m", Usage(1, 1)) for _ in range(10)),
    )

    assert sum(s.calls for s in UsageLedger(path, FileLocks(), now=lambda: now).lines()) == 50
    assert ours.tokens(now.date(), kinds=("reply",)) == 40 * 12


async def test_a_record_that_could_not_be_written_is_written_with_the_next(tmp_path: Path) -> None:
    now = datetime(2026, 11, 27, 12, tzinfo=UTC)
    path = tmp_path / "usage.json"
    ledger = UsageLedger(path, FileLocks(tmp_path / "locks"), now=lambda: now)
    path.mkdir()  # not a file: the write fails
    with pytest.raises(OSError):
        await ledger.record("telegram:1", "reply", "m", Usage(10, 2))
    path.rmdir()

    await ledger.record("telegram:1", "reply", "m", Usage(5, 1))

    assert [(s.tokens_in, s.calls) for s in ledger.lines()] == [(15, 2)]


async def test_a_background_cap_stops_it_with_one_line_to_the_owner(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(
        tmp_path / "ws",
        telegram=fake_telegram,
        openai=fake_openai,
        usage=UsageSettings(background_daily_tokens=1000),
    )
    async with running_bot(settings, fake_telegram):
        fake_openai.script(
            Reply("hi", prompt_tokens=300),
            Reply(CONSOLIDATED, prompt_tokens=1200),  # the first /new: over the cap after it
            Reply("hello again", prompt_tokens=300),
        )
        fake_telegram.push_text(FRIEND, FRIEND, "hi")
        await fake_telegram.wait_for_messages(FRIEND, 1)
        fake_telegram.push_text(FRIEND, FRIEND, "/new")
        [told] = await fake_telegram.wait_for_messages(OWNER, 1)
        await fake_telegram.wait_for_messages(FRIEND, 2)
        fake_telegram.push_text(FRIEND, FRIEND, "hello")
        await fake_telegram.wait_for_messages(FRIEND, 3)
        fake_telegram.push_text(FRIEND, FRIEND, "/new")
        answers = await fake_telegram.wait_for_messages(FRIEND, 4)
    assert told.text.startswith("Background work reached today's cap of 1,000 tokens")
    assert len(fake_telegram.sent_messages(OWNER)) == 1  # one line, however often it stops
    assert fake_openai.calls == 3  # the second /new did not call the model
    assert "could not summarise" in answers[-1].text  # kept as a raw note instead


async def test_a_chats_cap_stops_its_replies_but_not_the_owners(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    settings = make_settings(
        tmp_path / "ws",
        telegram=None,
        openai=fake_openai,
        usage=UsageSettings(chat_daily_tokens=500),
    )
    async with started_app(settings) as app:
        fake_openai.script(Reply("one", prompt_tokens=600), Reply("owner's", prompt_tokens=900))
        assert await say(app, "hi", user=FRIEND) == ["one"]
        [stopped] = await say(app, "and again?", user=FRIEND)
        assert await say(app, "hi", user=OWNER) == ["owner's"]
    assert stopped == (
        "This chat has used its model budget for today (500 tokens); I can answer again tomorrow."
    )
    assert fake_openai.calls == 2
