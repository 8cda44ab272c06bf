"""The reminder store, the scheduler's two writes and a stop between them, DST rules, and bad
input: what a person wrote by hand is never lost."""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.cli import reminders as reminders_cli
from bot.models import GLOBAL_SCOPE, MemoryScope
from bot.reminders.model import Reminder, RuleError
from bot.reminders.scheduler import Scheduler, scheduled_inbound
from bot.reminders.store import ReminderStore, StoreError
from bot.reminders.when import read_when
from bot.settings import Settings
from bot.storage.files import FileLocks
from bot.storage.inbox import Entry, Inbox
from bot.storage.workspace import Workspace
from tests.clock import Clock
from tests.reminding import a_reminder

LISBON = ZoneInfo("Europe/Lisbon")
NOW = datetime(2026, 3, 28, 6, 0, tzinfo=UTC)  # Lisbon springs forward on the 29th at 01:00


def item(rule_text: str, *, item_id: str = "r1", at: datetime = NOW) -> Reminder:
    return a_reminder(at, item_id=item_id, when=rule_text, zone="Europe/Lisbon")


@pytest.fixture
def store(tmp_path: Path) -> ReminderStore:
    workspace = Workspace(tmp_path)
    workspace.ensure()
    return ReminderStore(workspace, FileLocks(workspace.locks_dir))


def test_a_daily_rule_keeps_its_local_hour_over_the_spring_change() -> None:
    daily = item("0 9 * * *")
    first = daily.next_at
    assert first is not None
    second = daily.advanced(first).next_at
    assert second is not None
    assert (first.hour, second.hour) == (9, 8)  # in UTC: 09:00 local on both days
    assert daily.local(first) == "Sat 2026-03-28 09:00 (Europe/Lisbon)"
    assert daily.local(second) == "Sun 2026-03-29 09:00 (Europe/Lisbon)"


def test_times_it_cannot_read_or_that_passed_are_refused_in_words() -> None:
    with pytest.raises(RuleError, match="cannot read 'next blue moon'"):
        read_when("next blue moon", NOW, LISBON)
    with pytest.raises(RuleError, match="has passed already"):
        read_when("2026-03-01 09:00", NOW, LISBON)
    with pytest.raises(RuleError, match="not a cron expression"):
        read_when("99 9 * * *", NOW, LISBON)


async def test_lines_written_by_hand_that_cannot_be_read_are_kept(
    store: ReminderStore,
) -> None:
    path = store.path(GLOBAL_SCOPE)
    odd = json.dumps({"id": "mine", "text": "a note of my own"})
    path.write_text(f"{odd}\n{{ my half-finished edit\n")
    await store.add(GLOBAL_SCOPE, item("in 5 minutes"))

    lines = path.read_text().splitlines()
    assert lines[1:] == [odd, "{ my half-finished edit"]
    assert json.loads(lines[0])["version"] == 1
    assert [i.id for i in await store.items(GLOBAL_SCOPE)] == ["r1"]


async def test_a_reminder_written_by_hand_without_a_version_is_read(
    store: ReminderStore,
) -> None:
    path = store.path(GLOBAL_SCOPE)
    await store.add(GLOBAL_SCOPE, item("in 5 minutes"))
    mine = json.loads(path.read_text())
    del mine["version"]
    path.write_text(json.dumps(mine) + "\n" + json.dumps({**mine, "version": 2}) + "\n")

    assert [i.id for i in await store.items(GLOBAL_SCOPE)] == ["r1"]  # not the newer one's


async def test_a_file_that_is_not_text_is_never_written_over(store: ReminderStore) -> None:
    path = store.path(GLOBAL_SCOPE)
    path.write_bytes(b"\xff\xfe binary")
    with pytest.raises(StoreError, match="fix or move it"):
        await store.add(GLOBAL_SCOPE, item("in 5 minutes"))
    assert path.read_bytes() == b"\xff\xfe binary"
    assert await store.items(GLOBAL_SCOPE) == []


async def test_a_stop_between_journaling_and_storing_the_next_time_sends_it_once(
    store: ReminderStore, tmp_path: Path
) -> None:
    """The state a kill leaves after the journal write: the entry journaled, the item still due.
    The next start moves the item on before any channel runs; the entry is sent by the replay."""
    inbox = Inbox(tmp_path / "state" / "inbox")
    daily = await store.add(GLOBAL_SCOPE, item("0 9 * * *"))
    due = daily.next_at
    assert due is not None
    clock = Clock(due + timedelta(seconds=1))
    queued: list[Entry] = []
    await inbox.accept_answered(scheduled_inbound(daily, due), "⏰ water the plants")

    again = Scheduler(store, inbox, {"telegram": queued.append}, now=clock)
    assert await again.reconcile() == 1
    assert await again.tick() == 0
    [stored] = await store.items(GLOBAL_SCOPE)
    assert stored.next_at == daily.advanced(due).next_at
    assert len(await inbox.pending()) == 1 and queued == []
    inbox.close()


async def test_the_shell_lists_every_chats_items_with_their_next_time(
    store: ReminderStore, tmp_path: Path
) -> None:
    await store.add(GLOBAL_SCOPE, item("0 9 * * *", item_id="r1"))
    group = MemoryScope(chat_key="telegram:-100555")
    await store.add(group, replace(item("in 5 minutes", item_id="r2"), chat="telegram:-100555"))
    settings = Settings(_env_file=None, workspace=tmp_path)  # type: ignore[call-arg]
    printed: list[str] = []

    args = argparse.Namespace(reminders_command="list")
    assert await asyncio.to_thread(reminders_cli.run, settings, args, printed.append) == 0

    assert len(printed) == 2
    assert printed[0].startswith("telegram:-100555  [r2] Sat 2026-03-28 06:05 (Europe/Lisbon)")
    assert "[r1] Sat 2026-03-28 09:00 (Europe/Lisbon), every '0 9 * * *'" in printed[1]
    assert printed[1].endswith("(memory/reminders.jsonl)")
