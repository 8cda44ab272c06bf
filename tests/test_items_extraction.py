"""Code-aware extraction: shell commands, error messages, an error followed by its fix; and the
statements of a user's message that become episodic facts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.memory.items.code import find_code
from bot.memory.items.keeper import ItemKeeper
from bot.memory.items.statements import find_statements
from bot.memory.items.store import ItemStore
from bot.memory.items.turn import TurnMemoryEvent
from bot.models import GLOBAL_SCOPE, MemoryItem, MemoryLayer

AT = datetime(2026, 2, 7, 9, 0, tzinfo=UTC)
TRACEBACK = """Running the app fails:
```
Traceback (most recent call last):
  File "app.py", line 1, in <module>
    import requests
ModuleNotFoundError: No module named 'requests'
```"""
FIX = "Install it into your venv:\n```bash\n# once\npip install requests\n```"


# ----------------------------------------------------------------------------- commands


def test_commands_come_from_shell_blocks_and_dollar_lines() -> None:
    text = """Try this:
```bash
# update first
sudo apt-get update
docker compose up -d \\
  --build
```
or by hand:
$ systemctl restart nginx
```python
print("not a command")
```"""

    assert find_code(text).commands == (
        "sudo apt-get update",
        "docker compose up -d --build",
        "systemctl restart nginx",
    )


def test_a_console_transcript_gives_its_prompt_lines_not_its_output() -> None:
    text = "```console\n$ ls -la\ntotal 0\n$ git status\nnothing to commit\n```"

    found = find_code(text)

    assert found.commands == ("ls -la", "git status")
    assert found.blocks == ("$ ls -la\ntotal 0\n$ git status\nnothing to commit",)


def test_prose_has_no_commands_or_code() -> None:
    found = find_code("It costs $ 5 per month, and the error rate is low.")

    assert (found.commands, found.errors, found.has_code) == ((), (), False)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (TRACEBACK, "ModuleNotFoundError: No module named 'requests'"),
        ("npm run build\nError: Cannot find module 'vite'", "Error: Cannot find module 'vite'"),
        ("  error[E0382]: borrow of moved value", "error[E0382]: borrow of moved value"),
        ("fatal: not a git repository", "fatal: not a git repository"),
        ("make: *** [all] exited with code 2", "make: *** [all] exited with code 2"),
        ("bash: kubectl: command not found", "bash: kubectl: command not found"),
        ("java.lang.IllegalStateException: boom", "java.lang.IllegalStateException: boom"),
    ],
)
def test_error_lines_are_found(text: str, error: str) -> None:
    assert find_code(text).errors == (error,)


@pytest.mark.parametrize(
    "text",
    [
        "The job finished with exit code 0",
        "An Error: in the middle of a sentence is only a mention",
        "Errors are part of life.",
    ],
)
def test_a_success_or_a_mention_is_not_an_error(text: str) -> None:
    assert find_code(text).errors == ()


# ----------------------------------------------------------------------------- turns


@pytest.fixture
def writer(store: ItemStore) -> ItemKeeper:
    return ItemKeeper(store, now=lambda: AT)


def turn(user: str, reply: str, *, n: int, session: str = "telegram:42") -> TurnMemoryEvent:
    return TurnMemoryEvent(GLOBAL_SCOPE, session, f"t{n}", user, reply, AT + timedelta(minutes=n))


def procedures(store: ItemStore, kind: str) -> list[MemoryItem]:
    return [i for i in store.items(GLOBAL_SCOPE, MemoryLayer.PROCEDURAL) if i.type == kind]


async def test_commands_in_a_reply_become_procedures_and_repeat_into_confidence(
    writer: ItemKeeper, store: ItemStore
) -> None:
    reply = "Restart it:\n```bash\nsudo systemctl restart nginx\n```"

    await writer.keep_turn(turn("nginx is stuck", reply, n=1))
    await writer.keep_turn(turn("stuck again", reply, n=2))

    (command,) = procedures(store, "command")
    assert command.text == "sudo systemctl restart nginx"
    assert command.confidence == 0.75
    assert command.references == (
        "sessions/telegram%3A42#turn-t1",
        "sessions/telegram%3A42#turn-t2",
    )


async def test_an_error_then_a_fix_in_a_later_reply_makes_an_error_fix_item(
    writer: ItemKeeper, store: ItemStore
) -> None:
    await writer.keep_turn(turn(TRACEBACK, "Which Python do you run?", n=1))
    await writer.keep_turn(turn("3.11, in a venv", FIX, n=2))

    (error,) = procedures(store, "error")
    (fix,) = procedures(store, "error_fix")
    assert error.text == "ModuleNotFoundError: No module named 'requests'"
    assert fix.text == "ModuleNotFoundError: No module named 'requests' → pip install requests"
    assert fix.references == (f"item:{error.id}", "sessions/telegram%3A42#turn-t2")


async def test_a_fix_in_the_same_reply_as_the_error_counts(
    writer: ItemKeeper, store: ItemStore
) -> None:
    await writer.keep_turn(turn(TRACEBACK, FIX, n=1))

    (fix,) = procedures(store, "error_fix")
    assert fix.text.endswith("→ pip install requests")


async def test_a_fix_answers_an_error_only_once_until_it_is_seen_again(
    writer: ItemKeeper, store: ItemStore
) -> None:
    await writer.keep_turn(turn(TRACEBACK, FIX, n=1))
    await writer.keep_turn(turn("and now?", "```bash\nls\n```", n=2))
    assert len(procedures(store, "error_fix")) == 1

    await writer.keep_turn(turn(TRACEBACK, "Hmm.", n=3))
    await writer.keep_turn(turn("any idea?", "```bash\npython -m pip install requests\n```", n=4))

    fixes = sorted(i.text.split("→ ")[1] for i in procedures(store, "error_fix"))
    assert fixes == ["pip install requests", "python -m pip install requests"]


async def test_a_reply_that_shows_its_own_error_is_no_fix(
    writer: ItemKeeper, store: ItemStore
) -> None:
    await writer.keep_turn(turn(TRACEBACK, "Let me look.", n=1))
    failing = "```console\n$ pip install requests\nERROR: Could not find a version\n```"

    await writer.keep_turn(turn("go on", failing, n=2))

    assert procedures(store, "error_fix") == []
    assert {i.text for i in procedures(store, "error")} == {
        "ModuleNotFoundError: No module named 'requests'",
        "ERROR: Could not find a version",
    }


async def test_an_error_in_another_session_is_not_fixed_here(
    writer: ItemKeeper, store: ItemStore
) -> None:
    await writer.keep_turn(turn(TRACEBACK, "Odd.", n=1, session="telegram:7"))

    await writer.keep_turn(turn("unrelated", FIX, n=2))

    assert procedures(store, "error_fix") == []


async def test_code_aware_extraction_can_be_switched_off(store: ItemStore) -> None:
    writer = ItemKeeper(store, now=lambda: AT, code_aware=False)

    await writer.keep_turn(turn(TRACEBACK, FIX, n=1))

    assert store.items(GLOBAL_SCOPE, MemoryLayer.PROCEDURAL) == []
    assert len(store.items(GLOBAL_SCOPE, MemoryLayer.EPISODIC)) == 1


# ----------------------------------------------------------------------------- statements


def test_statements_are_typed_and_questions_are_not_statements() -> None:
    text = (
        "Hi! I prefer dark roast coffee. Do I like tea? Never book flights before 9. "
        "My sister's name is Ana. Remember that the wifi password is tulip42. It is late."
    )

    found = [(s.type, s.text, s.confidence) for s in find_statements(text)]

    assert found == [
        ("preference", "I prefer dark roast coffee.", 0.5),
        ("constraint", "Never book flights before 9.", 0.5),
        ("fact", "My sister's name is Ana.", 0.5),
        ("fact", "Remember that the wifi password is tulip42.", 0.8),
    ]
