"""The core's data: frozen dataclasses every layer speaks (no imports from `bot`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal

Role = Literal["system", "user", "assistant", "tool"]
ChatType = Literal["private", "group", "supergroup", "channel"]
AttachmentKind = Literal["voice", "audio", "photo", "document", "other"]
# what a journal entry is: a message someone sent, or scheduled (`bot.reminders`)
InboundKind = Literal["message", "reminder", "task"]


@dataclass(frozen=True)
class Attachment:
    """A file or thing that came with a message (its caption is the message's text); read by
    `bot.media` before the turn."""

    kind: AttachmentKind
    file_id: str  # the channel's id of the file (Telegram: file_id; console: a local path)
    file_name: str | None = None
    mime_type: str | None = None
    size: int | None = None  # bytes, when the channel tells
    duration: int | None = None  # seconds (voice, audio)
    what: str = ""  # kind "other": what it is ("sticker", "location", "video" …)


@dataclass(frozen=True)
class Inbound:
    """One accepted message from a channel, before anything else happens to it."""

    id: str  # unique per channel message, e.g. "telegram:update:1001"; the inbox journal key
    channel: str
    chat_id: int
    user_id: int
    text: str
    received_at: datetime
    chat_type: ChatType = "private"
    thread_id: int | None = None
    message_id: int | None = None
    reply_to_message_id: int | None = None
    user_name: str | None = None  # a handle: the username, else the first name (groups' `Name:`)
    user_display_name: str | None = None  # the person as others read it: "Ann Lee (@ann)"
    addressed: bool = True  # False: a group message not for the bot, kept as context (`Said`)
    attachments: tuple[Attachment, ...] = ()
    forwarded: bool = False  # forwarded from someone else: their words, not the sender's
    kind: InboundKind = "message"  # not "message": made by the scheduler, never said by anyone
    joins: int = 1  # messages its text joins (quick follow-ups answered together, `together`)

    @property
    def session_key(self) -> str:
        base = f"{self.channel}:{self.chat_id}"
        return base if self.thread_id is None else f"{base}:{self.thread_id}"

    @property
    def is_private(self) -> bool:
        return self.chat_type == "private"

    @property
    def person(self) -> str | None:
        """How the bot names the sender to people (owner alerts, pairing, provenance): their
        name with the username beside it, "Ann Lee (@ann)"; else what the channel gave; None:
        nothing (a caller says "user 42")."""
        return self.user_display_name or self.user_name

    def person_and_id(self) -> str:
        """`person` with the sender's id, for a record of who said what: "Ann Lee (@ann, 42)",
        "Ann (42)"; "user (42)" when the channel gave no name."""
        name = self.person
        if name is None:
            return f"user ({self.user_id})"
        if name.endswith(")") and " (@" in name:  # the username beside the name
            return f"{name[:-1]}, {self.user_id})"
        return f"{name} ({self.user_id})"


def parse_session_key(key: str) -> tuple[str, int, int | None] | None:
    """`Inbound.session_key` read back: (channel, chat id, thread id); None when `key` is not
    one (e.g. `telegram:-100123:7` → ("telegram", -100123, 7))."""
    channel, _, rest = key.partition(":")
    chat, _, thread = rest.partition(":")
    if not channel:
        return None
    try:
        return channel, int(chat), int(thread) if thread else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Said:
    """A group message that did not address the bot, kept for its next turn in that chat."""

    id: str  # the `Inbound.id` it came as (kept once, however often it is replayed)
    name: str  # who said it, as the model reads it (`bot.conversation.speakers`)
    text: str
    at: datetime


@dataclass(frozen=True)
class MemoryScope:
    """Whose memory a turn sees: the owner's global memory, or one chat's own memory."""

    chat_key: str | None  # None: the owner's private, global memory

    @property
    def is_global(self) -> bool:
        return self.chat_key is None


GLOBAL_SCOPE = MemoryScope(chat_key=None)
GLOBAL_KEY = ""  # the global scope's key (the index's chunks, a search's scopes)


def scope_key(scope: MemoryScope) -> str:
    """A scope's key: its chat key, or `GLOBAL_KEY` for the owner's global memory."""
    return scope.chat_key or GLOBAL_KEY


@dataclass(frozen=True)
class StoredLine:
    """A MEMORY.md (or chat memory) line one write added, and what that write changed to make
    room for it — what a receipt's Undo puts back (`bot.receipts`)."""

    scope: MemoryScope
    text: str  # the fact as its line holds it
    superseded: tuple[str, ...] = ()  # the lines it marked superseded, as they were
    replaced: str | None = None  # the line it took the place of, as it was


class MemoryLayer(StrEnum):
    """Where a structured memory item belongs."""

    EPISODIC = "episodic"  # recent turn events and short-horizon traces
    SEMANTIC = "semantic"  # durable facts, preferences, constraints
    PROCEDURAL = "procedural"  # commands, errors and their fixes


# items are never deleted; "superseded": a newer fact replaced it (kept as history);
# "retired": the MEMORY.md line it was made of is gone (active again if the line comes back)
ItemStatus = Literal["active", "forgotten", "decayed", "superseded", "retired"]
Via = Literal["message", "voice", "photo", "document", "forwarded", "inference", "tool", "group"]


@dataclass(frozen=True)
class Provenance:
    """Where a remembered fact came from (`bot.memory.provenance` owns its text and JSON)."""

    by: str  # who said it: a person and their id ("Ann (@ann, 42)", `Inbound.person_and_id`;
    # older items may hold a username, "ann (42)"), or "model"
    chat: str  # the session key of the chat it was said in
    at: datetime
    via: Via  # what it came as ("inference": the model's own, e.g. consolidation)


@dataclass(frozen=True)
class Recalled:
    """Others' words that reached the model in a turn through memory, and their source
    (`bot.memory.trust`)."""

    text: str
    source: Provenance  # where they came from, as what (never "message": not the person's)


@dataclass(frozen=True)
class MemoryItem:
    """One structured memory record, stored as a JSONL line under its scope's `items/`."""

    id: str  # "e20260207-…" (the day names its episodic file), "s-…", "p-…"
    layer: MemoryLayer
    type: str  # "turn", "fact", "preference", "constraint", "command", "error", "error_fix"
    text: str
    fingerprint: str  # hash of the normalised text: the same fingerprint is the same item
    created_at: datetime
    updated_at: datetime  # last written or reinforced
    scope: str = ""  # the chat key, "" for the owner's global memory
    confidence: float = 0.5  # 0–1: how sure we are it is true
    salience: float = 0.5  # 0–1: how much it matters; decay lowers it
    tags: tuple[str, ...] = ()
    references: tuple[str, ...] = ()  # "sessions/telegram%3A1#turn-abc", "MEMORY.md#L12", "item:…"
    last_used_at: datetime | None = None  # last shown in a memory pack
    decayed_at: datetime | None = None  # last lowered by decay
    status: ItemStatus = "active"
    provenance: Provenance | None = None  # None: an item from before provenance was kept

    @property
    def memory_scope(self) -> MemoryScope:
        return MemoryScope(chat_key=self.scope or None)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text exactly as the model produced it


@dataclass(frozen=True)
class Image:
    """An image a user message shows the model (sent as a data URL)."""

    mime_type: str  # "image/jpeg"
    data: bytes


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # set on role="tool"
    name: str | None = None  # tool name on role="tool"
    at: datetime | None = None
    turn: str | None = None  # the turn id, on the user message that began the turn
    # system 50, on a turn's user message: the others' words the turn carried or its answer
    # drew on (`bot.memory.trust`), which stay others' words when recalled; None: its own
    origin: Via | None = None
    images: tuple[Image, ...] = ()  # the current turn's request only: never saved


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0  # of the prompt, as the provider reported them served from its cache


@dataclass(frozen=True)
class ToolSpec:
    """What the model is told about a tool: a name, a description, a JSON schema."""

    name: str
    description: str
    parameters: dict[str, object]


@dataclass(frozen=True)
class PromptPart:
    """A named piece of a request's text (system 20 names them; /context counts them)."""

    label: str  # "persona", "# Memory", "## Long-term Memory" …
    text: str
    within: str = ""  # the label of the part this one is a section of ("" at the top)


@dataclass(frozen=True)
class Document:
    """A file a reply sends beside its text (e.g. /context full)."""

    name: str  # "context.txt"
    text: str
    caption: str = ""


@dataclass(frozen=True)
class Button:
    """A button under a message: what it says, what a press sends back (at most 64 bytes,
    never trusted: the bot looks up what it names), and the text command that does the same
    where a channel has no buttons."""

    label: str
    data: str
    command: str


@dataclass(frozen=True)
class Keyed:
    """A short message with buttons under it (a memory receipt)."""

    text: str
    buttons: tuple[Button, ...]

    def as_text(self) -> str:
        """The message for a channel without buttons: the text, then each button's command."""
        commands = " · ".join(f"{b.label}: {b.command}" for b in self.buttons)
        return f"{self.text}\n{commands}" if commands else self.text


@dataclass(frozen=True)
class Press:
    """Someone pressed a button under one of the bot's messages."""

    channel: str
    chat_id: int
    user_id: int
    data: str  # the button's `data`, as the client sent it
    message_id: int | None = None
    thread_id: int | None = None

    @property
    def session_key(self) -> str:
        base = f"{self.channel}:{self.chat_id}"
        return base if self.thread_id is None else f"{base}:{self.thread_id}"


@dataclass(frozen=True)
class Pressed:
    """What a press answers: a short notice where it was pressed, and the message's new text
    (None: the message stays as it is)."""

    notice: str
    text: str | None = None


@dataclass(frozen=True)
class Completion:
    """One answer from the model: text, tool calls, or both."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    model: str = ""


SessionState = Literal["active", "ended"]  # seed 000's ACTIVE / TERMINATED (docs/seeds.md)


@dataclass(frozen=True)
class SessionMarks:
    """What a session keeps beside its messages. Each field names the one that writes it; the
    session file stores them as its `metadata` (`bot.storage.marks` writes and reads them)."""

    last_inbound: str | None = None  # system 50: the message whose answer the session holds
    scope: str | None = None  # system 50: the scope key (`scope_key`) its turns used
    system_tokens: int | None = None  # system 50, measured by the prompt meter: what the last
    # request held beyond its conversation
    token_factor: float | None = None  # system 50, the prompt meter's: reported / counted
    flushed_cycle: int | None = None  # system 17: the compaction count at its last flush
    flushed_at: datetime | None = None  # system 17
    recovered_from: str | None = None  # `SessionStore`: the damaged file set aside; cleared
    # once the chat is told (`bot.conversation.continuation`)
    archived_part: bool = False  # `SessionStore`: an archive file of a part cut from a session
    revision: int | None = None  # `SessionStore`: how many times the file was saved (a save
    # over a file another process changed meanwhile is merged, never lost)
    state: SessionState | None = None  # `SessionStore`: "ended" in an archive file (None:
    # active, the chat's current conversation)
    ended: str | None = None  # `SessionStore.archive`: why it ended ("/new", "idle for 5 hours")
    unknown: tuple[tuple[str, str], ...] = ()  # `SessionStore`: marks it does not know (a newer
    # version's, a person's), kept as they were


@dataclass(frozen=True)
class Session:
    """A conversation's persisted state; replaced, never mutated in place."""

    key: str
    messages: tuple[ChatMessage, ...]
    created_at: datetime
    updated_at: datetime
    last_prompt_tokens: int | None = None  # as reported by the provider
    total_prompt_tokens: int = 0
    total_completion_tokens: int = 0
    compactions: int = 0
    marks: SessionMarks = SessionMarks()
