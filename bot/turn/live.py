"""The reply shown while the model writes it: `LiveReply`, and the `Draft` a channel shows it in.

    tool loop ──pieces──▶ LiveReply ──at most once per `Draft.interval`──▶ Draft.show(text)

What is shown is the current answer's text (a new step of the tool loop starts it again), with
memory tags and anything that may be the start of one held back (`bot.memory.notes.tags`), and
nothing while it may still be tool calls written as text (`bot.llm.text_calls`).

The final, formatted reply goes through the ledger (`Delivery`) as before. When the turn ends
in a reply (`ends_in`: answered, or what failed), the draft is handed over before the reply is
recorded: the channel may let the reply take its place (Telegram edits its preview message into
the reply's first part, `Draft.hand_over`), so one message shows the answer from its first
words to its end. A turn that ends without one (stopped, broken) closes the draft (Telegram
deletes a preview message). Showing is best effort: a draft that fails is logged and the turn
goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Protocol, runtime_checkable

import structlog

from bot.background import OwnedTask
from bot.llm.text_calls import may_be_calls
from bot.memory.notes.tags import shown_while_written

log = structlog.get_logger(__name__)


class Draft(Protocol):
    """Where a channel shows one reply while it is written."""

    interval: float  # seconds between two showings the channel allows

    async def show(self, text: str) -> None:
        """Show `text` as the reply so far, in place of what was shown before."""
        ...

    async def hand_over(self, reply: str) -> None:
        """The turn ended in `reply`: what was shown becomes it where the channel can (its
        replier then sends `reply`'s first part in its place), or is taken away."""
        ...

    async def close(self) -> None:
        """Take what was shown away: the turn ended without a reply to put in its place."""
        ...


@runtime_checkable
class Drafts(Protocol):
    """A replier that can show a reply while it is written (one draft per turn)."""

    def draft(self) -> Draft: ...


def live_reply(replier: object) -> AbstractAsyncContextManager[LiveReply | None]:
    """A `LiveReply` for the turn when the replier `Drafts`, else None."""
    if isinstance(replier, Drafts):
        return LiveReply(replier.draft())
    return contextlib.nullcontext()


class LiveReply:
    """Shows the model's text as it comes, while the block runs; after, hands the draft over
    to the reply the turn `ends_in`, or closes it."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self._reply = ""  # what the turn ends in ("": nothing yet)
        self._pieces: list[str] = []
        self._calls_possible = False
        self._shown = ""
        self._changed = asyncio.Event()
        self._task = OwnedTask("live-reply")

    def restart(self, *, calls_possible: bool) -> None:
        self._pieces.clear()
        self._calls_possible = calls_possible

    def add(self, piece: str) -> None:
        self._pieces.append(piece)
        self._changed.set()

    def ends_in(self, reply: str) -> None:
        """The reply the turn ends in, which may take the draft's place."""
        self._reply = reply

    def visible(self) -> str:
        """What may be shown of the current answer so far ("" for nothing yet)."""
        text = "".join(self._pieces)
        if self._calls_possible and may_be_calls(text):
            return ""
        return shown_while_written(text)

    async def __aenter__(self) -> LiveReply:
        self._task.start(self._show_changes())
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self._task.stop()
        if not self._shown:
            return
        try:
            if kind is None and self._reply:
                await self.draft.hand_over(self._reply)
            else:
                await self.draft.close()
        except Exception:
            log.warning("draft_close_failed", exc_info=True)

    async def _show_changes(self) -> None:
        """Show the visible text whenever it changed, then wait out the interval."""
        while True:
            await self._changed.wait()
            self._changed.clear()
            text = self.visible()
            if not text or text == self._shown:
                continue
            self._shown = text  # from now on the draft is closed at the end, shown or not
            try:
                await self.draft.show(text)
            except Exception:
                log.warning("draft_show_failed", exc_info=True)
            await asyncio.sleep(self.draft.interval)
