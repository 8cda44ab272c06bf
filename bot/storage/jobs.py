"""Durable consolidation jobs: one versioned JSON file each under `state/consolidation/`.

A job is written before the session it came from is trimmed and removed only once it is done,
so a crash in between loses nothing: the next start finds the file and runs the job again.
File names start with the creation time, so listing them in name order is arrival order.

The jobs are the workspace's documents (`Workspace.documents`): files, or with replicas rows
every replica shares, so a job one replica wrote and could not run (it died) is found by another
(`Consolidator.resume`). Processes sharing them run each job once, and one job of a scope at a
time: a job runs inside `taken`, which holds its scope's lock (`Locks`: a file lock, or
PostgreSQL's across replicas) and says whether the job is still there (another process may have
run it meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import structlog

from bot import versioned
from bot.models import ChatMessage, MemoryScope, scope_key
from bot.storage.files import ON_DISK, Documents, Locks
from bot.storage.sessions import decode_message, encode_message, message_document

FORMAT_VERSION = 1
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ConsolidationJob:
    """Old messages of one session, waiting to be folded into its scope's memory."""

    id: str
    scope: MemoryScope
    session_key: str
    messages: tuple[ChatMessage, ...]
    created_at: datetime


def new_job(
    scope: MemoryScope, session_key: str, messages: tuple[ChatMessage, ...], *, at: datetime
) -> ConsolidationJob:
    return ConsolidationJob(
        id=uuid.uuid4().hex[:12],
        scope=scope,
        session_key=session_key,
        messages=messages,
        created_at=at,
    )


@dataclass(eq=False)
class JobStore:
    folder: Path
    locks: Locks
    documents: Documents = ON_DISK

    @asynccontextmanager
    async def taken(self, job: ConsolidationJob) -> AsyncIterator[bool]:
        """Hold the job's scope while the block runs; whether the job is still to do."""
        async with self.locks.hold(self.folder / f"scope-{scope_key(job.scope) or 'global'}"):
            yield await asyncio.to_thread(self.documents.version, self._path(job)) is not None

    async def save(self, job: ConsolidationJob) -> None:
        data = encode_job(job).encode("utf-8")
        await asyncio.to_thread(self.documents.write, self._path(job), data)

    async def remove(self, job: ConsolidationJob) -> None:
        await asyncio.to_thread(self.documents.delete, self._path(job))

    async def pending(self) -> list[ConsolidationJob]:
        """Every job kept, oldest first; an unreadable one is moved aside and logged."""
        return await asyncio.to_thread(self._pending)

    def _pending(self) -> list[ConsolidationJob]:
        jobs = []
        for path in self.documents.listing(self.folder, "*.json"):
            data = self.documents.read(path)
            if data is None:  # run and removed by another process meanwhile
                continue
            try:
                jobs.append(decode_job(data.decode("utf-8")))
            except ValueError as exc:  # UnicodeDecodeError is one
                aside = path.with_name(path.name + ".corrupt")
                self.documents.delete(aside)  # the one set aside before: a move needs it free
                with contextlib.suppress(FileNotFoundError):  # set aside by another meanwhile
                    self.documents.move(path, aside)
                log.warning("consolidation_job_corrupt", path=str(path), reason=str(exc)[:200])
        return jobs

    def _path(self, job: ConsolidationJob) -> Path:
        return self.folder / f"{job.created_at:%Y%m%dT%H%M%S%f}-{job.id}.json"


def encode_job(job: ConsolidationJob) -> str:
    document: dict[str, object] = {
        "id": job.id,
        "chat_key": job.scope.chat_key,
        "session_key": job.session_key,
        "created_at": job.created_at.isoformat(),
        "messages": [encode_message(m) for m in job.messages],
    }
    return message_document(FORMAT_VERSION, document)


def decode_job(text: str) -> ConsolidationJob:
    """The job in `text`; `ValueError` when it is not a job document this code can read."""
    document = versioned.decode(text, FORMAT_VERSION)
    try:
        chat_key, messages = document["chat_key"], document["messages"]
        if not isinstance(messages, list):
            raise TypeError("messages is not a list")
        return ConsolidationJob(
            id=str(document["id"]),
            scope=MemoryScope(chat_key=None if chat_key is None else str(chat_key)),
            session_key=str(document["session_key"]),
            messages=tuple(
                decode_message(m) for m in versioned.objects(document["messages"], "messages")
            ),
            created_at=datetime.fromisoformat(str(document["created_at"])),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{type(exc).__name__}: {exc}") from exc
