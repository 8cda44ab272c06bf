"""The heartbeat: a file (`state/heartbeat`) whose modification time the running bot moves on
after every poll of its channel, and how old it is — what `python -m bot health` (Docker's
HEALTHCHECK) reads: a cheap local check that the process is alive and polling, no network.

A bot that cannot go on without a person (its token was rejected) but is told to wait rather
than exit writes why into the file (`stop_beating`): `health` says it, and the next start
removes it (`reset`)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from bot.storage.files import atomic_write_text


@dataclass(eq=False)
class Heartbeat:
    path: Path

    def beat(self) -> None:
        """Now (blocking: call it in a thread). The file is empty; only its time counts."""
        try:
            os.utime(self.path)
        except FileNotFoundError:
            atomic_write_text(self.path, "")

    def reset(self) -> None:
        """No heartbeat (and no reason) until the first poll of this start."""
        self.path.unlink(missing_ok=True)

    def stop_beating(self, reason: str) -> None:
        """The bot waits without polling: `reason` is what `health` reports."""
        atomic_write_text(self.path, reason + "\n")

    def reason(self) -> str | None:
        """Why the bot stopped polling, when it said (`stop_beating`)."""
        try:
            return self.path.read_text(encoding="utf-8").strip() or None
        except (FileNotFoundError, UnicodeDecodeError):
            return None

    def age(self) -> float | None:
        """Seconds since the last beat; None when there was none."""
        try:
            return max(0.0, time.time() - self.path.stat().st_mtime)
        except FileNotFoundError:
            return None
