"""`remind`: the model schedules, lists, changes and cancels the chat's reminders and tasks.

Times are read in the asking person's zone (`Zones`), in the one format `bot.reminders.when`
reads; the answer gives the resolved local date and time, for the model to confirm. A turn
that was not started by a person (a scheduled task) may not schedule anything: a task never
makes more of itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, replace
from datetime import datetime
from typing import Any

from bot.errors import ToolError
from bot.models import ToolSpec
from bot.reminders.model import Reminder, Rule, RuleError
from bot.reminders.store import ReminderStore, new_id
from bot.reminders.when import FORMATS, read_when
from bot.reminders.zones import Zones
from bot.tools import arguments
from bot.tools.registry import ToolContext

NAME = "remind"
MAX_TEXT = 500
MAX_ITEMS_PER_CHAT = 50


@dataclass(eq=False)
class RemindTool:
    spec = ToolSpec(
        name=NAME,
        description=(
            "Schedule, list, change or cancel this chat's reminders. action 'add' needs `text` "
            f"and `when` ({FORMATS}; read in the user's time zone). With task=true the text "
            "is an instruction you will carry out yourself at that time (e.g. 'summarise my "
            "week'), not a message. on_time_only=true: skip it if it cannot be sent on time. "
            "'change' takes `id` and a new `text` and/or `when`; 'cancel' takes `id`. Tell "
            "the user the date and time the answer gives."
        ),
        parameters={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["add", "list", "change", "cancel"]},
                "text": {"type": "string"},
                "when": {"type": "string"},
                "id": {"type": "string"},
                "task": {"type": "boolean"},
                "on_time_only": {"type": "boolean"},
            },
            "required": ["action"],
            "additionalProperties": False,
        },
    )

    store: ReminderStore
    zones: Zones
    _: KW_ONLY
    now: Callable[[], datetime]
    changed: Callable[[], None] = lambda: None  # the scheduler's `wake`

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        arguments.only(args, self.spec.parameters["properties"])  # type: ignore[arg-type]
        action = arguments.choice(
            args, "action", options=("add", "list", "change", "cancel"), default="list"
        )
        if action == "list":
            items = await self.store.items(ctx.scope)
            mine = [i.line() for i in items if i.chat == ctx.session_key]
            return "\n".join(mine) or "No reminders in this chat."
        if ctx.inbound is None or ctx.inbound.kind != "message":
            raise ToolError("a scheduled task cannot schedule or change reminders")
        if action == "add":
            return await self._add(args, ctx)
        item_id = arguments.text(args, "id", max_chars=20)
        if action == "cancel":
            removed = await self.store.remove(ctx.scope, item_id)
            if removed is None:
                raise ToolError(f"no reminder {item_id!r} in this chat (action 'list' shows them)")
            return f"Cancelled [{removed.id}]: {removed.text}"
        return await self._change(args, ctx, item_id)

    async def _add(self, args: dict[str, Any], ctx: ToolContext) -> str:
        inbound = ctx.inbound
        assert inbound is not None
        text = arguments.text(args, "text", max_chars=MAX_TEXT)
        zone = await self.zones.of(inbound.user_id)
        if len(await self.store.items(ctx.scope)) >= MAX_ITEMS_PER_CHAT:
            raise ToolError(f"this chat has {MAX_ITEMS_PER_CHAT} items already; cancel some")
        now = self.now()
        item = Reminder(
            id=new_id(),
            chat=inbound.session_key,
            channel=inbound.channel,
            chat_id=inbound.chat_id,
            chat_type=inbound.chat_type,
            user_id=inbound.user_id,
            zone=zone,
            text=text,
            rule=_rule(args, now, zone, asked=inbound.received_at),
            next_at=None,
            created_at=now,
            kind="task" if args.get("task") is True else "reminder",
            thread_id=inbound.thread_id,
            message_id=inbound.message_id,
            on_time_only=args.get("on_time_only") is True,
        ).advanced(now)
        confirmed = _confirmed(item)
        await self.store.add(ctx.scope, item)
        self.changed()
        return f"Scheduled {confirmed}"

    async def _change(self, args: dict[str, Any], ctx: ToolContext, item_id: str) -> str:
        text = arguments.optional_text(args, "text", max_chars=MAX_TEXT)
        found = [i for i in await self.store.items(ctx.scope) if i.id == item_id]
        if not found or found[0].chat != ctx.session_key:
            raise ToolError(f"no reminder {item_id!r} in this chat (action 'list' shows them)")
        item, now = found[0], self.now()
        if args.get("when") is not None:
            asked = ctx.inbound.received_at if ctx.inbound else None
            item = replace(item, rule=_rule(args, now, item.zone, asked=asked)).advanced(now)
        item = replace(item, text=text or item.text)
        confirmed = _confirmed(item)
        await self.store.replace(ctx.scope, item)
        self.changed()
        return f"Changed {confirmed}"


def _rule(args: dict[str, Any], now: datetime, zone: str, *, asked: datetime | None) -> Rule:
    when = arguments.text(args, "when", max_chars=100)
    try:
        return read_when(when, now, Reminder.zone_info(zone), asked=asked)
    except RuleError as exc:
        raise ToolError(str(exc)) from None


def _confirmed(item: Reminder) -> str:
    if item.next_at is None:
        raise ToolError("that time has no occurrence left")
    return f"[{item.id}] for {item.local(item.next_at)}, {item.rule.describe()}: {item.text}"
