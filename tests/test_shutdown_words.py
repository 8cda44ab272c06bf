"""A stop while a reply is being made says so (a person pressed Ctrl-C on `make run`), in
sentences: how many replies it finishes and how long it waits at most, then what it left for
the next start."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from tests.fakes.openai_api import FakeOpenAI, Hang
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import OWNER, make_settings, running_bot


async def test_a_stop_during_a_reply_says_it_is_finishing_it(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Hang())
    settings = make_settings(tmp_path / "ws", telegram=fake_telegram, openai=fake_openai)
    quick = settings.telegram.model_copy(update={"shutdown_grace": 0.5})
    settings = settings.model_copy(update={"telegram": quick})
    with capture_logs() as logs:
        async with running_bot(settings, fake_telegram):
            fake_telegram.push_text(OWNER, OWNER, "think hard")
            await fake_openai.wait_until_hanging()

    events = [e["event"] for e in logs]
    [stopping] = [e for e in logs if e["event"].startswith("Stopping:")]
    assert stopping["log_level"] == "warning"
    assert (stopping["replies"], stopping["waiting_at_most"]) == (1, "0.5 s")
    # said as a sentence, not as log keys
    assert stopping["event"] == "Stopping: finishing 1 reply being written (0.5 s at most)"
    [stopped] = [e for e in events if e.startswith("Stopped:")]
    assert events.index(stopping["event"]) < events.index(stopped)
    assert stopped == "Stopped: 1 message left to answer at the next start"
