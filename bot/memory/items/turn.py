"""What a finished turn becomes as memory items (`TurnMemoryEvent`).

- one EPISODIC "turn" item: `User: … | Assistant: …`, folded like a daily note line;
- an EPISODIC item for each statement in the user's message (see `statements`);
- code-aware, PROCEDURAL: an "error" item for each error line in the user's message or the
  reply, a "command" item for each shell command in the reply, and an "error_fix" item when the
  reply fixes an error. A reply is a fix when it holds a command or code and no error of its own;
  it fixes the errors the user's message showed or, when it showed none, the most recent error of
  the same session that no fix has answered since it was last seen (`is_open`).

Every item references the turn, `sessions/<key>#turn-<id>`; an error_fix also references its
error, `item:<id>`. Pure functions: `item_keeper` stores what they make.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from bot.memory.items.code import CodeFindings, unfenced
from bot.memory.items.rules import new_item
from bot.memory.items.statements import find_statements
from bot.models import MemoryItem, MemoryLayer, MemoryScope, Provenance
from bot.storage.workspace import encode_key

FIX_CHARS = 300
FIX_COMMANDS = 3  # commands quoted in a fix
FIX_LINES = 3  # lines of code quoted in a fix when it has no command


@dataclass(frozen=True)
class TurnMemoryEvent:
    """A finished turn, as system 50 hands it over."""

    scope: MemoryScope
    session_key: str
    turn_id: str
    user_text: str
    reply: str
    at: datetime
    tool_names: tuple[str, ...] = ()
    origin: Provenance | None = None  # who said it, as what: every item of the turn carries it
    trusted: bool = True  # False: the turn carried others' words (`bot.memory.trust`)
    carried: Provenance | None = None  # others' words its answer drew on: the episode's source
    joins: int = 1  # messages `user_text` joins (`Inbound.joins`): its note line keeps them all


def session_reference(session_key: str) -> str:
    return f"sessions/{encode_key(session_key)}"


def turn_reference(session_key: str, turn_id: str) -> str:
    return f"{session_reference(session_key)}#turn-{turn_id}"


def episode(event: TurnMemoryEvent, *, user_chars: int, assistant_chars: int) -> MemoryItem:
    said, answered = _fold(event.user_text, user_chars), _fold(event.reply, assistant_chars)
    salience = 0.4 + 0.1 * bool(event.tool_names) + 0.1 * ("```" in event.reply)
    item = _item(
        event,
        MemoryLayer.EPISODIC,
        "turn",
        f"User: {said} | Assistant: {answered}",
        confidence=0.5,
        salience=salience,
        tags=[f"tool:{name}" for name in sorted(set(event.tool_names))],
    )
    return replace(item, provenance=event.carried) if event.carried else item


def statement_items(event: TurnMemoryEvent) -> list[MemoryItem]:
    """The statements of the user's message (none from a turn that carried others' words: a
    forwarded "remember that …" is not the person's own, and would be promoted)."""
    if not event.trusted:
        return []
    return [
        _item(event, MemoryLayer.EPISODIC, s.type, s.text, confidence=s.confidence, salience=0.6)
        for s in find_statements(event.user_text)
    ]


def error_items(event: TurnMemoryEvent, errors: tuple[str, ...]) -> list[MemoryItem]:
    return [
        _item(event, MemoryLayer.PROCEDURAL, "error", e, confidence=0.5, salience=0.5)
        for e in errors
    ]


def command_items(event: TurnMemoryEvent, reply: CodeFindings) -> list[MemoryItem]:
    return [
        _item(event, MemoryLayer.PROCEDURAL, "command", c, confidence=0.5, salience=0.4)
        for c in reply.commands
    ]


def fix_text(reply: CodeFindings) -> str | None:
    """What the reply offers as a fix, or None when it is not one."""
    if reply.errors or not reply.has_code:
        return None
    if reply.commands:
        return "; ".join(reply.commands[:FIX_COMMANDS])[:FIX_CHARS]
    lines = [line.strip() for block in reply.blocks for line in block.splitlines()]
    return " ⏎ ".join([line for line in lines if line][:FIX_LINES])[:FIX_CHARS] or None


def error_fix_item(event: TurnMemoryEvent, error: MemoryItem, fix: str) -> MemoryItem:
    return _item(
        event,
        MemoryLayer.PROCEDURAL,
        "error_fix",
        f"{error.text} → {fix}",
        confidence=0.6,
        salience=0.7,
        references=[f"item:{error.id}"],
    )


def is_open(error: MemoryItem, fixes: list[MemoryItem], *, session_key: str) -> bool:
    """An error seen in this session that no fix has answered since it was last seen."""
    prefix = session_reference(session_key) + "#"
    if error.type != "error" or not any(r.startswith(prefix) for r in error.references):
        return False
    link = f"item:{error.id}"
    return not any(link in fix.references and fix.updated_at >= error.updated_at for fix in fixes)


def _item(
    event: TurnMemoryEvent,
    layer: MemoryLayer,
    type: str,
    text: str,
    *,
    confidence: float,
    salience: float,
    tags: list[str] | None = None,
    references: list[str] | None = None,
) -> MemoryItem:
    item = new_item(
        layer,
        type,
        text,
        scope=event.scope,
        at=event.at,
        confidence=confidence,
        salience=salience,
        tags=tags or (),
        references=[*(references or ()), turn_reference(event.session_key, event.turn_id)],
    )
    return replace(item, provenance=event.origin)


def _fold(text: str, limit: int) -> str:
    flat = " ".join(unfenced(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
