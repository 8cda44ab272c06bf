"""Whose words a turn's memory would be: the person who wrote to the bot, or someone else.

Only the person talking to the bot in this turn (an owner or a paired user: nobody else gets a
turn) is trusted. A turn that also carried other text — a forwarded message (a forwarded voice
note's transcript too), a document's text, what other group members said meanwhile, a tool's
output (other than the memory tools and the clock), or recalled quoted material — may have put
words in the model's mouth, so what it stores is quoted material (`notes.quoted`) until an owner
keeps it, never a fact in MEMORY.md or a semantic item.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from bot.memory.notes.quoted import QUOTE_MARK
from bot.models import Inbound, Provenance, Via

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


@dataclass(frozen=True)
class TurnOrigin:
    said: Provenance  # who wrote this turn's message, where, when, as what
    quoted: Via | None  # the other text the turn carried (None: only the person's own words)

    @property
    def trusted(self) -> bool:
        return self.quoted is None

    @property
    def source(self) -> Provenance:
        """What the turn's memory is attributed to: the person's words, or the material."""
        if self.quoted is None:
            return self.said
        return Provenance(by=self.said.by, chat=self.said.chat, at=self.said.at, via=self.quoted)


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
) -> TurnOrigin:
    said = replace(said_by(inbound), at=at)
    return TurnOrigin(said, _quoted(inbound, attached, chatter, tool_results))


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
