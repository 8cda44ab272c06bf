"""Consolidation: old messages become a `HISTORY.md` entry and `MEMORY.md` facts.

    submit(job) ──▶ job file (durable) ──▶ queue ──▶ one worker, one job at a time,
                                                     under its scope's lock (across processes)
                                                     ├─ MEMORY.md too big for a request:
                                                     │   compressed in parts first
                                                     ├─ the conversation in parts that fit
                                                     │   the request budget; for each part:
                                                     │   ├─ ask the fast model (timeout)
                                                     │   ├─ MEMORY.md: replace if unchanged,
                                                     │   │   else redo once, else merge new lines
                                                     │   └─ HISTORY entry (raw fallback on failure),
                                                     │       keyed by job and part: written last,
                                                     │       it marks the part done
                                                     └─ job file removed

A job run again after a crash does not ask the model again for a part whose entry is in
HISTORY.md already (it only copies the entry to the monthly file if a crash left that without
it), and every entry goes to each history file once (`HistoryLog.append`'s key).

Every write goes through the memory writer (`ConsolidationMemory`: the files, then the items of
new lines, then the index). A hand edit of `MEMORY.md` is never overwritten: the model's rewrite
is applied only if the file is byte-identical to what the model saw, a line the rewrite
drops without naming it is kept (`requests.keep_dropped`), and a line a newer fact replaces is
kept marked superseded (`requests.superseded`). A job's scope decides whose files
are read and written, so a group's consolidation never sees the owner's memory. No request
exceeds `request_tokens` (`requests`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Protocol

import structlog

from bot.errors import LLMError, NotTextError
from bot.llm.client import LLM
from bot.memory.notes.long_term import MemoryText, new_lines
from bot.memory.upkeep.answers import ConsolidationResult, facts_only, parse_consolidation
from bot.memory.upkeep.requests import (
    MEMORY_SHARE,
    OVERHEAD_TOKENS,
    ROLE,
    TASK,
    Count,
    compression_prompt,
    consolidation_prompt,
    conversation_parts,
    head_that_fits,
    pieces,
    raw_fallback_entry,
    superseded,
)
from bot.models import ChatMessage, MemoryScope, Provenance
from bot.storage.jobs import ConsolidationJob, JobStore

log = structlog.get_logger(__name__)

TEMPERATURE = 0.3
WAIT_GRACE = 5.0  # seconds `consolidate_now` allows past the model timeout for file writes
MERGE_SECTION = "Consolidated"
NEW_TOKENS = 768  # of an answer past the memory it was shown: new facts, the entry, the JSON


class ConsolidationMemory(Protocol):
    """What consolidation reads and writes, all through the memory writer (`MemoryWriter`)."""

    def snapshot(self, scope: MemoryScope) -> MemoryText: ...

    async def replace_memory(
        self, scope: MemoryScope, seen: MemoryText, text: str, origin: Provenance | None = None
    ) -> bool: ...

    async def merge_facts(
        self,
        scope: MemoryScope,
        facts: Sequence[str],
        *,
        section: str,
        origin: Provenance | None = None,
    ) -> list[str]: ...

    async def append_history(
        self, scope: MemoryScope, entry: str, at: datetime, *, key: str | None = None
    ) -> None: ...

    async def history_entry(self, scope: MemoryScope, key: str) -> str | None: ...


class ConsolidationQueue(Protocol):
    """What the turn pipeline and /new need from consolidation."""

    async def submit(self, job: ConsolidationJob) -> None: ...

    async def consolidate_now(self, job: ConsolidationJob) -> bool: ...


class Consolidator:
    """A `Service`: a single worker folds durable jobs into memory, one at a time."""

    def __init__(
        self,
        *,
        llm: LLM,
        model: str,
        memory: ConsolidationMemory,
        jobs: JobStore,
        now: Callable[[], datetime],
        max_memory_size: int,
        timeout: float,
        raw_fallback_messages: int,
        raw_fallback_chars: int,
        count: Count,
        request_tokens: int,  # the most one request may hold (the model's window, less output)
    ) -> None:
        self.llm = llm
        self.model = model
        self.memory = memory
        self.jobs = jobs
        self.now = now
        self.max_memory_size = max_memory_size
        self.timeout = timeout
        self.raw_fallback_messages = raw_fallback_messages
        self.raw_fallback_chars = raw_fallback_chars
        self.count = count
        self.memory_tokens = int(request_tokens * MEMORY_SHARE)
        self.room = request_tokens - self.memory_tokens - count(ROLE + TASK) - OVERHEAD_TOKENS
        self._queue: asyncio.Queue[ConsolidationJob] = asyncio.Queue()
        self._queued: set[str] = set()
        self._failed: set[str] = set()  # left for the next start (not `resume`d before)
        self._waiters: dict[str, asyncio.Future[bool]] = {}
        self._worker: asyncio.Task[None] | None = None

    # --- the service ---------------------------------------------------------------------

    async def start(self) -> None:
        """Queue the jobs a previous run left on disk, then start the worker."""
        self._failed.clear()  # tried again now
        if resumed := await self.resume():
            log.info("consolidation_resumed", jobs=resumed)
        self._worker = asyncio.create_task(self._work(), name="consolidation-worker")

    async def resume(self, *, made_before: datetime | None = None) -> int:
        """Queue the jobs kept (made before `made_before`, when given) that this process has
        neither queued nor seen fail since it started: those another process left (a replica
        that died); how many."""
        left = [job for job in await self.jobs.pending() if job.id not in self._failed]
        if made_before is not None:
            left = [job for job in left if job.created_at < made_before]
        fresh = [job for job in left if job.id not in self._queued]
        for job in fresh:
            self._enqueue(job)
        return len(fresh)

    async def stop(self) -> None:
        """Stop the worker; an unfinished job stays on disk and runs at the next start."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            await asyncio.wait({worker})
        for waiter in self._waiters.values():
            if not waiter.done():
                waiter.set_result(False)

    # --- the API -------------------------------------------------------------------------

    async def submit(self, job: ConsolidationJob) -> None:
        """Make the job durable and queue it; returns at once (a reply never waits for it)."""
        await self.jobs.save(job)
        self._enqueue(job)

    async def consolidate_now(self, job: ConsolidationJob) -> bool:
        """Submit and wait for the job (bounded): True if the model consolidated it."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[job.id] = waiter
        try:
            await self.submit(job)
            done, _ = await asyncio.wait({waiter}, timeout=self.timeout + WAIT_GRACE)
        finally:
            self._waiters.pop(job.id, None)
        return bool(done) and waiter.result()

    async def wait_idle(self) -> None:
        """Until every queued job is finished (tests and tools; needs a running worker)."""
        await self._queue.join()

    # --- the worker ----------------------------------------------------------------------

    def _enqueue(self, job: ConsolidationJob) -> None:
        if job.id not in self._queued:
            self._queued.add(job.id)
            self._queue.put_nowait(job)

    async def _work(self) -> None:
        while True:
            job = await self._queue.get()
            try:
                consolidated = await self._process(job)
            finally:
                self._queued.discard(job.id)
                self._queue.task_done()
            waiter = self._waiters.get(job.id)
            if waiter is not None and not waiter.done():
                waiter.set_result(consolidated)

    async def _process(self, job: ConsolidationJob) -> bool:
        with structlog.contextvars.bound_contextvars(chat=job.session_key, consolidation=job.id):
            try:
                async with self.jobs.taken(job) as to_do:
                    if not to_do:
                        log.info("consolidation_done_elsewhere")
                        return False
                    consolidated = await self._consolidate(job)
                    await self.jobs.remove(job)
            except Exception:
                log.exception("consolidation_failed")  # the job file stays for the next start
                self._failed.add(job.id)
                return False
            log.info("consolidation_done", messages=len(job.messages), by_model=consolidated)
            return consolidated

    async def _consolidate(self, job: ConsolidationJob) -> bool:
        """Every part of the job; True if the model consolidated them all."""
        await self._fit_memory(job.scope)
        zone = self.now().tzinfo
        done = True
        parts = conversation_parts(job.messages, room=self.room, count=self.count, zone=zone)
        for index, part in enumerate(parts):
            key = f"consolidation {job.id}.{index}"
            written = await self.memory.history_entry(job.scope, key)
            if written is not None:  # done by a run a crash cut short: the month's file may lack it
                log.info("consolidation_part_done_before", part=index)
                await self._record(job, written, key)
                continue
            done &= await self._consolidate_part(replace(job, messages=part), key)
        return done

    async def _consolidate_part(self, job: ConsolidationJob, key: str) -> bool:
        """The part's memory update, then its HISTORY entry (under `key`: written last, it
        says the part is done)."""
        deadline = asyncio.get_running_loop().time() + self.timeout
        snapshot = await self._snapshot(job.scope)
        shown = head_that_fits(snapshot.text, tokens=self.memory_tokens, count=self.count)
        whole = shown.strip() == snapshot.text.strip()
        result = await self._ask(job, shown, deadline, partial=not whole)
        if result is None:
            await self._record(job, None, key)
            return False
        if not whole:
            await self._merge(job, result.memory_update or "", seen=shown)
        elif not await self._store(job, snapshot, result):
            result = await self._redo(job, result, snapshot, deadline)
        await self._record(job, result.history_entry, key)
        return True

    async def _redo(
        self,
        job: ConsolidationJob,
        first: ConsolidationResult,
        first_seen: MemoryText,
        deadline: float,
    ) -> ConsolidationResult:
        """MEMORY.md changed while the model worked: ask once more against the new text; if
        that fails or the file changes again, merge the model's new lines in instead."""
        log.info("consolidation_redo")
        seen = await self._snapshot(job.scope)
        second = await self._ask(job, seen.text, deadline)
        if second is None or second.memory_update is None:
            await self._merge(job, first.memory_update or "", seen=first_seen.text)
            return first
        if not await self._store(job, seen, second):
            await self._merge(job, second.memory_update, seen=seen.text)
        return ConsolidationResult(
            history_entry=second.history_entry or first.history_entry,
            memory_update=second.memory_update,
        )

    # --- model and files -----------------------------------------------------------------

    async def _ask(
        self, job: ConsolidationJob, memory: str, deadline: float, *, partial: bool = False
    ) -> ConsolidationResult | None:
        """The model's parsed answer, or None (logged) on timeout, model error or no JSON."""
        prompt = consolidation_prompt(
            job.messages,
            memory,
            max_memory_size=self.max_memory_size,
            zone=self.now().tzinfo,
            partial=partial,
        )
        # bounded: the memory shown, new facts, an entry (a model that loops is stopped there)
        result = await self._answer(prompt, deadline, output=self.count(memory) + NEW_TOKENS)
        kept = facts_only(result, job.messages, seen=memory) if result else None
        return None if kept is None or kept.is_empty else kept

    async def _answer(
        self, prompt: list[ChatMessage], deadline: float, *, output: int
    ) -> ConsolidationResult | None:
        try:
            async with asyncio.timeout_at(deadline):
                completion = await self.llm.complete(
                    prompt, model=self.model, temperature=TEMPERATURE, max_tokens=output
                )
        except TimeoutError:
            log.warning("consolidation_timed_out", timeout=self.timeout)
            return None
        except LLMError as exc:
            log.warning("consolidation_llm_failed", error=type(exc).__name__)
            return None
        result = parse_consolidation(completion.content or "")
        if result.is_empty:
            log.warning("consolidation_unparseable", chars=len(completion.content or ""))
            return None
        return result

    async def _fit_memory(self, scope: MemoryScope) -> None:
        """MEMORY.md compressed in parts when it alone would crowd a request (the file is
        replaced only if unchanged meanwhile, and only when it got smaller)."""
        snapshot = await self._snapshot(scope)
        before = self.count(snapshot.text)
        if before <= self.memory_tokens:
            return
        compressed = []
        for piece in pieces(snapshot.text, tokens=self.memory_tokens // 2, count=self.count):
            deadline = asyncio.get_running_loop().time() + self.timeout
            output = self.count(piece) + NEW_TOKENS  # a part, compressed, is not longer
            result = await self._answer(compression_prompt(piece), deadline, output=output)
            compressed.append((result.memory_update if result else None) or piece)
        text = "\n\n".join(part.strip() for part in compressed) + "\n"
        if self.count(text) < before:
            try:
                replaced = await self.memory.replace_memory(scope, snapshot, text)
            except NotTextError:
                return
            log.info(
                "memory_compressed",
                tokens_before=before,
                tokens_after=self.count(text),
                replaced=replaced,
            )

    async def _snapshot(self, scope: MemoryScope) -> MemoryText:
        return await asyncio.to_thread(self.memory.snapshot, scope)

    async def _store(
        self, job: ConsolidationJob, seen: MemoryText, result: ConsolidationResult
    ) -> bool:
        """Apply the update if it changes anything; False if the file changed underneath.
        Lines the update drops without naming them are kept, unless memory is being
        compressed (over `max_memory_size`, where dropping stale facts is the point); lines
        its new facts replace are kept as history, marked superseded (`superseded`)."""
        update = result.memory_update
        if update is None or update.strip() == seen.text.strip():
            return True
        removed = result.removed
        if len(seen.text.encode("utf-8")) > self.max_memory_size:
            removed = tuple(seen.text.splitlines())  # anything may go
        today = self.now().date()
        update = superseded(
            update, seen.text, removed=removed, replaced=result.replaced, until=today
        )
        try:
            return await self.memory.replace_memory(job.scope, seen, update, self._origin(job))
        except NotTextError:
            log.warning("consolidation_memory_not_text")  # history still gets the entry
            return True

    def _origin(self, job: ConsolidationJob) -> Provenance:
        """Consolidation's facts: the model's own inference from the chat's conversation."""
        return Provenance(by="model", chat=job.session_key, at=self.now(), via="inference")

    async def _merge(self, job: ConsolidationJob, update: str, *, seen: str) -> None:
        current = await self._snapshot(job.scope)
        facts = new_lines(update, seen=seen, current=current.text)
        try:
            added = await self.memory.merge_facts(
                job.scope, facts, section=MERGE_SECTION, origin=self._origin(job)
            )
        except NotTextError:
            log.warning("consolidation_memory_not_text")
            return
        log.info("consolidation_merged", facts=len(added))

    async def _record(self, job: ConsolidationJob, entry: str | None, key: str) -> None:
        """The part's entry, headed by the job's time (the same in a run after a crash, so the
        entry goes to the same monthly file)."""
        if entry is None:
            log.warning("consolidation_raw_fallback", messages=len(job.messages))
            entry = raw_fallback_entry(
                job.messages,
                count=self.raw_fallback_messages,
                chars=self.raw_fallback_chars,
                zone=self.now().tzinfo,
            )
        at = job.created_at.astimezone(self.now().tzinfo)
        await self.memory.append_history(job.scope, entry, at, key=key)
