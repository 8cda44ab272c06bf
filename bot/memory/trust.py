"""Whose words a turn's memory would be: the person who wrote to the bot, or someone else.

Only the person talking to the bot in this turn (an owner or a paired user: nobody else gets a
turn) is trusted. A turn that also carried other text — a forwarded message (a forwarded voice
note's transcript too), a document's text, what other group members said meanwhile, a tool's
output (other than the memory tools and the clock), or recalled quoted material — may have put
words in the model's mouth, so what it stores is quoted material (`notes.quoted`) until an owner
keeps it, never a fact in MEMORY.md or a semantic item.

Others' words stay others' words when they come back (`Recalled`): in a later turn, the text of
a document, a forwarded message, a quote, or an exchange that carried or repeated them reaches
the model again through the conversation, `# Memory` (a day's note line), the items shown,
`# Relevant Memory` or a memory tool (the index knows each chunk's origin:
`bot.index.sources.origin_of`). The model may quote it; but a text it writes from it (a tag's
fact, a memory tool's new line, its answer) is attributed to that material, not to the person
(`TurnOrigin.source_of`): a text draws on recalled material when it shares a word with it —
other than the common ones (`bot.index.query.STOP_WORDS`, "user", "owner") — that the person's
own message does not hold. Such a fact is kept as a quote with its true source; an answer that
drew on it makes its exchange others' words in turn (`ChatMessage.origin`, system 50).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import cast, get_args

from bot.index.query import STOP_WORDS, WORD
from bot.index.search import Hit
from bot.index.sources import file_day, origin_of, origin_of_turn, scope_of
from bot.index.sync.transcripts import turns
from bot.media.reading import carried
from bot.memory.items.keywords import stem
from bot.memory.notes import quoted
from bot.memory.notes.quoted import QUOTE_MARK
from bot.models import ChatMessage, Inbound, MemoryItem, Provenance, Recalled, Via

OWN_TOOLS = frozenset(
    {
        "current_time",
        "memory_search",
        "memory_get",
        "memory_edit",
        "memory_add",
        "memory_update",
        "memory_promote",
        "memory_forget",
    }
)
_VIAS: tuple[str, ...] = get_args(Via)
_COMMON = STOP_WORDS | {"user", "owner"}


@dataclass(frozen=True)
class TurnOrigin:
    said: Provenance  # who wrote this turn's message, where, when, as what
    quoted: Via | None  # the other text the turn carried (None: only the person's own words)
    recalled: tuple[Recalled, ...] = ()  # others' words memory brought back in this turn
    own: str = ""  # the person's own words in this turn (their message)

    @property
    def trusted(self) -> bool:
        """Whether the turn carried only the person's words (recalled material aside)."""
        return self.quoted is None

    @property
    def source(self) -> Provenance:
        """What the turn's memory is attributed to: the person's words, or the material."""
        if self.quoted is None:
            return self.said
        return Provenance(by=self.said.by, chat=self.said.chat, at=self.said.at, via=self.quoted)

    def source_of(self, text: str) -> Provenance:
        """What a text the model wrote in this turn is attributed to: the turn's material when
        it carried some, else the recalled material it draws on, else the person."""
        if self.quoted is not None:
            return self.source
        found = drawn_from(text, self.recalled, own=self.own)
        return self.said if found is None else found.source

    def trusts(self, text: str) -> bool:
        """Whether a text the model wrote is the person's own (see `source_of`)."""
        return self.quoted is None and drawn_from(text, self.recalled, own=self.own) is None

    def carried(self, answer: str) -> Provenance | None:
        """The source of the others' words a turn's exchange holds: those the turn carried,
        or those its answer drew on; None when it is the person's own."""
        if self.quoted is not None:
            return self.source
        found = drawn_from(answer, self.recalled, own=self.own)
        return None if found is None else found.source

    def whose(self, texts: Sequence[str]) -> tuple[list[str], dict[Provenance, list[str]]]:
        """The texts that are the person's own, and the others' by their source."""
        own: list[str] = []
        others: dict[Provenance, list[str]] = {}
        for text in texts:
            if self.trusts(text):
                own.append(text)
            else:
                others.setdefault(self.source_of(text), []).append(text)
        return own, others

    def with_recalled(self, more: Iterable[Recalled]) -> TurnOrigin:
        """The origin with `more` recalled material (a memory tool's, later in the turn)."""
        return replace(self, recalled=tuple(dict.fromkeys((*self.recalled, *more))))


def drawn_from(text: str, recalled: Iterable[Recalled], *, own: str) -> Recalled | None:
    """The first recalled material `text` draws on: it shares a word with it, other than the
    common ones, that `own` does not hold."""
    words = _words(text) - _words(own)
    if not words:
        return None
    return next((r for r in recalled if words & _words(r.text)), None)


def _words(text: str) -> set[str]:
    """The words that tell something: case-folded, a plural's "s" dropped, the common ones
    and single letters left out."""
    found = (stem(word) for word in WORD.findall(text.casefold()))
    return {word for word in found if len(word) > 1 and word not in _COMMON}


def inferred_over(messages: Sequence[ChatMessage], *, chat: str, at: datetime) -> TurnOrigin:
    """The origin of what the model writes over a conversation on its own (the memory flush):
    its inference, but what it draws from the turns that carried others' words is theirs."""
    said = Provenance(by="model", chat=chat, at=at, via="inference")
    return TurnOrigin(said, None, tuple(in_conversation(messages, said=said)))


def speaker_of(inbound: Inbound) -> str:
    """Who said it, as /memory shows it: "Ann Lee (@ann, 42)" (`Inbound.person_and_id`)."""
    return inbound.person_and_id()


def said_by(inbound: Inbound) -> Provenance:
    """The message's own provenance: its sender, chat, time and kind."""
    return Provenance(
        by=speaker_of(inbound),
        chat=inbound.session_key,
        at=inbound.received_at,
        via=said_as(inbound),
    )


def said_as(inbound: Inbound) -> Via:
    """What the message came as."""
    if inbound.forwarded:
        return "forwarded"
    kinds = {attachment.kind for attachment in inbound.attachments}
    if kinds & {"voice", "audio"}:
        return "voice"
    if "photo" in kinds:
        return "photo"
    if "document" in kinds:
        return "document"
    return "message"


def turn_origin(
    inbound: Inbound,
    *,
    at: datetime,
    attached: str = "",
    chatter: bool = False,
    tool_results: Iterable[tuple[str, str]] = (),  # (tool name, its output)
    recalled: Iterable[Recalled] = (),
    own: str = "",
) -> TurnOrigin:
    said = replace(said_by(inbound), at=at)
    quoted = _quoted(inbound, attached, chatter, tool_results)
    return TurnOrigin(said, quoted, tuple(dict.fromkeys(recalled)), own)


def _quoted(
    inbound: Inbound, attached: str, chatter: bool, tool_results: Iterable[tuple[str, str]]
) -> Via | None:
    if inbound.forwarded:
        return "forwarded"
    if attached.strip():
        return "document"
    if chatter:
        return "group"
    for name, output in tool_results:
        if name not in OWN_TOOLS or QUOTE_MARK in output:
            return "tool"
    return None


# ----------------------------------------------------------------------------- what came back


def in_text(text: str, *, origin: str, name: str, chat: str, at: datetime) -> list[Recalled]:
    """Others' words in a recalled text of this origin (`bot.index.sources.origin_of`) read
    from `name`: a quote's own source for each quoted line, a daily note's lines that carried
    others' words, the whole text else; nothing for the people's own."""
    if not origin:
        return []
    if origin == "quoted":
        quotes = [q for line in text.split("\n") if (q := quoted.parse(line)) is not None]
        return [Recalled(q.text, q.origin or _source(name, chat, at, "tool")) for q in quotes]
    if file_day(name.partition("#")[0]) is not None:
        return in_lines(text, name=name, chat=chat, at=at)
    return [Recalled(text, _source(name, chat, at, origin))]


def in_file(path: str, text: str, *, chat: str, at: datetime) -> list[Recalled]:
    """Others' words in lines of a memory file (`path` relative to memory/) read whole."""
    where = scope_of(path) or chat
    return in_text(text, origin=origin_of(path, text), name=path, chat=where, at=at)


def in_hits(hits: Iterable[Hit], *, chat: str) -> list[Recalled]:
    """Others' words among search hits (`# Relevant Memory`, `memory_search`)."""
    found: list[Recalled] = []
    for hit in hits:
        where = hit.scope or chat
        found += in_text(hit.text, origin=hit.origin, name=hit.path, chat=where, at=hit.at)
    return found


def in_items(items: Iterable[MemoryItem]) -> list[Recalled]:
    """Others' words among the items shown: an episode of a turn that carried them (a fact an
    owner kept from a quote is theirs now)."""
    return [
        Recalled(item.text, item.provenance)
        for item in items
        if item.type == "turn" and item.provenance is not None and item.provenance.via in _OTHERS
    ]


def in_lines(text: str, *, name: str, chat: str, at: datetime) -> list[Recalled]:
    """Others' words among the lines of a text the prompt shows (a day's note line that
    carried them, in `# Memory`; labelled: `bot.media.reading.carried`)."""
    lines = [(line, via) for line in text.split("\n") if (via := carried(line)) is not None]
    return [Recalled(line, _source(name, chat, at, via)) for line, via in lines]


def in_conversation(messages: Sequence[ChatMessage], *, said: Provenance) -> list[Recalled]:
    """Others' words among the conversation's turns: each that carried them, or whose answer
    drew on them (`ChatMessage.origin`), whole."""
    found: list[Recalled] = []
    for user, reply in turns(messages):
        origin = origin_of_turn(user)
        if origin:
            at = user.at or said.at
            source = _source("this conversation", said.chat, at, origin)
            found.append(Recalled(f"{user.content or ''}\n{reply}", source))
    return found


_OTHERS = frozenset({"document", "forwarded", "tool", "group"})


def _source(name: str, chat: str, at: datetime, via: str) -> Provenance:
    known = cast(Via, via) if via in _VIAS and via != "message" else "tool"
    return Provenance(by=name, chat=chat, at=at, via=known)
