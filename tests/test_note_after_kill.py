"""After a kill, every answered message has exactly one daily-note line: a turn whose session
was saved just before the kill (its line perhaps not written) is noted when the message comes
again, and never twice."""

from __future__ import annotations

from pathlib import Path

from bot.app import App
from bot.models import GLOBAL_SCOPE
from tests.fakes.openai_api import FakeOpenAI, Reply
from tests.talk import handle, message


def note_lines(app: App, text: str) -> list[str]:
    path = app.workspace.daily_note_path(GLOBAL_SCOPE, app.now().date())
    lines = path.read_text().splitlines() if path.exists() else []
    return [line for line in lines if f"User: {text} |" in line]


def drop_lines(app: App, text: str) -> None:
    """The note as a kill between the session's save and the line's append leaves it."""
    path = app.workspace.daily_note_path(GLOBAL_SCOPE, app.now().date())
    kept = [line for line in path.read_text().splitlines() if f"User: {text} |" not in line]
    path.write_text("".join(f"{line}\n" for line in kept))


async def test_a_turn_saved_before_its_note_line_is_noted_once_on_restart(
    app: App, fake_openai: FakeOpenAI, workspace: Path
) -> None:
    fake_openai.script(Reply("Noted, the boat."))
    inbound = message("where is the boat?", at=app.now())
    assert await handle(app, inbound) == ["Noted, the boat."]
    drop_lines(app, "where is the boat?")

    assert await handle(app, inbound) == ["Noted, the boat."]  # journaled again after a kill
    assert await handle(app, inbound) == ["Noted, the boat."]

    [line] = note_lines(app, "where is the boat?")
    assert line.endswith("User: where is the boat? | Assistant: Noted, the boat.")
    assert fake_openai.calls == 1  # the answer came from the session, never asked again
