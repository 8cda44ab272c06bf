"""`Commands`: the handler for each command name, and the hint for an unknown one."""

from __future__ import annotations

from collections.abc import Sequence

from bot.models import Inbound
from bot.turn.commands.handler import Command, Handler, Progress, Quiet, Reply


class Commands:
    def __init__(self, handlers: Sequence[Handler]) -> None:
        self._handlers = {name: handler for handler in handlers for name in handler.names}

    def add(self, handler: Handler) -> None:
        """A handler from outside this package (`bot.reminders`)."""
        self._handlers.update(dict.fromkeys(handler.names, handler))

    def takes_time(self, command: Command) -> bool:
        """A command that may take seconds: the channel shows typing from its start and
        `Progress` says what it is doing."""
        handler = self._handlers.get(command.name)
        return handler is not None and handler.slow

    async def run(
        self, command: Command, inbound: Inbound, *, progress: Progress | None = None
    ) -> Reply:
        """What to answer: the handler's, or a hint for an unknown command."""
        handler = self._handlers.get(command.name)
        if handler is None:
            return Reply(f"Unknown command /{command.name}. /help lists what I understand.")
        answer = await handler.answer(inbound, command.args, progress or Quiet())
        return answer if isinstance(answer, Reply) else Reply(answer)
