"""A conversation the model keeps failing on: after the same persistent error several turns in a
row, it is closed and a new one started (seed 004's hard recovery), instead of the same
"…/new to start over" on every turn.

    Breakdowns.failed(key, kind) ─▶ True on the `limit`-th failure of one kind in a row
    Breakdowns.restart(session, scope, kind) ─▶ Renewal
        └─ the conversation closed as /new closes it (`bot.conversation.closing`: consolidated
            in the background, archived), the new one empty; the notice says why

Persistent kinds are those a new conversation may cure: the provider refusing the request
(HTTP 400 and other 4xx: a message it cannot take, a history it will not read) and a
conversation that does not fit the window even after compaction. A passing failure (busy,
rate-limited, timed out, unreachable) or one only a setting cures (the key, the model's name)
never counts; any answer clears the count. The count is the process's (a restart starts it
again).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import structlog

from bot.conversation.closing import ConversationClose
from bot.conversation.renewal import Renewal
from bot.errors import LLMCause, LLMError
from bot.models import MemoryScope, Session

log = structlog.get_logger(__name__)

PERSISTENT = frozenset({LLMCause.REFUSED, LLMCause.OVERFLOW})
OVERFLOW_KIND = "too long for the model's window"


def kind_of(error: LLMError) -> str | None:
    """The failure's kind when a new conversation may cure it ("request refused (HTTP 400)"),
    else None."""
    if error.cause not in PERSISTENT:
        return None
    if error.cause is LLMCause.OVERFLOW:
        return OVERFLOW_KIND
    return f"{error.cause}" + (f" (HTTP {error.status})" if error.status else "")


class Breakdowns:
    def __init__(
        self, closing: ConversationClose, *, limit: int, now: Callable[[], datetime]
    ) -> None:
        self.closing = closing
        self.limit = limit  # failures of one kind in a row; 0: never restart
        self.now = now
        self._failures: dict[str, tuple[str, int]] = {}  # session key → (kind, in a row)

    def failed(self, key: str, kind: str) -> bool:
        """Count a failure of `kind`; True when it is the `limit`-th of that kind in a row."""
        last, count = self._failures.get(key, (kind, 0))
        count = count + 1 if last == kind else 1
        self._failures[key] = (kind, count)
        return 0 < self.limit <= count

    def answered(self, key: str) -> None:
        self._failures.pop(key, None)

    async def restart(self, session: Session, scope: MemoryScope, *, kind: str) -> Renewal:
        """Close `session` (consolidated in the background, archived) and open an empty one."""
        self._failures.pop(session.key, None)
        log.warning("session_restarted", kind=kind, failures=self.limit)
        closed = await self.closing.close(
            session, scope, at=self.now(), wait=False, reason=f"the model failed: {kind}"
        )
        return Renewal(session=closed.session, notice=restart_notice(kind, self.limit))


def restart_notice(kind: str, times: int) -> str:
    return (
        f"The model failed on our conversation {times} times in a row ({kind}), so I started a "
        "new one. The old one is archived and summed up into memory; your memory stays."
    )
