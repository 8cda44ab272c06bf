"""`/reminders` and `/timezone`, as the chat sees them.

/reminders                    this chat's items with their next time (an owner, in private:
                              every chat's)
/reminders cancel ID          cancel one
/reminders move ID WHEN       give it a new time (`bot.reminders.when`)
/timezone [Europe/Lisbon]     the zone your times are read in; with a name, set it
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, replace
from datetime import datetime

from bot.models import Inbound, MemoryScope
from bot.reminders.model import Reminder, RuleError
from bot.reminders.store import ReminderStore, StoreError
from bot.reminders.when import FORMATS, read_when
from bot.reminders.zones import Zones, known_zone
from bot.turn.access import AccessPolicy
from bot.turn.commands.handler import Progress

USAGE = (
    "Usage: /reminders — this chat's reminders; /reminders cancel ID; /reminders move ID WHEN "
    f"(WHEN: {FORMATS})."
)
NONE = "No reminders here. Ask me in words, e.g. “remind me on Friday at 9 to call the bank”."


def unreadable(exc: StoreError) -> str:
    """What a person is told when the reminders file does not read (here and on the page)."""
    return f"I could not read the reminders file: {exc}"


@dataclass(eq=False)
class ReminderCommands:
    store: ReminderStore
    zones: Zones
    access: AccessPolicy
    _: KW_ONLY
    now: Callable[[], datetime]
    changed: Callable[[], None] = lambda: None

    async def reminders(self, inbound: Inbound, args: str) -> str:
        action, _, rest = args.partition(" ")
        try:
            if not action:
                return await self._list(inbound)
            if action == "cancel" and rest.strip():
                return await self._cancel(inbound, rest.strip())
            if action == "move" and len(rest.split()) >= 2:
                item_id, _, when = rest.strip().partition(" ")
                return await self._move(inbound, item_id, when)
        except StoreError as exc:
            return unreadable(exc)
        return USAGE

    async def timezone(self, inbound: Inbound, args: str) -> str:
        if not args.strip():
            zone = await self.zones.of(inbound.user_id)
            return f"Your times are read in {zone}. /timezone Europe/Lisbon changes it."
        if known_zone(args) is None:
            return f"I don't know the time zone {args.strip()!r}; use a name like Europe/Lisbon."
        try:
            await self.zones.set(inbound.user_id, args.strip())
        except ValueError as exc:
            return f"I could not save it: {exc}"
        return f"Done: your times are read in {args.strip()} from now on."

    async def _list(self, inbound: Inbound) -> str:
        everyone = inbound.is_private and self.access.is_owner(inbound.user_id)
        found = await self._visible(inbound, everyone=everyone)
        if not found:
            return NONE
        found.sort(key=lambda pair: (pair[1].chat, pair[1].next_at or self.now()))
        lines: list[str] = []
        for _, item in found:
            if everyone and (not lines or not lines[-1].startswith(f"{item.chat}:")):
                lines.append(f"{item.chat}:")
            lines.append(("  " if everyone else "") + item.line())
        return "\n".join(lines)

    async def _cancel(self, inbound: Inbound, item_id: str) -> str:
        found = await self._one(inbound, item_id)
        if found is None:
            return f"There is no reminder {item_id} here. /reminders lists them."
        removed = await self.store.remove(found[0], item_id)
        self.changed()
        return f"Cancelled: {removed.text}" if removed else f"{item_id} was already gone."

    async def _move(self, inbound: Inbound, item_id: str, when: str) -> str:
        found = await self._one(inbound, item_id)
        if found is None:
            return f"There is no reminder {item_id} here. /reminders lists them."
        scope, item = found
        now = self.now()
        try:
            rule = read_when(when, now, item.tz, asked=inbound.received_at)
        except RuleError as exc:
            return f"{exc}."
        moved = replace(item, rule=rule).advanced(now)
        await self.store.replace(scope, moved)
        self.changed()
        when_text = item.local(moved.next_at) if moved.next_at else "never again"
        return f"Moved [{item.id}] to {when_text}: {item.text}"

    async def _one(self, inbound: Inbound, item_id: str) -> tuple[MemoryScope, Reminder] | None:
        everyone = inbound.is_private and self.access.is_owner(inbound.user_id)
        found = await self._visible(inbound, everyone=everyone)
        return next(((s, i) for s, i in found if i.id == item_id), None)

    async def _visible(
        self, inbound: Inbound, *, everyone: bool
    ) -> list[tuple[MemoryScope, Reminder]]:
        """This chat's items; an owner in private sees every chat's."""
        if everyone:
            return await self.store.everything()
        scope = self.access.scope_for(inbound)
        items = await self.store.items(scope)
        return [(scope, item) for item in items if item.chat == inbound.session_key]


@dataclass(eq=False)
class RemindersCommand:
    """/reminders, as the chat commands' `Handler`."""

    names = ("reminders",)
    slow = False

    commands: ReminderCommands

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        return await self.commands.reminders(inbound, args)


@dataclass(eq=False)
class TimezoneCommand:
    """/timezone, as the chat commands' `Handler`."""

    names = ("timezone",)
    slow = False

    commands: ReminderCommands

    async def answer(self, inbound: Inbound, args: str, progress: Progress) -> str:
        return await self.commands.timezone(inbound, args)
