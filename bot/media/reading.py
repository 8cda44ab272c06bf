"""What a message's attachment becomes for the turn (`Reading`), and the one-line refusal
(`Unreadable`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.models import Image
from bot.pipeline import StopTurn


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
