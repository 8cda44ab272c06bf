"""`Scheduler`: each due item becomes an inbox entry of its own kind, handed to its channel's
queue, so it is delivered through the outbound ledger like a reply, once.

For an item due at T:
    journal the entry (id "<kind>:<item id>:<T>"; a reminder's with its text as the reply, in
    one write) ──▶ the item's next occurrence stored ──▶ the entry queued in its channel.
A stop after the journal write but before the store's leaves the entry in the journal: at the
next start, before any channel runs, `reconcile` moves such items past T (the entry itself is
answered by its channel's replay). A stop before the journal write leaves the item due: it is
journaled at the next start. Either way it is neither lost nor sent twice.

An item found due more than `late_after` after T (the bot was down) is sent marked late
("this was due at 09:00"), or dropped when it was made "only on time"; a recurring item that
missed several occurrences is sent once, and moves to its first occurrence after now. Items are
journaled only for a channel that is running (`Router.outlets`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

import structlog

from bot.background import OwnedTask
from bot.errors import StoreAway
from bot.models import Inbound, MemoryScope
from bot.reminders.model import Reminder
from bot.reminders.store import ReminderStore
from bot.settings import ReminderSettings
from bot.storage.inbox import Entry, Journal

log = structlog.get_logger(__name__)
LATE_AFTER = timedelta(minutes=2)
POLL_SECONDS = 1.0
SCHEDULED_KINDS = ("reminder", "task")


class Scheduler:
    def __init__(
        self,
        store: ReminderStore,
        inbox: Journal,
        outlets: Mapping[str, Callable[[Entry], None]],
        *,
        now: Callable[[], datetime],
        poll: float = POLL_SECONDS,
        late_after: timedelta = LATE_AFTER,
    ) -> None:
        self.store = store
        self.inbox = inbox
        self.outlets = outlets
        self.now = now
        self.poll = poll
        self.late_after = late_after
        self._wake = asyncio.Event()
        self._ticking = asyncio.Lock()  # one look at a time: an item is journaled once
        self._task = OwnedTask("reminders")
        self._firing: asyncio.Future[int] | None = None  # the item being journaled

    @classmethod
    def from_settings(
        cls,
        config: ReminderSettings,
        store: ReminderStore,
        inbox: Journal,
        outlets: Mapping[str, Callable[[Entry], None]],
        now: Callable[[], datetime],
    ) -> Scheduler:
        late_after = timedelta(minutes=config.late_minutes)
        return cls(store, inbox, outlets, now=now, poll=config.poll_seconds, late_after=late_after)

    async def start(self) -> None:
        await self.reconcile()
        self._task.start(self._loop())

    async def stop(self) -> None:
        """Stop looking; an item being journaled is finished first (shielded)."""
        await self._task.stop()
        if self._firing is not None:
            await asyncio.wait([self._firing])

    def wake(self) -> None:
        """Look now (an item was added or changed, or the clock moved)."""
        self._wake.set()

    async def reconcile(self) -> int:
        """Move past their occurrence the items whose entry is in the journal but whose next
        time was not stored (a stop came between); how many."""
        moved = 0
        for entry in await self.inbox.pending():
            if entry.inbound.kind not in SCHEDULED_KINDS:
                continue
            try:
                _, item_id, due_text = entry.inbound.id.split(":", 2)
                due = datetime.fromisoformat(due_text)
            except ValueError:  # not an item's occurrence (a notice to the owner)
                continue
            found = await self.store.find(item_id)
            if found is not None and found[1].next_at is not None and found[1].next_at <= due:
                await self._advance(found[0], found[1], past=due)
                moved += 1
        if moved:
            log.info("reminders_reconciled", moved=moved)
        return moved

    async def tick(self) -> int:
        """Journal and queue every due item whose channel runs; how many were journaled."""
        async with self._ticking:
            return await self._tick(self.now())

    async def _tick(self, now: datetime) -> int:
        fired = 0
        for scope, item in await self.store.everything():
            if item.next_at is None or item.next_at > now or item.channel not in self.outlets:
                continue
            self._firing = asyncio.ensure_future(self._fire(scope, item, now))
            fired += await asyncio.shield(self._firing)  # a stop never cuts between the writes
        return fired

    async def _loop(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except StoreAway as exc:  # handled: the next tick fires what is due
                log.warning("reminders_tick_waits", reason=str(exc), handled="the next tick")
            except Exception:
                log.exception("reminders_tick_failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll):
                    await self._wake.wait()
            self._wake.clear()

    async def _fire(self, scope: MemoryScope, item: Reminder, now: datetime) -> int:
        due = item.next_at
        assert due is not None
        late = now - due > self.late_after
        if late and item.on_time_only:
            log.info("reminder_dropped_late", item=item.id, due=due.isoformat())
            await self._advance(scope, item, past=now)
            return 0
        inbound = scheduled_inbound(item, due)
        if item.kind == "reminder":
            entry = await self.inbox.accept_answered(inbound, reminder_text(item, due, late=late))
        else:
            entry = await self.inbox.accept(inbound)
        await self._advance(scope, item, past=max(now, due))
        log.info("reminder_due", item=item.id, kind=item.kind, late=late, new=entry is not None)
        outlet = self.outlets.get(item.channel)
        if entry is not None and outlet is not None:
            outlet(entry)
        return int(entry is not None)

    async def _advance(self, scope: MemoryScope, item: Reminder, *, past: datetime) -> None:
        """The item's next occurrence after `past`, stored; a done one-off is removed. Only
        when the file still has it due as read (a person may have changed it meanwhile)."""

        def advance(items: list[Reminder]) -> list[Reminder]:
            kept: list[Reminder] = []
            for stored in items:
                if stored.id == item.id and stored.next_at == item.next_at:
                    stored = stored.advanced(past)
                    if stored.next_at is None:
                        continue
                kept.append(stored)
            return kept

        await self.store.change(scope, advance)


def scheduled_inbound(item: Reminder, due: datetime) -> Inbound:
    """The journal entry's message: the item's chat, threaded to the message that asked."""
    return Inbound(
        id=f"{item.kind}:{item.id}:{due.isoformat()}",
        channel=item.channel,
        chat_id=item.chat_id,
        user_id=item.user_id,
        text=item.text,
        received_at=due,
        chat_type=item.chat_type,  # type: ignore[arg-type]
        thread_id=item.thread_id,
        message_id=item.message_id,
        kind=item.kind,
    )


def reminder_text(item: Reminder, due: datetime, *, late: bool) -> str:
    """What a reminder says: its text, and when it was due if it comes late."""
    text = f"⏰ {item.text}"
    if not late:
        return text
    local = due.astimezone(item.tz)
    return f"{text}\n(this was due at {local:%H:%M} on {local:%a %d %b})"
