"""`LiveReply` (bot.turn.live) against a recording draft, the channel's seam: what is shown, how
often, and that a draft that fails never fails the turn."""

from __future__ import annotations

import asyncio

import pytest

from bot.turn.live import LiveReply, live_reply
from tests.talk import RecordingReplier


class RecordingDraft:
    def __init__(self, *, interval: float = 0.05, fails: bool = False) -> None:
        self.interval = interval
        self.fails = fails
        self.shown: list[str] = []
        self.times: list[float] = []
        self.closed = 0
        self.handed: list[str] = []

    async def show(self, text: str) -> None:
        self.shown.append(text)
        self.times.append(asyncio.get_running_loop().time())
        if self.fails:
            raise RuntimeError("the channel broke")

    async def hand_over(self, reply: str) -> None:
        self.handed.append(reply)

    async def close(self) -> None:
        self.closed += 1
        if self.fails:
            raise RuntimeError("the channel broke")


async def feed(live: LiveReply, pieces: list[str], *, pause: float) -> None:
    for piece in pieces:
        live.add(piece)
        await asyncio.sleep(pause)


async def test_text_is_shown_as_it_grows_at_most_once_per_interval() -> None:
    draft = RecordingDraft(interval=0.1)
    async with LiveReply(draft) as live:
        live.restart(calls_possible=False)
        await feed(live, [f"{n} " for n in range(20)], pause=0.01)
        await asyncio.sleep(0.15)

    assert len(draft.shown) >= 2
    assert all(b - a >= 0.09 for a, b in zip(draft.times, draft.times[1:], strict=False))
    assert draft.shown[0] == "0" and draft.shown[-1].endswith("19")
    assert draft.closed == 1


async def test_a_new_step_starts_the_text_again_and_a_call_as_text_is_never_shown() -> None:
    draft = RecordingDraft(interval=0.01)
    async with LiveReply(draft) as live:
        live.restart(calls_possible=True)
        await feed(live, ["Let me ", "check."], pause=0.1)
        live.restart(calls_possible=True)
        await feed(live, ['{"name": ', '"clock"}'], pause=0.1)
        live.restart(calls_possible=False)
        await feed(live, ["It is ", "noon."], pause=0.1)

    assert draft.shown == ["Let me", "Let me check.", "It is", "It is noon."]


async def test_nothing_shown_nothing_closed() -> None:
    draft = RecordingDraft()
    async with LiveReply(draft) as live:
        live.restart(calls_possible=True)
        await feed(live, ['{"name"'], pause=0.03)

    assert draft.shown == [] and draft.closed == 0


async def test_a_failing_draft_never_fails_the_turn() -> None:
    draft = RecordingDraft(interval=0.01, fails=True)
    async with LiveReply(draft) as live:
        live.restart(calls_possible=False)
        await feed(live, ["one ", "two"], pause=0.1)

    assert draft.shown == ["one", "one two"] and draft.closed == 1


async def test_a_stopped_turn_still_closes_its_draft() -> None:
    draft = RecordingDraft(interval=0.01)

    async def turn() -> None:
        async with LiveReply(draft) as live:
            live.restart(calls_possible=False)
            live.add("half an answer")
            await asyncio.sleep(10)

    task = asyncio.create_task(turn())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert draft.shown == ["half an answer"] and draft.closed == 1


async def test_a_replier_without_drafts_gets_no_live_reply() -> None:
    async with live_reply(RecordingReplier()) as live:
        assert live is None


async def test_a_turn_ending_in_a_reply_hands_its_draft_over_to_it() -> None:
    draft = RecordingDraft(interval=0.01)
    async with LiveReply(draft) as live:
        live.restart(calls_possible=False)
        await feed(live, ["The answer ", "so far"], pause=0.05)
        live.ends_in("The answer, formatted.")

    assert draft.handed == ["The answer, formatted."] and draft.closed == 0


async def test_a_turn_broken_after_its_reply_was_known_closes_its_draft() -> None:
    draft = RecordingDraft(interval=0.01)
    with pytest.raises(RuntimeError):
        async with LiveReply(draft) as live:
            live.restart(calls_possible=False)
            await feed(live, ["half"], pause=0.05)
            live.ends_in("half")
            raise RuntimeError("broke")

    assert draft.handed == [] and draft.closed == 1
