"""What a message's attachment becomes for the turn (`Reading`), the one-line refusal
(`Unreadable`), and the `KindReader` protocol each kind's module implements."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bot.models import Attachment, Image, Inbound
from bot.pipeline import StopTurn

if TYPE_CHECKING:
    from bot.media.files import MessageFiles


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


class KindReader(Protocol):
    """Reads one kind of attachment (`MediaReader` dispatches by `Attachment.kind`)."""

    async def read(
        self, inbound: Inbound, attachment: Attachment, files: MessageFiles
    ) -> Reading: ...
