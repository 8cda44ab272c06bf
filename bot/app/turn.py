"""Composition of what a message meets: the door, the commands, the turn runner and the router
in front of them. Part of the composition root (see `bot.app`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.app.memory import Memory
from bot.app.pipeline import Compaction
from bot.app.steering import Steering
from bot.conversation.closing import ConversationClose
from bot.conversation.continuation import Continuation
from bot.conversation.overflow import OverflowRetry
from bot.conversation.renewal import FreshnessPolicy, SessionRenewal
from bot.llm.inspection import LastRequests
from bot.media.reader import MediaReader
from bot.memory.recall.inventory import MemoryInventory
from bot.memory.upkeep.consolidation import Consolidator
from bot.memory.writer import MemoryWriter
from bot.pipeline import Pipeline
from bot.settings import Settings
from bot.storage.chatter import ChatterStore
from bot.storage.inbox import Journal
from bot.storage.sessions import SessionStore
from bot.storage.workspace import Workspace
from bot.turn.access import AccessPolicy
from bot.turn.chats import ChatLocks, RunningTurns
from bot.turn.commands import basics, conversation, memory, spending, status
from bot.turn.commands.dispatch import Commands
from bot.turn.commands.handler import Handler
from bot.turn.commands.keep import KeepQuoted
from bot.turn.commands.status import QueueLook
from bot.turn.delivery import Delivery
from bot.turn.preview import PromptPreview
from bot.turn.router import Router
from bot.turn.runner import TurnRunner


@dataclass(frozen=True)
class Chats:
    """What the commands and the turn share about each chat."""

    sessions: SessionStore
    access: AccessPolicy
    locks: ChatLocks
    running: RunningTurns


@dataclass(frozen=True)
class TurnParts:
    """What the app built before the turn: its memory, the pipeline and its accounting, and
    the journal (the workspace's, or the replicas', `bot.app.store`)."""

    memory: Memory
    writer: MemoryWriter
    consolidator: Consolidator
    compaction: Compaction
    pipeline: Pipeline
    sent: LastRequests  # the last request of each chat (/context)
    journal: Journal
    steering: Steering  # receipts, /usage, and the gate (access, door, chat locks)
    preview: PromptPreview  # the next prompt of a chat, and how full it is (/status …)
    queue: QueueLook | None = None  # /status: the replicas' shared queue (bot.app.store)


def build_router(
    settings: Settings,
    workspace: Workspace,
    sessions: SessionStore,
    parts: TurnParts,
    now: Callable[[], datetime],
    *,
    media: MediaReader,
    chatter: ChatterStore | None,
) -> Router:
    steering = parts.steering
    gate = steering.gate
    access, door = gate.access, gate.door
    chats = Chats(sessions, access, gate.locks, RunningTurns())
    consolidating = settings.memory.memory_window > 0  # 0 turns consolidation off, /new too
    closing = ConversationClose(
        sessions=sessions,
        consolidator=parts.consolidator if consolidating else None,
        memory=parts.writer,
    )
    delivery = Delivery(parts.journal)
    return Router(
        inbox=parts.journal,
        access=access,
        door=door,
        commands=build_commands(settings, workspace, chats, parts, closing, now),
        turns=_build_turns(settings, chats, parts, closing, delivery, now, media, chatter),
        delivery=delivery,
        chatter=chatter,
        receipts=steering.receipts,
    )


def _build_turns(
    settings: Settings,
    chats: Chats,
    parts: TurnParts,
    closing: ConversationClose,
    delivery: Delivery,
    now: Callable[[], datetime],
    media: MediaReader,
    chatter: ChatterStore | None,
) -> TurnRunner:
    compaction = parts.compaction
    compactor = compaction.compactor if compaction.enabled else None
    policy = FreshnessPolicy(
        daily_reset_hour=settings.session.daily_reset_hour,
        idle_minutes=settings.session.idle_minutes,
        now=now,
    )
    renewal = SessionRenewal(
        policy=policy, closing=closing, summarizer=compaction.compactor, now=now
    )
    return TurnRunner(
        overflow=OverflowRetry(parts.pipeline, compactor, keep=compaction.overflow_keep),
        continuation=Continuation(chats.sessions, renewal, parts.memory.notes, now),
        access=chats.access,
        locks=chats.locks,
        running=chats.running,
        delivery=delivery,
        chatter=chatter,
        media=media,
    )


def build_commands(
    settings: Settings,
    workspace: Workspace,
    chats: Chats,
    parts: TurnParts,
    closing: ConversationClose,
    now: Callable[[], datetime],
) -> Commands:
    steering = parts.steering
    sessions, access, locks, running = chats.sessions, chats.access, chats.locks, chats.running
    undo_minutes = settings.memory.undo_minutes
    inventory = MemoryInventory(
        workspace,
        parts.memory.reader,
        parts.memory.markdown,
        parts.memory.history,
        parts.memory.working,
        now=now,
    )
    return Commands(
        [
            basics.Start(),
            basics.Help(access),
            basics.Stop(running),
            conversation.NewConversation(closing, sessions, locks, access),
            conversation.Compact(
                parts.compaction.compactor,
                sessions,
                locks,
                access,
                parts.preview,
                keep=parts.compaction.keep,
            ),
            memory.ShowMemory(inventory, access),
            memory.Remember(parts.writer, access, steering.receipts),
            memory.Forget(parts.writer, access, locks, undo_minutes=undo_minutes),
            memory.Undo(parts.writer, locks, undo_minutes=undo_minutes),
            KeepQuoted(parts.writer, access),
            *_status_commands(settings, chats, parts),
            spending.ShowUsage(steering.usage, access),
        ]
    )


def _status_commands(settings: Settings, chats: Chats, parts: TurnParts) -> list[Handler]:
    """/status and /context: how full the next prompt is (`parts.preview`), and more."""
    gauge, model = parts.preview, settings.llm.model
    return [
        status.ShowStatus(
            chats.sessions,
            gauge,
            parts.memory.history,
            chats.running,
            chats.access,
            model=model,
            pipeline=parts.pipeline.describe(),
            queue=parts.queue,
        ),
        status.ShowContext(parts.sent, gauge, chats.access, chats.sessions, model=model),
    ]
