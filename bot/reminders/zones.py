"""`Zones`: the time zone each person reads times in, set with `/timezone Europe/Lisbon` and
kept in `state/timezones.json` ({"version": 1, "people": {"1001": "Europe/Lisbon"}}), a
document of the workspace (`documents`: the replicas share it); anyone who set none has the
bot's (`BOT_TIMEZONE`)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import structlog

from bot import versioned
from bot.storage.files import ON_DISK, Documents, Locks

log = structlog.get_logger(__name__)
FORMAT_VERSION = 1


def known_zone(name: str) -> ZoneInfo | None:
    """The zone called `name` ("Europe/Lisbon"), or None when there is none by that name."""
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        return None


@dataclass(eq=False)
class Zones:
    path: Path
    locks: Locks
    _: KW_ONLY
    default: str
    documents: Documents = ON_DISK

    async def of(self, user_id: int) -> str:
        people = await asyncio.to_thread(self._read)
        zone = people.get(str(user_id))
        return zone if zone and known_zone(zone) else self.default

    async def set(self, user_id: int, zone: str) -> None:
        async with self.locks.hold(self.path):
            people = await asyncio.to_thread(self._read, True)
            people[str(user_id)] = zone
            document = versioned.encode(
                FORMAT_VERSION, {"people": people}, indent=1, ascii_only=True
            )
            await asyncio.to_thread(self.documents.write, self.path, document.encode("utf-8"))

    def _read(self, strict: bool = False) -> dict[str, str]:
        """Everyone's zone; a file that cannot be read is none (`strict`: `ValueError`, so
        nothing is written over a person's edit)."""
        try:
            data = self.documents.read(self.path)
            if data is None:
                return {}
            people = json.loads(data.decode("utf-8"))["people"]
            return {str(k): str(v) for k, v in people.items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            if strict:
                raise ValueError(f"{self.path} cannot be read ({exc}); fix or move it") from exc
            log.warning("timezones_unreadable", path=str(self.path), reason=str(exc))
            return {}
