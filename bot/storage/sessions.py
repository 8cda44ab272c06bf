"""Session files: one versioned JSON document per session key, written atomically.

On load, the messages are repaired (`transcript.repair`: what the provider would reject is
fixed, each fix logged); a message this code cannot read at all is dropped the same way. A file
that cannot be parsed is moved aside as `<name>.corrupt-<time>` and a fresh session starts,
marked (`SessionMarks.recovered_from`) until a turn has told the user. `/new` archives the old
file under `sessions/archive/` instead of deleting it, and a part cut from a session
(consolidation's trim, a compaction) is archived the same way (`archive_part`): no message a
chat sent is ever deleted. A session's marks are its file's `metadata` (`bot.storage.marks`).

States (seed 000): the chat's current file is its active conversation; an archived one is
marked `"state": "ended"`, with why (`/new`, a freshness policy, a conversation the model kept
refusing). Writes are versioned: each save counts the file's `revision` and holds the path's
lock (`Locks`: across processes in the embedded mode, across replicas in the replicated one);
when the file changed since this store last read or wrote it (another process: the CLI's
forget, the memory page, a replica), it is written only over that version (`write_if`), with
the messages this save adds put after the other's (`rebased`): neither change is lost.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import cast, get_args

import structlog

from bot import versioned
from bot.models import ChatMessage, Session, SessionMarks, ToolCall, Via
from bot.storage.files import Documents, Locks, Signature
from bot.storage.marks import decode_marks, encode_marks
from bot.storage.transcript import repair
from bot.storage.workspace import Workspace, file_key, key_of_file
from bot.versioned import Fields, number

FORMAT_VERSION = 1
_VIAS: tuple[str, ...] = get_args(Via)
KNOWN = 64  # chats whose last session is kept in memory (`SessionStore`)
SAVE_TRIES = 5  # a save over a file that keeps changing under it, at most
log = structlog.get_logger(__name__)


class SessionFormatError(ValueError):
    """The file is not a session document this code can read."""


class SessionStore:
    """Sessions as documents (`Workspace.documents`: files, or shared by the replicas). The
    session last read or saved of each of the last `KNOWN` chats is kept with its document's
    signature: loading it again, while the document is unchanged, costs a stat (on the
    caller's thread), not a read and a parse in a worker's. A document changed by anything
    else (a forget's rewrite, a hand edit, another replica) is read again."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        now: Callable[[], datetime],
        locks: Locks | None = None,  # None: this process is the only writer (tests, tools)
    ) -> None:
        self.workspace = workspace
        self.documents: Documents = workspace.documents
        self.now = now
        self.locks = locks
        self._known: OrderedDict[str, tuple[Signature, Session]] = OrderedDict()
        self._known_lock = threading.Lock()

    def fresh(self, key: str) -> Session:
        moment = self.now()
        return Session(key=key, messages=(), created_at=moment, updated_at=moment)

    def keys(self) -> list[str]:
        """The session keys that have a conversation file, sorted."""
        found = self.documents.listing(self.workspace.sessions_dir, "*.json")
        return sorted(key_of_file(path.stem) for path in found)

    async def load(self, key: str) -> Session:
        if (known := self._unchanged(key)) is not None:
            return known
        return await asyncio.to_thread(self._load, key)

    async def save(self, session: Session) -> None:
        if self.locks is None:
            await asyncio.to_thread(self._save, session)
            return
        async with self.locks.hold(self.workspace.session_path(session.key)):
            await asyncio.to_thread(self._save, session)

    def _save(self, session: Session) -> None:
        """Write `session` as the file's next revision; over another writer's change, rebased
        on it (see the module docstring)."""
        path = self.workspace.session_path(session.key)
        for _ in range(SAVE_TRIES):
            current = self.documents.version(path)
            with self._known_lock:
                kept = self._known.get(session.key)
            ours = session
            if current is not None and (kept is None or kept[0] != current):
                ours = self._over_theirs(session, path, base=kept[1] if kept else None)
            marks = replace(ours.marks, revision=(ours.marks.revision or 0) + 1, state=None)
            ours = replace(ours, marks=marks)
            if self.documents.write_if(path, encode_session(ours).encode("utf-8"), current):
                self._remember(session.key, path, ours)
                return
        raise OSError(f"session {session.key}: changed by another writer {SAVE_TRIES} times")

    def _over_theirs(self, ours: Session, path: Path, *, base: Session | None) -> Session:
        """`ours` over what the file holds now, written by someone else since `base`."""
        data = self.documents.read(path)
        try:
            theirs, _ = decode_session(data.decode("utf-8")) if data else (None, ())
        except (SessionFormatError, UnicodeDecodeError):
            return ours  # a damaged file is set aside at the next load; ours replaces it
        if theirs is None:
            return ours
        if base is None and theirs.marks.revision == ours.marks.revision:
            return ours  # this store forgot the file (KNOWN), and nobody counted a save since
        merged = rebased(ours, base=base, theirs=theirs)
        log.warning(
            "session_changed_meanwhile",
            key=ours.key,
            revision=theirs.marks.revision,
            kept=len(theirs.messages),
            added=len(merged.messages) - len(theirs.messages),
        )
        return merged

    def _unchanged(self, key: str) -> Session | None:
        """The session kept for `key` when its file has not changed since."""
        with self._known_lock:
            kept = self._known.get(key)
        if kept is None:
            return None
        try:
            signature = self.documents.version(self.workspace.session_path(key))
        except OSError:
            return None
        return kept[1] if kept[0] == signature else None

    def _remember(self, key: str, path: Path, session: Session) -> None:
        """Keep `session` as what `path` holds now (its signature taken after the write or
        before the read that made it: a change in between is seen at the next load)."""
        try:
            signature = self.documents.version(path)
        except OSError:
            return
        if signature is not None:
            self._keep(key, signature, session)

    def _keep(self, key: str, signature: Signature, session: Session) -> None:
        with self._known_lock:
            self._known[key] = (signature, session)
            self._known.move_to_end(key)
            while len(self._known) > KNOWN:
                self._known.popitem(last=False)

    async def archive(self, key: str, *, reason: str = "/new") -> Session:
        """Move the session's file into the archive, marked ended (`reason`), and return a
        fresh, saved session."""
        await asyncio.to_thread(self._archive, key, reason)
        session = self.fresh(key)
        await self.save(session)
        return session

    async def archive_part(self, session: Session, messages: Sequence[ChatMessage]) -> Path | None:
        """Keep `messages`, a part cut from `session`, as an archived session file of the same
        key (None when there is nothing to keep)."""
        if not messages:
            return None
        marks = replace(session.marks, archived_part=True)
        part = replace(session, messages=tuple(messages), marks=marks)
        return await asyncio.to_thread(self._archive_part, part)

    def _archive_part(self, part: Session) -> Path:
        target = _unused(self._archive_path(part.key), self.documents)
        self.documents.write(target, encode_session(part).encode("utf-8"))
        return target

    def _archive_path(self, key: str) -> Path:
        stamp = f"{self.now():%Y%m%dT%H%M%S%f}"
        return self.workspace.archive_dir / f"{file_key(key)}-{stamp}.json"

    def _load(self, key: str) -> Session:
        path = self.workspace.session_path(key)
        signature = self.documents.version(path)
        data = self.documents.read(path)
        if signature is None or data is None:
            return self.fresh(key)
        try:
            session, unreadable = decode_session(data.decode("utf-8"))
        except (SessionFormatError, UnicodeDecodeError) as exc:
            return self._set_aside(key, path, exc)
        repaired = _repaired(session, unreadable)
        if repaired is session:  # a file needing repair is read again (and told) while it does
            self._keep(key, signature, session)
        return repaired

    def _set_aside(self, key: str, path: Path, reason: Exception) -> Session:
        """Move the unreadable file aside and save a fresh session in its place, marked with
        `recovered_from` so that the next turn tells the user (and clears the mark)."""
        aside = path.with_name(f"{path.name}.corrupt-{self.now():%Y%m%dT%H%M%S}")
        aside = _unused(aside, self.documents)
        self.documents.move(path, aside)
        log.warning("session_corrupt", key=key, moved_to=str(aside), reason=str(reason))
        session = replace(self.fresh(key), marks=SessionMarks(recovered_from=aside.name))
        self.documents.write(path, encode_session(session).encode("utf-8"))
        return session

    def _archive(self, key: str, reason: str) -> None:
        path = self.workspace.session_path(key)
        data = self.documents.read(path) if self.documents.version(path) is not None else None
        if data is None:
            return
        target = _unused(self._archive_path(key), self.documents)
        try:
            session, _ = decode_session(data.decode("utf-8"))
        except (SessionFormatError, UnicodeDecodeError):
            self.documents.move(path, target)  # kept as it is
            return
        marks = replace(session.marks, state="ended", ended=reason)
        self.documents.write(target, encode_session(replace(session, marks=marks)).encode())
        self.documents.delete(path)


def rebased(ours: Session, *, base: Session | None, theirs: Session) -> Session:
    """`theirs` (another writer's version) with what `ours` adds to `base` (the version ours
    was made from) after its messages: a turn's new messages after a forget's rewrite. Without
    a base, or when ours is no extension of it (a compaction), the messages of ours after the
    last one `theirs` holds too."""
    if base is not None and ours.messages[: len(base.messages)] == base.messages:
        added = ours.messages[len(base.messages) :]
    else:
        held = set(theirs.messages)
        shared = [index for index, message in enumerate(ours.messages) if message in held]
        added = ours.messages[shared[-1] + 1 :] if shared else ours.messages
    return replace(
        ours,
        messages=(*theirs.messages, *added),
        marks=replace(ours.marks, revision=theirs.marks.revision),
    )


def _unused(path: Path, documents: Documents) -> Path:
    """`path`, or `<stem>-2<suffix>`, `-3` … when taken: nothing set aside is overwritten."""
    candidate, number = path, 1
    while documents.version(candidate) is not None:
        number += 1
        candidate = path.with_name(f"{path.stem}-{number}{path.suffix}")
    return candidate


def _repaired(session: Session, unreadable: tuple[str, ...]) -> Session:
    repaired = repair(session.messages)
    fixes = (*unreadable, *repaired.fixes)
    for fix in fixes:
        log.warning("session_repaired", key=session.key, fix=fix)
    return replace(session, messages=repaired.messages) if fixes else session


def encode_session(session: Session) -> str:
    return message_document(
        FORMAT_VERSION,
        {
            "key": session.key,
            "created_at": session.created_at.isoformat(),
            "updated_at": session.updated_at.isoformat(),
            "last_prompt_tokens": session.last_prompt_tokens,
            "total_prompt_tokens": session.total_prompt_tokens,
            "total_completion_tokens": session.total_completion_tokens,
            "compactions": session.compactions,
            "metadata": encode_marks(session.marks),
            "messages": [encode_message(m) for m in session.messages],
        },
    )


def message_document(version: int, body: Mapping[str, object]) -> str:
    """A versioned document with a `messages` list (a session, a consolidation job) as its
    file holds it: a message a line, as readable as an indented one, and encoded by json's C
    encoder (an indent makes json take its pure-Python one, ~6× slower)."""
    head = {key: value for key, value in body.items() if key != "messages"}
    listed = cast(list[object], body["messages"])
    lines = [json.dumps(message, ensure_ascii=False) for message in listed]
    messages = "\n".join(["[", ",\n".join(lines), " ]"]) if lines else "[]"
    opened = versioned.encode(version, head, indent=1).removesuffix("\n}")
    return f'{opened},\n "messages": {messages}\n}}\n'


def decode_session(text: str) -> tuple[Session, tuple[str, ...]]:
    """The session, and a note for each message left out because it cannot be read; raises
    `SessionFormatError` when the text is not a session document at all."""
    try:
        document = versioned.decode(text, FORMAT_VERSION)
    except versioned.VersionError as exc:
        raise SessionFormatError(f"unsupported session format: {exc}") from exc
    try:
        messages, unreadable = decode_messages(document["messages"])
        last = document.get("last_prompt_tokens")
        metadata = document.get("metadata", {})
        if not isinstance(metadata, dict):
            raise TypeError("metadata is not an object")
        session = Session(
            key=str(document["key"]),
            messages=messages,
            created_at=datetime.fromisoformat(str(document["created_at"])),
            updated_at=datetime.fromisoformat(str(document["updated_at"])),
            last_prompt_tokens=None if last is None else number(last),
            total_prompt_tokens=number(document.get("total_prompt_tokens", 0)),
            total_completion_tokens=number(document.get("total_completion_tokens", 0)),
            compactions=number(document.get("compactions", 0)),
            marks=decode_marks(metadata),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, SessionFormatError):
            raise
        raise SessionFormatError(f"{type(exc).__name__}: {exc}") from exc
    return session, unreadable


def decode_messages(raw: object) -> tuple[tuple[ChatMessage, ...], tuple[str, ...]]:
    """The messages this code can read, and a note for each one it cannot (left out)."""
    if not isinstance(raw, list):
        raise SessionFormatError(f"messages is a {type(raw).__name__}, not a list")
    messages: list[ChatMessage] = []
    unreadable: list[str] = []
    for item in raw:
        try:
            messages.append(decode_message(item))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            unreadable.append(f"dropped an unreadable message ({type(exc).__name__}: {exc})"[:200])
    return tuple(messages), tuple(unreadable)


def encode_message(message: ChatMessage) -> Fields:
    content = message.content
    if content is None and message.role == "assistant" and not message.tool_calls:
        content = ""  # an empty answer is saved as one: nothing to repair at the next start
    encoded: Fields = {"role": message.role, "content": content}
    if message.tool_calls:
        encoded["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        encoded["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        encoded["name"] = message.name
    if message.at is not None:
        encoded["at"] = message.at.isoformat()
    if message.turn is not None:
        encoded["turn"] = message.turn
    if message.origin is not None:
        encoded["origin"] = message.origin
    return encoded


def decode_message(raw: object) -> ChatMessage:
    if not isinstance(raw, dict):
        raise TypeError(f"a message is a {type(raw).__name__}, not an object")
    role = raw["role"]
    if role not in ("system", "user", "assistant", "tool"):
        raise SessionFormatError(f"unknown role {role!r}")
    content = raw.get("content")
    return ChatMessage(
        role=role,
        content=None if content is None else str(content),
        tool_calls=tuple(
            ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=str(c["arguments"]))
            for c in raw.get("tool_calls", ())
        ),
        tool_call_id=raw.get("tool_call_id"),
        name=raw.get("name"),
        at=datetime.fromisoformat(raw["at"]) if raw.get("at") else None,
        turn=str(raw["turn"]) if raw.get("turn") else None,
        origin=raw["origin"] if raw.get("origin") in _VIAS else None,
    )
