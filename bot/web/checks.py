"""What the Health page runs: doctor's checks as the command line hands them over
(`bot.cli.doctor.findings`), each a name and a finding (its level and its text, secrets
scrubbed). A protocol only, so that the app takes them without importing the command line."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Protocol


class Checked(Protocol):
    """One check's finding (`bot.cli.findings.Finding`)."""

    @property
    def level(self) -> str: ...

    @property
    def text(self) -> str: ...


Checks = Callable[[], AsyncIterator[tuple[str, Checked]]]
