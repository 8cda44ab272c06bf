"""What a message's attachment becomes for the turn (`Reading`), the one-line refusal
(`Unreadable`), and the labels that mark others' words in what the session and the notes keep
(`FORWARDED`, `DOCUMENT`: `carried` tells a text that holds one)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.models import Image, Via
from bot.pipeline import StopTurn

FORWARDED = "[forwarded]"  # before a forwarded message's text: someone else's words
DOCUMENT = "[document: "  # opens a document's line: `[document: name.pdf, 12 pages] caption`


def carried(text: str) -> Via | None:
    """What others' words a message's text (as the session or a daily note keeps it) says it
    carried: "forwarded", "document", or None. A person who types a label themselves only
    makes their own words count as someone else's."""
    if FORWARDED in text:
        return "forwarded"
    return "document" if DOCUMENT in text else None


@dataclass(frozen=True)
class Reading:
    """The message as the turn reads it."""

    text: str  # as the session and the daily note keep it: "[voice] …", "[photo: caption]"
    images: tuple[Image, ...] = ()  # shown to the model with this turn's message only
    attached: str = ""  # a document's text: shown to the model with this turn's message only
    written: tuple[Path, ...] = ()  # memory files the reading wrote (a document's text): indexed


class Unreadable(StopTurn):
    """An attachment the turn cannot read: its one line is the reply, and the model is not
    called. Whatever was fetched stays kept in the workspace."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
