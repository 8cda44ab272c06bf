"""Composition of what a message meets: the door, the commands, the turn runner and the router
in front of them. Part of the composition root (see `bot.app`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from bot.app.core import Core
from bot.app.pipeline import Turn, build_pipeline
from bot.conversation.breakdown import Breakdowns
from bot.conversation.continuation import Continuation
from bot.conversation.overflow import OverflowRetry
from bot.conversation.renewal import FreshnessPolicy, SessionRenewal
from bot.media.reader import MediaReader
from bot.memory.recall.inventory import MemoryInventory
from bot.pipeline import Pipeline
from bot.settings import Settings
from bot.turn.chats import RunningTurns
from bot.turn.commands import basics, conversation, spending, status
from bot.turn.commands import memory as remembering
from bot.turn.commands.dispatch import Commands
from bot.turn.commands.keep import KeepQuoted
from bot.turn.delivery import Delivery
from bot.turn.router import Router
from bot.turn.runner import TurnRunner


def build_router(
    settings: Settings, core: Core, turn: Turn, now: Callable[[], datetime], *, media: MediaReader
) -> Router:
    running, pipeline = RunningTurns(), build_pipeline(settings, core, turn, now)
    delivery = Delivery(core.store.journal)
    return Router(
        inbox=core.store.journal,
        access=core.access,
        door=core.door,
        commands=build_commands(settings, core, turn, pipeline, running, now),
        turns=_build_turns(settings, core, turn, pipeline, running, delivery, now, media),
        delivery=delivery,
        chatter=core.chatter,
        receipts=core.receipts,
        reset_triggers=settings.session.reset_triggers,
    )


def _build_turns(
    settings: Settings,
    core: Core,
    turn: Turn,
    pipeline: Pipeline,
    running: RunningTurns,
    delivery: Delivery,
    now: Callable[[], datetime],
    media: MediaReader,
) -> TurnRunner:
    config = settings.session
    policy = FreshnessPolicy.from_settings(config, now)
    closing = turn.closing
    renewal = SessionRenewal(policy=policy, closing=closing, summarizer=turn.compactor, now=now)
    compactor = turn.compactor if settings.compaction.enabled else None
    # after a context overflow the full `keep` was too much: half of it
    keep = max(2, settings.compaction.keep_last_messages // 2)
    return TurnRunner(
        overflow=OverflowRetry(pipeline, compactor, keep=keep),
        continuation=Continuation(core.sessions, renewal, core.writer.notes, now),
        access=core.access,
        locks=core.chat_locks,
        running=running,
        delivery=delivery,
        chatter=core.chatter,
        media=media,
        breakdowns=Breakdowns(closing, limit=config.restart_after_errors, now=now),
    )


def build_commands(
    settings: Settings,
    core: Core,
    turn: Turn,
    pipeline: Pipeline,
    running: RunningTurns,
    now: Callable[[], datetime],
) -> Commands:
    sessions, access, locks, writer = core.sessions, core.access, core.chat_locks, core.writer
    undo_minutes, model = settings.memory.undo_minutes, settings.llm.model
    keep = settings.compaction.keep_last_messages
    markdown, memory = core.markdown, core.writer
    inventory = MemoryInventory(
        core.workspace, markdown.reader, markdown, memory.history, memory.working, now=now
    )
    return Commands(
        [
            basics.Start(),
            basics.Help(access),
            basics.Stop(running),
            conversation.NewConversation(turn.closing, sessions, locks, access),
            conversation.Compact(turn.compactor, sessions, locks, access, turn.preview, keep=keep),
            remembering.ShowMemory(inventory, access),
            remembering.Remember(writer, access, core.receipts),
            remembering.Forget(writer, access, locks, undo_minutes=undo_minutes),
            remembering.Undo(writer, locks, undo_minutes=undo_minutes),
            KeepQuoted(writer, access),
            status.ShowStatus(  # how full the next prompt is (`turn.preview`), and more
                sessions,
                turn.preview,
                core.writer.history,
                running,
                access,
                model=model,
                pipeline=pipeline.describe(),
                queue=core.store.queue,
            ),
            status.ShowContext(turn.sent, turn.preview, access, sessions, model=model),
            spending.ShowUsage(core.spending.report, access),
        ]
    )
