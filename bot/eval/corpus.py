"""A dataset as the bot would have stored it: exchanges, daily notes, and the way back from a
hit to the turns it shows.

Each conversation is one chat (scope key `eval:<conversation id>`, also its session key). When
the dataset names its two speakers, each turn is `Name: text`, as a group's message is stored
(`bot.conversation.speakers`), so a question that names someone finds what they said. Its
turns are paired as system 55 sees them — a user turn and the assistant turn after it make one
`Exchange` (a turn without its partner is an exchange alone) — and each exchange is also a
daily-note line (`bot.memory.notes.daily.note_line`, the bot's default fold lengths) in the chat's
folder, `chats/<key>/<session date>.md`. Exchange `n` of a session is at 09:00 + 2n minutes.

Every indexed text (a note file, an exchange) is a `SourceText`: the text and the character
span each turn occupies in it. A hit shows a window of its chunk (the snippet); a turn counts
as covered by the hit when at least half of its span lies in that window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time, timedelta

from bot.conversation import speakers
from bot.eval.dataset import Conversation, Dataset, Session, Turn
from bot.index import Exchange, Hit
from bot.memory.notes.daily import note_line
from bot.models import MemoryScope
from bot.storage.workspace import Workspace

CHAT_PREFIX = "eval:"
FIRST_EXCHANGE = time(9, 0)
EXCHANGE_GAP = timedelta(minutes=2)
NOTE_USER_CHARS = 200  # MemorySettings.note_user_chars
NOTE_ASSISTANT_CHARS = 300  # MemorySettings.note_assistant_chars
_NOTE_SEPARATOR = " | Assistant: "
_NOTE_USER = " User: "
_MARK = "…"  # a snippet's cut

Pair = tuple[Turn | None, Turn | None]  # (user, assistant)


@dataclass(frozen=True)
class Span:
    start: int  # character offsets in the source text, end exclusive
    end: int
    turn: str


@dataclass(frozen=True)
class SourceText:
    """One indexed text and where each turn sits in it."""

    text: str
    spans: tuple[Span, ...]

    def covered(self, start_line: int, end_line: int, shown: str) -> frozenset[str]:
        """The turns at least half visible in `shown`, a window of lines start..end."""
        lines = _lines(self.text, start_line, end_line)
        chunk = "\n".join(line for _, line in lines)
        visible: list[tuple[int, int]] = []
        for low, high in _windows(chunk, shown):
            at = 0
            for offset, line in lines:
                a, b = max(low, at), min(high, at + len(line))
                if a < b:
                    visible.append((offset + a - at, offset + b - at))
                at += len(line) + 1
        return frozenset(s.turn for s in self.spans if 2 * _overlap(s, visible) >= s.end - s.start)


@dataclass(frozen=True)
class Corpus:
    scopes: Mapping[str, str]  # conversation id → scope key
    exchanges: tuple[Exchange, ...]
    notes: Mapping[str, str]  # note path relative to memory/ → its text
    sources: Mapping[str, SourceText]  # by the path hits carry

    def covered(self, hit: Hit) -> frozenset[str]:
        source = self.sources.get(hit.path)
        if source is None:
            return frozenset()
        return source.covered(hit.start_line, hit.end_line, hit.text)


def build_corpus(dataset: Dataset, workspace: Workspace) -> Corpus:
    scopes: dict[str, str] = {}
    exchanges: list[Exchange] = []
    sources: dict[str, SourceText] = {}
    note_lines: dict[str, list[tuple[str, list[Span]]]] = {}
    for conversation in dataset.conversations:
        scopes[conversation.id] = key = CHAT_PREFIX + conversation.id
        for session in conversation.sessions:
            note = _note_path(workspace, key, session)
            for at, pair in _timed_pairs(session, conversation):
                exchange = _exchange(key, at, pair)
                exchanges.append(exchange)
                sources[exchange.path] = _exchange_source(exchange, pair)
                note_lines.setdefault(note, []).append(_note_line(at, pair))
    notes = {path: _note_source(lines) for path, lines in note_lines.items()}
    sources.update(notes)
    return Corpus(scopes, tuple(exchanges), {p: s.text for p, s in notes.items()}, sources)


def pairs(turns: Sequence[Turn]) -> list[Pair]:
    """Turns as exchanges: a user turn with the assistant turn right after it."""
    found: list[Pair] = []
    index = 0
    while index < len(turns):
        turn = turns[index]
        following = turns[index + 1] if index + 1 < len(turns) else None
        if turn.speaker == "assistant":
            found.append((None, turn))
        elif following is not None and following.speaker == "assistant":
            found.append((turn, following))
            index += 1
        else:
            found.append((turn, None))
        index += 1
    return found


def _timed_pairs(session: Session, conversation: Conversation) -> list[tuple[datetime, Pair]]:
    start = datetime.combine(session.day, FIRST_EXCHANGE, tzinfo=UTC)
    turns = tuple(_named(turn, conversation) for turn in session.turns)
    return [(start + n * EXCHANGE_GAP, pair) for n, pair in enumerate(pairs(turns))]


def _named(turn: Turn, conversation: Conversation) -> Turn:
    """The turn as the bot stores a group's message: `Name: text`, when the name is known."""
    name = conversation.name_of(turn.speaker)
    return turn if name is None else replace(turn, text=speakers.line(name, turn.text))


def _exchange(key: str, at: datetime, pair: Pair) -> Exchange:
    user, assistant = pair
    first = next(turn.id for turn in pair if turn is not None)  # a pair has one at least
    return Exchange(key, first, _said(user), _said(assistant), key, at)


def _exchange_source(exchange: Exchange, pair: Pair) -> SourceText:
    """`Exchange.text` is "User: …\\nAssistant: …": each side found where it stands."""
    text, (user, assistant) = exchange.text, pair
    spans: list[Span] = []
    if user is not None:
        at = text.find(user.text.strip())
        spans.append(Span(at, at + len(user.text.strip()), user.id))
    if assistant is not None:
        at = text.rfind(assistant.text.strip())
        spans.append(Span(at, at + len(assistant.text.strip()), assistant.id))
    return SourceText(text, tuple(span for span in spans if span.start >= 0))


def _note_path(workspace: Workspace, key: str, session: Session) -> str:
    path = workspace.daily_note_path(MemoryScope(chat_key=key), session.day)
    return path.relative_to(workspace.memory_root).as_posix()


def _note_line(at: datetime, pair: Pair) -> tuple[str, list[Span]]:
    """The daily-note line of an exchange, and its turns' spans within the line: the user's
    words after " User: ", the assistant's after the first " | Assistant: " past them."""
    user, assistant = pair
    line = note_line(
        at,
        _said(user),
        _said(assistant),
        user_chars=NOTE_USER_CHARS,
        assistant_chars=NOTE_ASSISTANT_CHARS,
    )
    said = line.index(_NOTE_USER) + len(_NOTE_USER)
    cut = line.index(_NOTE_SEPARATOR, said)
    spans = []
    if user is not None:
        spans.append(Span(said, cut, user.id))
    if assistant is not None:
        spans.append(Span(cut + len(_NOTE_SEPARATOR), len(line), assistant.id))
    return line, spans


def _note_source(lines: Sequence[tuple[str, list[Span]]]) -> SourceText:
    text = ""
    spans: list[Span] = []
    for line, line_spans in lines:
        spans.extend(Span(len(text) + s.start, len(text) + s.end, s.turn) for s in line_spans)
        text += line + "\n"
    return SourceText(text, tuple(spans))


def _said(turn: Turn | None) -> str:
    return "" if turn is None else turn.text


def _lines(text: str, first: int, last: int) -> list[tuple[int, str]]:
    """The non-blank lines first..last (1-based) with their offsets: a chunk's lines."""
    found: list[tuple[int, str]] = []
    offset = 0
    for number, raw in enumerate(text.split("\n"), start=1):
        if first <= number <= last and raw.strip():
            found.append((offset, raw.rstrip("\r")))
        offset += len(raw) + 1
    return found


def _windows(chunk: str, shown: str) -> list[tuple[int, int]]:
    """Where the snippet `shown` lies in its chunk: each of its pieces (lines, and the text
    between "…" marks where a line was cut) found in order; a piece that cannot be placed
    shows nothing."""
    found: list[tuple[int, int]] = []
    at = 0
    for piece in (p.strip() for p in shown.replace(_MARK, "\n").split("\n")):
        if not piece:
            continue
        start = chunk.find(piece, at)
        if start < 0:
            start = chunk.find(piece)
        if start >= 0:
            found.append((start, start + len(piece)))
            at = start + len(piece)
    return found


def _overlap(span: Span, visible: Sequence[tuple[int, int]]) -> int:
    return sum(max(0, min(span.end, b) - max(span.start, a)) for a, b in visible)
