"""Composition of a turn: its pieces (`Turn`: the model's tools, prompt accounting and
compaction, the prompt, the preview of a chat's next prompt), then the pipeline of systems over
them. Part of the composition root (see `bot.app`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.app.core import Core
from bot.app.reminders import Reminders, build_reminders
from bot.conversation.closing import ConversationClose
from bot.conversation.compaction import Compactor
from bot.conversation.window import SessionWindow
from bot.index.lightrag import LightRagBackend
from bot.llm.inspection import LastRequests
from bot.llm.meter import PromptMeter
from bot.memory.recall.prompt import MemoryPrompt
from bot.pipeline import BestEffort, Pipeline, System
from bot.reminders.prompt import ScheduledInPrompt
from bot.settings import Settings
from bot.systems.compaction import AutoCompaction
from bot.systems.context import ContextBuilding
from bot.systems.flush import PreCompactionFlush
from bot.systems.indexing import RagIndexing
from bot.systems.persist import MemoryPersist
from bot.systems.tags import MemoryTags
from bot.systems.tool_loop import ToolLoop
from bot.systems.truth import FilesFirst
from bot.tools.offered import instructions, offered_tools
from bot.tools.registry import ToolRegistry
from bot.turn.preview import PromptPreview


@dataclass(frozen=True)
class Turn:
    """What a turn is made of beside the core: the pieces its pipeline (`build_pipeline`),
    the commands, the reminders and the web page share."""

    lightrag: LightRagBackend | None  # a service when `rag.backend = "lightrag"`
    tools: ToolRegistry
    reminders: Reminders
    closing: ConversationClose  # /new, a stale session's renewal, the window's trimming
    meter: PromptMeter  # the prompt's tokens against the model's window
    compactor: Compactor  # systems 18, /compact, a stale session's summary, the overflow retry
    sent: LastRequests  # the last request of each chat (/context)
    context: ContextBuilding  # system 20 (the preview's, a scheduled task's too)
    preview: PromptPreview  # the next prompt of a chat (/status, /compact, `bot prompt`)


def build_turn(settings: Settings, core: Core, now: Callable[[], datetime]) -> Turn:
    """The turn's pieces, each built once (the pipeline over them: `build_pipeline`)."""
    lightrag = LightRagBackend.from_settings(settings.rag, now)
    tools = offered_tools(
        settings, core.workspace, core.writer, core.items_index, now, remote=lightrag
    )
    reminders = build_reminders(settings, core.workspace, core.store.locks, now, tools=tools)
    # until a turn has measured the real system prompt: persona and instructions, and memory
    persona = core.tokens.count(settings.persona) + core.tokens.count(instructions(settings.rag))
    meter = PromptMeter.from_settings(  # with the tools' specs (the `remind` tool's too)
        settings.llm, core.tokens, core.windows, system_tokens=persona, tools=tools.specs
    )
    memory = MemoryPrompt.from_settings(
        settings, core.markdown, core.items_index, core.count, remote=lightrag
    )
    # system 20: a turn's prompt (also `python -m bot prompt`'s, through `PromptPreview`)
    context = ContextBuilding.from_settings(
        settings, memory, core.writer.notes.format, now, memory_room=meter.memory_room
    )
    llm, sessions, writer = core.spending.llm("compaction"), core.sessions, core.writer
    compactor = Compactor.from_settings(settings, llm, sessions, writer, meter, now)
    consolidating = settings.memory.memory_window > 0  # 0 turns consolidation off, /new too
    closing = ConversationClose(
        sessions=core.sessions,
        consolidator=core.consolidator if consolidating else None,
        memory=core.writer,
    )
    return Turn(
        lightrag=lightrag,
        tools=tools,
        reminders=reminders,
        closing=closing,
        meter=meter,
        compactor=compactor,
        sent=LastRequests(),
        context=context,
        preview=PromptPreview(  # `python -m bot prompt`: system 20, as a turn would run it
            context=context,
            sessions=core.sessions,
            access=core.access,
            tools=tools.specs,
            meter=meter,
            now=now,
        ),
    )


def build_pipeline(
    settings: Settings, core: Core, turn: Turn, now: Callable[[], datetime]
) -> Pipeline:
    """The turn's systems (the pipeline runs them in their order: `Pipeline.describe()`)."""
    memory, writer, meter = settings.memory, core.writer, turn.meter
    loop = ToolLoop(
        core.spending.llm("reply"),
        turn.tools,
        max_steps=settings.llm.max_tool_steps,
        now=now,
        meter=meter,
        sent=turn.sent,
    )
    window = SessionWindow(
        turn.closing, memory_window=memory.memory_window, keep_messages=memory.keep_messages
    )
    persist = MemoryPersist(core.sessions, writer, window=window, now=now, meter=meter)
    indexing = RagIndexing(core.workspace, index=core.items_index.index, remote=turn.lightrag)
    shown = settings.reminders.shown_in_prompt
    return Pipeline(
        [
            *_compaction(settings, core, turn, now),
            BestEffort(FilesFirst(writer)),
            turn.context,
            ScheduledInPrompt(turn.reminders.store, shown=shown),
            loop,
            MemoryTags(writer, core.receipts),
            persist,
            BestEffort(indexing),
        ]
    )


def _compaction(
    settings: Settings, core: Core, turn: Turn, now: Callable[[], datetime]
) -> list[System]:
    """System 18, auto-compaction; before it, when both are on, system 17's silent turn that
    lets the model write durable notes."""
    config = settings.compaction
    compaction = BestEffort(AutoCompaction.from_settings(config, turn.compactor, turn.meter))
    if not (config.enabled and config.flush_enabled):
        return [compaction]
    llm, meter = core.spending.llm("flush"), turn.meter
    flush = PreCompactionFlush.from_settings(settings, llm, core.writer, meter, core.sessions, now)
    return [BestEffort(flush), compaction]
