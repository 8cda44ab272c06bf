"""Pipeline: order, duplicate orders, StopTurn, BestEffort."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.errors import PipelineError
from bot.models import GLOBAL_SCOPE, ChatMessage, Inbound, Session
from bot.pipeline import BestEffort, Pipeline, StopTurn, TurnContext

NOW = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)


def make_ctx() -> TurnContext:
    inbound = Inbound(id="t:1", channel="t", chat_id=1, user_id=1, text="hi", received_at=NOW)
    return TurnContext(
        inbound=inbound,
        turn_id="abc",
        scope=GLOBAL_SCOPE,
        session=Session(key="t:1", messages=(), created_at=NOW, updated_at=NOW),
        user_message=ChatMessage(role="user", content="hi"),
    )


class Recorder:
    def __init__(self, order: int, trail: list[int], *, fail: Exception | None = None) -> None:
        self.order = order
        self.name = f"rec{order}"
        self.trail = trail
        self.fail = fail

    async def process(self, ctx: TurnContext) -> None:
        self.trail.append(self.order)
        if self.fail is not None:
            raise self.fail


async def test_systems_run_in_ascending_order() -> None:
    trail: list[int] = []
    pipeline = Pipeline([Recorder(50, trail), Recorder(18, trail), Recorder(30, trail)])
    await pipeline.run(make_ctx())
    assert trail == [18, 30, 50]
    assert pipeline.describe() == ["18 rec18", "30 rec30", "50 rec50"]


def test_duplicate_orders_fail_at_start() -> None:
    with pytest.raises(PipelineError, match="30"):
        Pipeline([Recorder(30, []), Recorder(30, [])])


async def test_best_effort_logs_and_continues() -> None:
    trail: list[int] = []
    pipeline = Pipeline(
        [BestEffort(Recorder(50, trail, fail=OSError("disk full"))), Recorder(55, trail)]
    )
    await pipeline.run(make_ctx())
    assert trail == [50, 55]


async def test_stop_turn_passes_through_best_effort_and_ends_the_turn() -> None:
    trail: list[int] = []
    pipeline = Pipeline(
        [BestEffort(Recorder(20, trail, fail=StopTurn("bye"))), Recorder(30, trail)]
    )
    with pytest.raises(StopTurn) as stopped:
        await pipeline.run(make_ctx())
    assert stopped.value.reply == "bye"
    assert trail == [20]


async def test_an_essential_system_failure_propagates() -> None:
    pipeline = Pipeline([Recorder(30, [], fail=RuntimeError("boom"))])
    with pytest.raises(RuntimeError, match="boom"):
        await pipeline.run(make_ctx())
