"""A regenerable evalset of months-long chats between two named people, with known answers.

    python -m benchmarks.evalsets.synthetic tests/data/evalset_months.json \
        [--seed 13] [--conversations 10]

The same seed gives the same file, byte for byte. Each conversation is two people (the first
speaks as "user", the second as "assistant"; their names are in the conversation's
`speakers`) meeting in 20 dated sessions 4–16 days apart, about six months. Each
person gets facts that change once (a job, a city, …; `benchmarks.evalsets.phrasebook`),
facts told once (a dog, an allergy, a race, …) and people introduced by relation ("my sister
Lena") who come back later by name alone (`benchmarks.evalsets.cast`). Around them:
greetings, small talk that shares their words, reactions. Questions, with the turns that hold
the answer as evidence, by category:

    single-hop        one fact turn
    knowledge-update  the current value (the later turn) or the earlier one (both turns)
    temporal          when a fact was told (its session's date) or which of two came first
    multi-hop         two turns of different sessions: a relation and what the person named
                      did later, both values of a changing fact, the same fact of both people
    open-domain       a fact plus world knowledge (a city's country, an instrument's family)
    temporal-dated    a fact asked by a time relative to the question's `date` ("what did Tom
                      say about the car two weeks ago?"), or all that a day told ("what
                      happened yesterday?"); the time names the fact's session (`timing`)
    people            someone mentioned asked by name or place ("what did Lena open?", "who
                      is moving to Leeds?"), or who they are ("how does Tom know Lena?")

The last two are planned after the rest, with a random generator of their own, so adding them
left every other question as it was.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from benchmarks.evalsets import cast, timing
from benchmarks.evalsets import phrasebook as book
from bot.storage.files import atomic_write_text

SEED = 13
CONVERSATIONS = 10
SESSIONS = 20
FIRST_DAY = date(2025, 1, 6)
CHANGING_EACH, SINGLES_EACH, RELATIONS_EACH = 3, 3, 3
_PRONOUNS = {"she": "her", "he": "his"}


@dataclass(frozen=True)
class Person:
    name: str
    they: str
    role: str  # the speaker in the dataset: "user" or "assistant"

    @property
    def their(self) -> str:
        return _PRONOUNS[self.they]


@dataclass(frozen=True)
class Line:
    """A fact someone says in a session; `handle` finds its turn once the sessions exist."""

    person: Person
    text: str
    session: int
    handle: int
    topic: str = ""  # what it is about (`timing.TOPICS`), "" for what no dated question asks


@dataclass(frozen=True)
class Mention:
    """Someone a person introduced by relation and later told news of, by name."""

    person: Person
    slots: Mapping[str, str]  # name, place, street, pet
    by_name: tuple[str, ...]  # questions that name them (`cast.EVENTS`)
    intro: int  # the handles of the two lines
    told: int


@dataclass(frozen=True)
class Asked:
    category: str
    text: str
    evidence: tuple[int, ...]  # line handles
    day: date | None = None  # the day it is asked, for a question that names a time


@dataclass
class Chat:
    """One conversation being planned: its fact lines and its questions."""

    rng: random.Random
    a: Person
    b: Person
    lines: list[Line] = field(default_factory=list)
    questions: list[Asked] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)

    def say(
        self,
        person: Person,
        template: str,
        session: int,
        slots: Mapping[str, str],
        *,
        topic: str = "",
    ) -> int:
        handle = len(self.lines)
        self.lines.append(Line(person, _fill(template, slots), session, handle, topic))
        return handle

    def ask(self, category: str, template: str, evidence: Sequence[int], **slots: str) -> None:
        self.ask_on(None, category, template, evidence, **slots)

    def ask_on(
        self,
        day: date | None,  # the day it is asked: a question that names a time
        category: str,
        template: str,
        evidence: Sequence[int],
        /,
        **slots: str,
    ) -> None:
        text = _fill(template, {"A": self.a.name, "B": self.b.name, **slots})
        self.questions.append(Asked(category, text, tuple(evidence), day))

    def pick(self, options: Sequence[str]) -> str:
        return self.rng.choice(options)


def _fill(template: str, slots: Mapping[str, str]) -> str:
    text = template.format_map(dict(slots))
    return text[0].upper() + text[1:] if template[0] == "{" else text


def generate(*, seed: int = SEED, conversations: int = CONVERSATIONS) -> dict[str, object]:
    """The dataset as JSON-ready values (the format of `bot.eval.dataset`)."""
    found: list[dict[str, object]] = []
    questions: list[dict[str, object]] = []
    for number in range(conversations):
        chat_id = f"c{number + 1:02d}"
        rngs = (random.Random(f"{seed}:{chat_id}"), random.Random(f"{seed}:{chat_id}:asked"))
        conversation, asked = _conversation(rngs, chat_id, number)
        found.append(conversation)
        questions.extend(asked)
    about = f"made by `python -m benchmarks.evalsets.synthetic` (seed {seed}); do not edit by hand"
    return {"about": about, "conversations": found, "questions": questions}


def _conversation(
    rngs: tuple[random.Random, random.Random], chat_id: str, number: int
) -> tuple[dict[str, object], list[dict[str, object]]]:
    rng, later = rngs
    (name_a, they_a), (name_b, they_b) = rng.sample(cast.PEOPLE, 2)
    chat = Chat(rng, Person(name_a, they_a, "user"), Person(name_b, they_b, "assistant"))
    _plan(chat)
    days = _days(rng, FIRST_DAY + timedelta(days=3 * number))
    sessions, turn_of = _sessions(chat, chat_id, days)
    chat.rng = later
    _dated(chat, days)
    _people(chat)
    conversation: dict[str, object] = {
        "id": chat_id,
        "speakers": {"user": chat.a.name, "assistant": chat.b.name},
        "sessions": sessions,
    }
    questions: list[dict[str, object]] = [
        {
            "conversation": chat_id,
            "question": asked.text,
            "evidence": [turn_of[h] for h in asked.evidence],
            "category": asked.category,
            **({"date": asked.day.isoformat()} if asked.day else {}),
        }
        for asked in chat.questions
    ]
    return conversation, questions


def _days(rng: random.Random, first: date) -> list[date]:
    days = [first]
    while len(days) < SESSIONS:
        days.append(days[-1] + timedelta(days=rng.randint(4, 16)))
    return days


# ---------------------------------------------------------------------- the facts


def _plan(chat: Chat) -> None:
    names = chat.rng.sample(cast.OTHERS, 2 * RELATIONS_EACH)
    singles: dict[str, list[tuple[int, int, str]]] = {}
    for person in (chat.a, chat.b):
        timeline: list[tuple[int, int, str]] = []  # (session, handle, event name)
        for topic in chat.rng.sample(book.CHANGING, CHANGING_EACH):
            timeline.append(_changing(chat, person, topic))
        for single in chat.rng.sample(book.SINGLES, SINGLES_EACH):
            singles.setdefault(single.name, []).append(_single(chat, person, single))
            timeline.append(singles[single.name][-1])
        relations = chat.rng.sample(cast.RELATIONS, RELATIONS_EACH)
        events = chat.rng.sample(cast.EVENTS, RELATIONS_EACH)
        for relation, event in zip(relations, events, strict=True):
            _relation(chat, person, names.pop(), relation, event)
        _order(chat, person, timeline)
    for single in book.SINGLES:
        told = singles.get(single.name, [])
        if len(told) == 2 and told[0][0] != told[1][0]:
            chat.ask("multi-hop", single.pair, [told[0][1], told[1][1]])


def _changing(chat: Chat, person: Person, topic: book.Changing) -> tuple[int, int, str]:
    old, new = chat.rng.sample(topic.values, 2)
    early = chat.rng.randrange(0, SESSIONS // 2)
    late = chat.rng.randrange(early + 3, SESSIONS)
    before = chat.say(person, chat.pick(topic.first), early, old, topic=topic.name)
    after = chat.say(person, chat.pick(topic.change), late, new, topic=topic.name)
    x = person.name
    chat.ask("knowledge-update", chat.pick(topic.now), [after], X=x)
    chat.ask("knowledge-update", chat.pick(topic.before), [before, after], X=x)
    chat.ask("temporal", chat.pick(topic.when), [after], X=x)
    chat.ask("open-domain", chat.pick(topic.world), [after], X=x)
    chat.ask("multi-hop", book.BOTH[topic.name], [before, after], X=x)
    return late, after, book.EVENT_NAMES[topic.name]


def _single(chat: Chat, person: Person, single: book.Single) -> tuple[int, int, str]:
    value = chat.rng.choice(single.values)
    session = chat.rng.randrange(0, SESSIONS)
    handle = chat.say(person, chat.pick(single.lines), session, value, topic=single.name)
    for category, question in single.questions:
        chat.ask(category, question, [handle], X=person.name, **value)
    return session, handle, book.EVENT_NAMES.get(single.name, "")


def _relation(
    chat: Chat,
    person: Person,
    name: str,
    relation: cast.Relation,
    happened: tuple[str, tuple[str, ...], tuple[str, ...]],
) -> None:
    event, questions, by_name = happened
    slots = {
        "name": name,
        "place": chat.pick(cast.PLACES),
        "street": chat.pick(cast.STREETS),
        "pet": chat.pick(cast.CATS),
    }
    first = chat.rng.randrange(0, SESSIONS - 3)
    later = chat.rng.randrange(first + 2, SESSIONS)
    intro = chat.say(person, chat.pick(relation.intro), first, slots)
    told = chat.say(person, event, later, slots)
    chat.mentions.append(Mention(person, slots, by_name, intro, told))
    chat.ask(
        "multi-hop",
        chat.pick(questions),
        [intro, told],
        X=person.name,
        relation=relation.relation,
    )


def _order(chat: Chat, person: Person, timeline: list[tuple[int, int, str]]) -> None:
    """One question on which of two facts came first (in different sessions)."""
    named = sorted(event for event in timeline if event[2])
    pairs = [(a, b) for a in named for b in named if a[0] < b[0]]
    if not pairs:
        return
    early, late = chat.rng.choice(pairs)
    first, second = (early, late) if chat.rng.random() < 0.5 else (late, early)
    chat.ask(
        "temporal",
        chat.pick(book.ORDER),
        [first[1], second[1]],
        X=person.name,
        a=first[2],
        b=second[2],
    )


# ---------------------------------------------------------------------- time and people

DATED_EACH, HAPPENED_EACH, WHO_EACH = 8, 2, 2


def _dated(chat: Chat, days: Sequence[date]) -> None:
    """Facts asked by when they were told; and what some days told, by the day alone."""
    topical = [line for line in chat.lines if line.topic]
    for line in chat.rng.sample(topical, min(DATED_EACH, len(topical))):
        when, day = timing.phrase(chat.rng, days[line.session])
        topic = chat.pick(timing.TOPICS[line.topic])
        template = chat.pick(timing.ABOUT)
        slots = {"X": line.person.name, "topic": topic, "when": when}
        chat.ask_on(day, "temporal-dated", template, [line.handle], **slots)
    told = sorted({line.session for line in chat.lines})
    for session in chat.rng.sample(told, min(HAPPENED_EACH, len(told))):
        when, day = timing.phrase(chat.rng, days[session], one_day=True)
        evidence = [line.handle for line in chat.lines if line.session == session]
        chat.ask_on(day, "temporal-dated", chat.pick(timing.HAPPENED), evidence, when=when)


def _people(chat: Chat) -> None:
    """Each person mentioned asked by name or place; some asked who they are."""
    for mention in chat.mentions:
        chat.ask("people", chat.pick(mention.by_name), [mention.told], **mention.slots)
    for mention in chat.rng.sample(chat.mentions, min(WHO_EACH, len(chat.mentions))):
        slots = {"X": mention.person.name, **mention.slots}
        chat.ask("people", chat.pick(cast.WHO), [mention.intro], **slots)


# ---------------------------------------------------------------------- the sessions


def _sessions(
    chat: Chat, chat_id: str, days: Sequence[date]
) -> tuple[list[dict[str, object]], dict[int, str]]:
    """Every session's turns; and each fact line's turn id."""
    sessions: list[dict[str, object]] = []
    turn_of: dict[int, str] = {}
    for number, day in enumerate(days):
        facts = [line for line in chat.lines if line.session == number]
        turns: list[dict[str, str]] = []
        for a_says, b_says, handle in _exchanges(chat, facts):
            for person, text in ((chat.a, a_says), (chat.b, b_says)):
                turn_id = f"{chat_id}-s{number + 1:02d}-t{len(turns) + 1:02d}"
                turns.append({"id": turn_id, "speaker": person.role, "text": text})
                if handle is not None and person is _teller(chat, facts, handle):
                    turn_of[handle] = turn_id
        sessions.append({"id": f"s{number + 1:02d}", "date": day.isoformat(), "turns": turns})
    return sessions, turn_of


def _teller(chat: Chat, facts: Sequence[Line], handle: int) -> Person:
    return next(line.person for line in facts if line.handle == handle)


def _exchanges(chat: Chat, facts: Sequence[Line]) -> list[tuple[str, str, int | None]]:
    """(what the first says, what the second answers, the fact line's handle if any):
    a greeting, the facts among small talk, a goodbye."""
    names = {"A": chat.a.name, "B": chat.b.name}
    middle: list[tuple[str, str, int | None]] = []
    for line in facts:
        if line.person is chat.a:
            middle.append((line.text, chat.pick(cast.REACTIONS), line.handle))
        else:
            middle.append((_fill(chat.pick(cast.ASKS), names), line.text, line.handle))
    for _ in range(chat.rng.randint(3, 5)):
        small_talk = chat.rng.sample(cast.SMALL_TALK, 2)
        middle.insert(chat.rng.randint(0, len(middle)), (small_talk[0], small_talk[1], None))
    greeting = (_fill(chat.pick(cast.GREETINGS), names), _fill(chat.pick(cast.ANSWERS), names))
    goodbye = (chat.pick(cast.CLOSINGS), _fill(chat.pick(cast.GOODBYES), names))
    return [(*greeting, None), *middle, (*goodbye, None)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.evalsets.synthetic", description=__doc__
    )
    parser.add_argument("output", type=Path, metavar="OUTPUT.json")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--conversations", type=int, default=CONVERSATIONS)
    args = parser.parse_args(argv)
    dataset = generate(seed=args.seed, conversations=args.conversations)
    atomic_write_text(args.output, json.dumps(dataset, indent=1, ensure_ascii=False) + "\n")
    asked = len(questions) if isinstance(questions := dataset["questions"], list) else 0
    print(f"{args.output}: {args.conversations} conversations, {asked} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
