"""What /status says: the conversation in plain words, and more with `/status verbose` (or -v).

    Messages: 12
    Context: 3,210 of 32,768 tokens (10%)
    Last compaction: 2026-11-21 09:30 (1 in this conversation)
    Last consolidation: none yet
    Model: gpt-4o-mini

The verbose form adds where the window comes from, the estimate against the provider's last
reported count, and the pipeline's systems by order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

VERBOSE = frozenset({"verbose", "-v", "--verbose", "v", "all"})
WHEN = "%Y-%m-%d %H:%M"
HINT_VERBOSE = "/status verbose shows the details."


@dataclass(frozen=True)
class Status:
    messages: int
    tokens: int  # the next prompt, estimated (`PromptMeter`)
    window: int  # the model's context window
    window_source: str  # where `window` comes from, for a person to read
    reported: int  # the last prompt's tokens as the provider reported them; 0: none yet
    compactions: int  # in this conversation
    last_compaction: datetime | None  # in this chat's memory, any conversation
    last_consolidation: datetime | None
    model: str
    pipeline: Sequence[str]
    running: bool  # a reply is in progress


def wants_verbose(args: str) -> bool:
    return args.strip().lower() in VERBOSE


def render(status: Status, *, verbose: bool) -> str:
    lines = [
        f"Messages: {status.messages}",
        f"Context: {status.tokens:,} of {status.window:,} tokens ({_share(status)})",
        f"Last compaction: {_when(status.last_compaction)}" + _count(status.compactions),
        f"Last consolidation: {_when(status.last_consolidation)}",
        f"Model: {status.model}",
    ]
    if verbose:
        lines += _details(status)
    if status.running:
        lines.append("A reply is in progress (/stop cancels it).")
    if not verbose:
        lines.append(HINT_VERBOSE)
    return "\n".join(lines)


def _details(status: Status) -> list[str]:
    window = f"{status.window:,}"
    reported = (
        f"Last prompt (reported): {status.reported:,} / {window} tokens"
        if status.reported
        else "Last prompt: none yet"
    )
    return [
        f"Context window: {window} tokens ({status.window_source})",
        f"Prompt (estimated): ~{status.tokens:,} / {window} tokens",
        reported,
        f"Pipeline: {', '.join(status.pipeline)}",
    ]


def _share(status: Status) -> str:
    share = status.tokens / status.window if status.window else 0.0
    return "under 1%" if 0 < share < 0.005 else f"{share:.0%}"


def _when(at: datetime | None) -> str:
    return f"{at:{WHEN}}" if at else "none yet"


def _count(compactions: int) -> str:
    return f" ({compactions} in this conversation)" if compactions else ""
