"""`# Relevant Memory`: the index's best hits for the user's message, cited.

    # Relevant Memory
    (a hit's [L3-L9] cites chats/telegram%3A-100/<day>.md#L3-L9, the note of the day it is under)
    ## 2026-11-18
    - Ann: where are the keys? | Assistant: In the blue bowl.
    - [MEMORY.md#L12-L14] - Ann keeps spare keys at Ben's.
    - [s-8cf2e8c86d] Ann's spare keys are at Ben's.
    ## 2026-11-20
    - [L3-L9] Ann: … | Assistant: …
      … Ben: … | Assistant: … …
    (4 more via memory_search)

The budget goes to evidence, not to its labels. The hits are grouped by day, the days in
order (`## <day>`, each day once: the date of a hit is its heading); a hit's day is its daily
note's, else when it was written. Each hit is a list item: what to cite and its snippet
(`bot.index.snippets`: the lines that matched, "…" where lines were left out; `said`). A
daily note of one folder (the best note hit's: the chat's `chats/<key>/`, or memory/ itself
for the owner) cites only its lines (`[L3-L9]`), the folder named once under the heading
(`NOTES`: `memory_get` reads `<folder><day>.md#L3-L9`); an item its id alone (`[s-8cf2e8c86d]`:
`memory_get` reads it by id, the id names its file; its whole citation,
`chats/<key>/items/semantic.jsonl#s-8cf2e8c86d#L1-L1`, was ~31 tokens for a fact of ~19); a hit
of any other file cites its whole `Hit.citation`; a past exchange nothing (not a file:
`memory_get` refuses it, `memory_search` shows it). The one owner of what the section cites:
`hit_line`. A note line's clock is left out (the day heads it). Who said it is
in the snippet: `User:`/`Assistant:`, or a group member's name (`Ann: …`,
`bot.conversation.speakers`) without the `User:` before it. The assistant's words keep their
label whatever they start with: the bot names only the users (`Sure: …` is not a name).

Hits come only from the scopes the chat may search (`search_scopes`, `bot.memory.scopes`). What the
prompt already shows is left out (`distinct`, by `overlap`): a hit held by `# Memory` (a
MEMORY.md chunk, a daily note shown today, an exchange whose note line is shown whole) or by a
better hit, a turn of the conversation the prompt carries anyway, and a line of a hit that a
better hit shows. The rest are taken best first, at most `k`, while they fit `budget_tokens`
(headings and notice included); a hit too long for the room left is passed over and the next
may still fit. The notice counts the matches found but not shown, up to what one search
returns (`probe`, 2 × k: enough to say "more" and to fill the budget after what is left out;
on tests/data/evalset_months.json, 40 hits within 1,024 tokens, hybrid recall is the same at
2 × k as at 3 × k, 0.867, and 0.865 at 1.5 × k; each hit looked for costs its snippet). The
search runs in a thread (`find`, beside the memory pack); a failure or a
closed index means no section (logged), never a failed turn.

A remote recall server (LightRAG) may add hits to the embedded index's: both are on the same
Reciprocal Rank Fusion scale, so they are merged by score.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime

import structlog

from bot.index.remote import RemoteSearch
from bot.index.search import Hit, Searcher
from bot.index.snippets import GAP
from bot.index.sources import file_day
from bot.llm.tokens import at_least
from bot.memory.items.indexing import KIND as ITEM  # an item's hits: `<file>#<id>`
from bot.memory.notes.daily import body_of
from bot.memory.recall.overlap import Shown
from bot.memory.recall.sides import EXCHANGE, once_each

log = structlog.get_logger(__name__)

HEADER = "# Relevant Memory"
MORE = "({count} more via memory_search)"
NOTES = "(a hit's [L3-L9] cites {note}#L3-L9, the note of the day it is under)"
PROBE_PER_HIT = 2
TRIM_CHARS = 40  # a shorter line of a hit is kept even when a better hit shows it
MIN_LINE_TOKENS = 8  # with less room than this left, no hit line can fit
HIT_RESERVE = 48  # the section's tokens beside one hit: heading, notes line, day, notice
Count = Callable[[str], int]
INDENT = "  "  # a hit's next lines
_NAME = r"[^\W\d_][\w.'-]*(?: [^\W\d_][\w.'-]*){0,2}"  # up to three words, from a letter
_LABELLED = re.compile(rf"\bUser: (?=({_NAME}): )")
_EMPTY_SIDE = re.compile(r"^(?:User|Assistant):(?: \| |$)| \| Assistant:$")  # nothing said


class RelevantMemory:
    def __init__(
        self,
        index: Searcher,
        count: Count,
        *,
        k: int,
        budget_tokens: int,
        remote: RemoteSearch | None = None,
    ) -> None:
        self.index = index
        self.count = count
        self.k = k
        self.budget_tokens = budget_tokens
        self.probe = PROBE_PER_HIT * k
        self.remote = remote

    async def find(
        self, query: str, scopes: Sequence[str], *, now: datetime | None = None
    ) -> list[Hit]:
        """The hits for `query`, best first; [] when off, blank, or failing (logged). A time
        it names ("last May", "two weeks ago") is read against `now`, the message's moment
        (the clock when None): `bot.index.when`."""
        if self.k <= 0 or self.budget_tokens <= 0 or not query.strip():
            return []
        try:
            return await self._search(query, scopes, now)
        except Exception:  # recall is best-effort: the turn goes on without the section
            log.warning("relevant_memory_failed", exc_info=True)
            return []

    def section(
        self,
        hits: Sequence[Hit],
        *,
        shown: Shown,
        conversation: frozenset[str] = frozenset(),
        budget: int | None = None,  # tokens; `budget_tokens` when None
    ) -> str:
        """The section ("" when no hit is new); `shown` is what the prompt's other memory
        sections hold (not added to), `conversation` the paths of the exchanges in the
        prompt's messages."""
        return self.fitted(hits, shown=shown, conversation=conversation, budget=budget)[0]

    def fitted(
        self,
        hits: Sequence[Hit],
        *,
        shown: Shown,
        conversation: frozenset[str] = frozenset(),
        budget: int | None = None,
    ) -> tuple[str, list[Hit]]:
        """The section (as `section`) and the hits it shows: what the retrieval eval reads."""
        fresh = once_each(fresh_hits(hits, shown=shown, conversation=conversation))
        tokens = self.budget_tokens if budget is None else min(budget, self.budget_tokens)
        fitting = cut_to(fresh, tokens - HIT_RESERVE, count=self.count)
        return fit(fitting, k=self.k, budget=tokens, count=self.count, found=len(hits))

    async def _search(self, query: str, scopes: Sequence[str], now: datetime | None) -> list[Hit]:
        # the last turn's sync may still run: its exchange is in the conversation anyway
        search = functools.partial(self.index.search, wait="walks", now=now)
        local = await asyncio.to_thread(search, query, scopes=scopes, k=self.probe)
        if self.remote is None:
            return local
        remote = await self.remote.search(query, scopes=scopes, k=self.k)
        return sorted([*local, *remote], key=lambda hit: -hit.score)


def distinct(
    hits: Sequence[Hit], *, shown: Shown | None = None, conversation: frozenset[str] = frozenset()
) -> list[Hit]:
    """The hits that add something, best first: not in the conversation, not held by
    `shown` (not added to) or by a better hit (`overlap`: a note line and its exchange are one
    hit); a hit of several lines keeps only the lines nothing better holds."""
    return list(fresh_hits(hits, shown=shown, conversation=conversation))


def fresh_hits(
    hits: Sequence[Hit], *, shown: Shown | None = None, conversation: frozenset[str] = frozenset()
) -> Iterator[Hit]:
    """`distinct`, one hit at a time: a section that is full stops asking (each hit checked
    costs its lines against all that is shown: on a year's workspace, most of a turn's time in
    `# Relevant Memory` when all 200 hits of its search were checked)."""
    held = shown.layer() if shown is not None else Shown()
    for hit in hits:
        if hit.path in conversation or held.holds(hit.text):
            continue
        lines = hit.text.split("\n")
        if len(lines) > 1:
            text = _unheld(lines, held)
            if not text.replace(GAP, "").strip():
                continue
            hit = hit if text == hit.text else replace(hit, text=text)
        yield hit
        held.add(hit.text)


def cut_to(hits: Iterable[Hit], tokens: int, *, count: Count) -> Iterator[Hit]:
    """The hits, each of several lines cut to its first lines within `tokens` ("…" after
    them): a section smaller than one hit still shows its best one's start (at an 8k window
    the section has ~150 tokens, and a day's note asked by its date, "what happened
    yesterday?", is one hit of ~175 that was passed over whole). Only a hit longer than
    twice `tokens` in characters is counted (a token is 3–4 characters of words)."""
    for hit in hits:
        if len(hit.text) <= 2 * tokens or count(hit.text) <= tokens:
            yield hit
            continue
        lines = hit.text.split("\n")
        while len(lines) > 1 and count("\n".join([*lines, GAP])) > tokens:
            lines.pop()
        if len(lines) < len(hit.text.split("\n")):
            yield replace(
                hit, text="\n".join([*lines, GAP]) if lines[-1] != GAP else "\n".join(lines)
            )
        else:
            yield hit


def _unheld(lines: Sequence[str], held: Shown) -> str:
    """The lines `held` does not hold (a line shorter than `TRIM_CHARS` stays: it costs less
    than the mark), "…" (`GAP`) where any were left out, once."""
    kept: list[str] = []
    for line in lines:
        if line != GAP and (len(line) < TRIM_CHARS or not held.holds(line)):
            kept.append(line)
        elif not kept or kept[-1] != GAP:
            kept.append(GAP)
    return "\n".join(kept)


def said(hit: Hit) -> str:
    """A hit's snippet as the section shows it: an exchange on one line (`… | …`, as its daily
    note line), another hit's lines each on its own, indented under the first ("…" where lines
    were left out kept on the line it stands beside); without a daily note line's clock (the
    day heads the hit), without the `User:` label before a group member's name (`Ann: …`,
    `bot.conversation.speakers`: the name says who spoke) and without a side that said
    nothing (`User: | Assistant: …`, `Ann: … | Assistant:`: a message no one answered)."""
    lines = [line for raw in hit.text.split("\n") if (line := _said_line(raw))]
    if hit.kind == EXCHANGE:  # `User: …` and `Assistant: …`, as its note line reads
        return " | ".join(lines).replace(f"{GAP} | ", f"{GAP} ").replace(f" | {GAP}", f" {GAP}")
    shown: list[str] = []
    for n, line in enumerate(lines):
        if line != GAP:
            shown.append(f"{GAP} {line}" if n and lines[n - 1] == GAP else line)
        elif shown and n == len(lines) - 1:
            shown[-1] += f" {GAP}"
    return f"\n{INDENT}".join(shown)


@functools.lru_cache(maxsize=4096)  # a section's lines; a day's note lines come up turn after turn
def _said_line(raw: str) -> str:
    """A line of a hit as `said` shows it ("" when nothing is left of it)."""
    return _EMPTY_SIDE.sub("", _LABELLED.sub(_unlabelled, " ".join(body_of(raw).split())))


def _unlabelled(label: re.Match[str]) -> str:
    """ "" for the label before a name (each word capitalised), else the label."""
    name = label[1].split()
    return "" if all(word[0].isupper() for word in name) else label[0]


def hit_line(hit: Hit, *, notes: str | None = None) -> str:
    """`- [citation] snippet`: a daily note in the `notes` folder cites its lines alone (its
    day heads it, the folder is named once: `notes_line`), an item its id, an exchange nothing
    (`memory_get` reads files, not past conversations: `memory_search` finds more of one)."""
    if hit.kind == EXCHANGE:
        return f"- {said(hit)}"
    if hit.kind == ITEM:
        return f"- [{hit.path.rpartition('#')[2]}] {said(hit)}"
    short = notes is not None and hit.lines and _notes_folder(hit) == notes
    return f"- [{hit.lines if short else hit.citation}] {said(hit)}"


def notes_line(folder: str) -> str:
    """Where a hit's `[L3-L9]` is: its day's note in `folder` (a path relative to memory/)."""
    return NOTES.format(note=f"{folder}<day>.md")


def day_of(hit: Hit) -> str:
    """The day a hit is shown under: a daily note's own day, else the day it was written."""
    return _note_day(hit.path) or f"{hit.at:%Y-%m-%d}"


def fit(
    hits: Iterable[Hit],
    *,
    k: int,
    budget: int,
    count: Count,
    found: int | None = None,  # matches the search found (`hits` may be fewer: the new ones)
) -> tuple[str, list[Hit]]:
    """The section of the best hits, at most `k`, that fit `budget` tokens (heading, notes
    line, days and notice included), and those hits; a hit too long for the room left is
    passed over and the next may still fit. ("", []) when none does. The notes folder named
    once is the first daily note hit's (`hits` is read only until the section is full); the
    notice counts `found` (else the hits) less those shown. `count` is the bot's (cl100k,
    `bot.llm.tokens`): a hit line whose words alone are over the room left is not counted
    (`tokens.at_least`)."""
    if found is None:
        hits = list(hits)
        found = len(hits)
    room = budget - count(HEADER) - count(MORE.format(count=found)) - 2
    notes: str | None = None
    intro = ""
    days: dict[str, list[str]] = {}
    shown: list[Hit] = []
    named = False  # whether a shown hit cites lines of `notes`: the intro is then shown
    for hit in hits:
        if len(shown) == k or room < MIN_LINE_TOKENS:
            break
        if notes is None and (notes := _notes_folder(hit)) is not None:
            intro = notes_line(notes)
        line, day = hit_line(hit, notes=notes), day_of(hit)
        names = not named and notes is not None and _notes_folder(hit) == notes
        cost = 1 + (0 if day in days else count(f"## {day}") + 1)
        cost += count(intro) + 1 if names else 0
        if at_least(line) + cost > room:  # cannot fit: not counted (most, once nearly full)
            continue
        cost += count(line)
        if cost <= room:
            days.setdefault(day, []).append(line)
            shown.append(hit)
            named = named or names
            room -= cost
    if not shown:
        return "", []
    more = found - len(shown)
    head = [HEADER, *([intro] if named else [])]
    body = [line for day in sorted(days) for line in (f"## {day}", *days[day])]
    return "\n".join([*head, *body, *([MORE.format(count=more)] if more else [])]), shown


def _notes_folder(hit: Hit) -> str | None:
    """The folder of a daily note hit (`chats/<key>/`, "" for memory/ itself), else None."""
    if hit.kind == EXCHANGE or _note_day(hit.path) is None:
        return None
    return hit.path.rpartition("/")[0] + "/" if "/" in hit.path else ""


def _note_day(path: str) -> str | None:
    day = file_day(path)
    return None if day is None else day.isoformat()


def render_relevant(hits: Sequence[Hit], *, k: int, budget: int, count: Count) -> str:
    """The best hits, at most `k`, that fit `budget` tokens; "" when none does."""
    return fit(hits, k=k, budget=budget, count=count)[0]
