"""No message lost, none answered twice, none asked of the model again once its answer was
saved, each noted once in the daily notes: bursts from several chats with SIGKILL and SIGTERM
at random points (`tests/crash.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crash import crash_run


@pytest.mark.serial  # its kill windows are timed: `make test` runs it alone
@pytest.mark.timeout(240)
async def test_kills_and_terms_at_random_points_lose_nothing_and_repeat_nothing(
    tmp_path: Path,
) -> None:
    figures = await crash_run(tmp_path, chats=3, messages=45, stops=6, sigterm_every=3, seed=7)

    assert (figures.kills, figures.terms) == (4, 2)
    assert figures.lost == 0, figures.line()
    assert figures.duplicated == 0, figures.line()
    assert figures.in_flight <= figures.kills, figures.line()  # the window no record closes
    assert figures.recalled == 0, figures.line()
    assert figures.extra_calls <= figures.kills * figures.chats, figures.line()
    assert figures.broken_files == []
    assert figures.history_problems == []
    assert (figures.unnoted, figures.noted_twice) == (0, 0), figures.line()
    assert figures.term_exit_codes == [0, 0, 0]


@pytest.mark.serial  # its kill windows are timed: `make test` runs it alone
@pytest.mark.timeout(240)
async def test_follow_ups_answered_together_stay_in_order_and_noted_through_kills(
    tmp_path: Path,
) -> None:
    """The default debounce, a private chat, a group and a forum topic (issue 36: a reply out
    of order in the group and the topic; merged turns' note lines that lost messages' words)."""
    figures = await crash_run(
        tmp_path, messages=60, stops=6, sigterm_every=3, seed=3, together=True
    )

    assert figures.lost == 0, figures.line()
    assert figures.duplicated == 0, figures.line()
    assert figures.in_flight <= figures.kills, figures.line()
    assert figures.out_of_order == 0, figures.line()
    assert figures.recalled == 0, figures.line()
    assert (figures.unnoted, figures.noted_twice) == (0, 0), figures.line()
    assert figures.broken_files == []
