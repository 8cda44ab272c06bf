"""Composition of what a message meets: the door, the commands, the turn runner and the router
in front of them. Part of the composition root (see `bot.app`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from bot.app.core import Core
from bot.app.pipeline import Turn
from bot.conversation.breakdown import Breakdowns
from bot.conversation.closing import ConversationClose
from bot.conversation.continuation import Continuation
from bot.conversation.overflow import OverflowRetry
from bot.conversation.renewal import ChatKind, Freshness, FreshnessPolicy, SessionRenewal
from bot.media.reader import MediaReader
from bot.memory.recall.inventory import MemoryInventory
from bot.settings import SessionPolicySettings, Settings
from bot.storage.sessions import SessionStore
from bot.turn.access import AccessPolicy
from bot.turn.chats import ChatLocks, RunningTurns
from bot.turn.commands import basics, conversation, spending, status
from bot.turn.commands import memory as remembering
from bot.turn.commands.dispatch import Commands
from bot.turn.commands.handler import Handler
from bot.turn.commands.keep import KeepQuoted
from bot.turn.delivery import Delivery
from bot.turn.router import Router
from bot.turn.runner import TurnRunner


@dataclass(frozen=True)
class Chats:
    """What the commands and the turn share about each chat."""

    sessions: SessionStore
    access: AccessPolicy
    locks: ChatLocks
    running: RunningTurns


def build_router(
    settings: Settings, core: Core, turn: Turn, now: Callable[[], datetime], *, media: MediaReader
) -> Router:
    steering = core.steering
    gate = steering.gate
    access, door = gate.access, gate.door
    chats = Chats(core.sessions, access, gate.locks, RunningTurns())
    consolidating = settings.memory.memory_window > 0  # 0 turns consolidation off, /new too
    closing = ConversationClose(
        sessions=core.sessions,
        consolidator=core.consolidator if consolidating else None,
        memory=core.writer,
    )
    journal = core.store.journal
    delivery = Delivery(journal)
    return Router(
        inbox=journal,
        access=access,
        door=door,
        commands=build_commands(settings, core, chats, turn, closing, now),
        turns=_build_turns(settings, core, chats, turn, closing, delivery, now, media),
        delivery=delivery,
        chatter=core.chatter,
        receipts=steering.receipts,
        reset_triggers=settings.session.reset_triggers,
    )


def _build_turns(
    settings: Settings,
    core: Core,
    chats: Chats,
    turn: Turn,
    closing: ConversationClose,
    delivery: Delivery,
    now: Callable[[], datetime],
    media: MediaReader,
) -> TurnRunner:
    compaction = turn.compaction
    compactor = compaction.compactor if compaction.enabled else None
    config = settings.session
    policy = FreshnessPolicy(
        daily_reset_hour=config.daily_reset_hour,
        idle_minutes=config.idle_minutes,
        now=now,
        by_kind=_freshness_by_kind(config),
    )
    renewal = SessionRenewal(
        policy=policy, closing=closing, summarizer=compaction.compactor, now=now
    )
    return TurnRunner(
        overflow=OverflowRetry(turn.pipeline, compactor, keep=compaction.overflow_keep),
        continuation=Continuation(chats.sessions, renewal, core.memory.notes, now),
        access=chats.access,
        locks=chats.locks,
        running=chats.running,
        delivery=delivery,
        chatter=core.chatter,
        media=media,
        breakdowns=Breakdowns(closing, limit=settings.session.restart_after_errors, now=now),
    )


def _freshness_by_kind(config: SessionPolicySettings) -> dict[ChatKind, Freshness]:
    """Each kind of chat's freshness: its own settings where set, else the general ones."""
    general = Freshness(config.daily_reset_hour, config.idle_minutes)
    return {
        kind: replace(general, **{name: getattr(own, name) for name in own.model_fields_set})
        for kind, own in config.chats.items()
    }


def build_commands(
    settings: Settings,
    core: Core,
    chats: Chats,
    turn: Turn,
    closing: ConversationClose,
    now: Callable[[], datetime],
) -> Commands:
    steering, memory, writer = core.steering, core.memory, core.writer
    sessions, access, locks, running = chats.sessions, chats.access, chats.locks, chats.running
    undo_minutes = settings.memory.undo_minutes
    inventory = MemoryInventory(
        core.workspace, memory.reader, memory.markdown, memory.history, memory.working, now=now
    )
    return Commands(
        [
            basics.Start(),
            basics.Help(access),
            basics.Stop(running),
            conversation.NewConversation(closing, sessions, locks, access),
            conversation.Compact(
                turn.compaction.compactor,
                sessions,
                locks,
                access,
                turn.preview,
                keep=turn.compaction.keep,
            ),
            remembering.ShowMemory(inventory, access),
            remembering.Remember(writer, access, steering.receipts),
            remembering.Forget(writer, access, locks, undo_minutes=undo_minutes),
            remembering.Undo(writer, locks, undo_minutes=undo_minutes),
            KeepQuoted(writer, access),
            *_status_commands(settings, core, chats, turn),
            spending.ShowUsage(steering.usage, access),
        ]
    )


def _status_commands(settings: Settings, core: Core, chats: Chats, turn: Turn) -> list[Handler]:
    """/status and /context: how full the next prompt is (`turn.preview`), and more."""
    gauge, model = turn.preview, settings.llm.model
    return [
        status.ShowStatus(
            chats.sessions,
            gauge,
            core.memory.history,
            chats.running,
            chats.access,
            model=model,
            pipeline=turn.pipeline.describe(),
            queue=core.store.queue,
        ),
        status.ShowContext(turn.sent, gauge, chats.access, chats.sessions, model=model),
    ]
