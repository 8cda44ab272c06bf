"""The synthetic evalset's facts: what its people tell and what is asked about them
(`benchmarks.evalsets.synthetic` puts it together; `benchmarks.evalsets.cast` holds the
people and the small talk).

Slots in braces: `{X}` the person a question is about, and each topic's own fields. A changing
topic has values with fields; its `first` lines state a value, `change` lines the new one; its
questions ask the current value (`now`), the earlier one (`before`), when it changed (`when`)
and what world knowledge adds to it (`world`: a city's country, an instrument's family). A
single fact is told once and asked in a few ways. Questions are worded as people ask: mostly in
other words than the lines, casual forms among them, some with a word of the line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Value = Mapping[str, str]


@dataclass(frozen=True)
class Changing:
    """A fact that changes once: a first value, later a second."""

    name: str
    values: tuple[Value, ...]
    first: tuple[str, ...]
    change: tuple[str, ...]
    now: tuple[str, ...]
    before: tuple[str, ...]
    when: tuple[str, ...]
    world: tuple[str, ...] = ()


def _values(field_names: str, rows: Sequence[str]) -> tuple[Value, ...]:
    keys = field_names.split()
    return tuple(dict(zip(keys, row.split(" / "), strict=True)) for row in rows)


CHANGING = (
    Changing(
        "job",
        _values(
            "role place field",
            [
                "nurse / St. Mary's hospital / health care",
                "software developer / a fintech startup / tech",
                "barista / the Bean There cafe / hospitality",
                "history teacher / Lincoln High / education",
                "graphic designer / an ad agency / design",
                "accountant / a law firm / finance",
                "electrician / a construction company / the trades",
                "line cook / an Italian restaurant / hospitality",
                "physical therapist / a sports clinic / health care",
                "librarian / the city library / education",
            ],
        ),
        first=(
            "I just accepted a job offer as a {role} at {place}, I start Monday!",
            "Big news: I'm going to be working as a {role} at {place}.",
            "First week of the new job as a {role} at {place} is done, exhausted but happy.",
        ),
        change=(
            "I handed in my notice at work. Next month I become a {role} at {place}.",
            "So I switched jobs, I'm a {role} at {place} now.",
            "Signed the contract for my new job today: {role}, {place}. Goodbye old office!",
        ),
        now=(
            "What does {X} do for a living these days?",
            "where is {X} employed at the moment?",
            "Remind me, what's {X}'s current job?",
            "{X}'s work right now, what is it?",
            "What's {X}'s new job?",
            "what role did {X} switch to",
        ),
        before=(
            "What was {X}'s job before the switch?",
            "Where did {X} work previously?",
            "what did {X} used to do for work before",
            "Which job did {X} hand in notice at?",
        ),
        when=(
            "When did {X} change jobs?",
            "Around what time did {X} start the new position?",
        ),
        world=(
            "Which industry is {X} employed in now?",
            "Is {X}'s present work in health care, tech, education or something else?",
        ),
    ),
    Changing(
        "home",
        _values(
            "city country continent",
            [
                "Denver / the United States / North America",
                "Lisbon / Portugal / Europe",
                "Toronto / Canada / North America",
                "Melbourne / Australia / Australia",
                "Berlin / Germany / Europe",
                "Osaka / Japan / Asia",
                "Edinburgh / Scotland / Europe",
                "Barcelona / Spain / Europe",
                "Nairobi / Kenya / Africa",
                "Santiago / Chile / South America",
            ],
        ),
        first=(
            "We've lived in {city} for about six years now and I still love it.",
            "Living in {city} gets pricier every year, our landlord raised the rent again.",
            "Spring in {city} is the best, the parks are full every evening.",
        ),
        change=(
            "The movers came yesterday, we're officially living in {city} now!",
            "We signed a lease in {city}, so the big move is happening.",
            "Still unpacking boxes after the move to the new apartment in {city}.",
        ),
        now=(
            "Which city does {X} live in now?",
            "where's {X} based these days",
            "What town did {X} relocate to?",
            "Where did {X} move to?",
            "where's {X}'s new apartment",
        ),
        before=(
            "Where did {X} live before moving?",
            "Which city did {X} leave behind?",
        ),
        when=(
            "When did {X} move house?",
            "How long ago did {X} relocate?",
            "When did the movers come for {X}?",
        ),
        world=(
            "What country is {X} living in now?",
            "Which continent did {X} end up on after the relocation?",
        ),
    ),
    Changing(
        "car",
        _values(
            "car kind",
            [
                "Honda Civic / petrol",
                "Tesla Model 3 / electric",
                "Subaru Outback / petrol",
                "Nissan Leaf / electric",
                "Toyota Prius / hybrid",
                "Mini Cooper / petrol",
                "Volvo XC60 / hybrid",
                "Ford Mustang / petrol",
            ],
        ),
        first=(
            "My old car, a {car}, broke down again on the highway, third time this year.",
            "Took my car in for new tyres, that {car} costs a fortune.",
        ),
        change=(
            "Traded in the old car, I'm driving a {car} now.",
            "Picked up my new car from the dealer this afternoon, a {car}!",
        ),
        now=(
            "What car does {X} drive now?",
            "which vehicle did {X} end up buying?",
            "What new car did {X} pick up from the dealer?",
        ),
        before=("What was {X}'s previous car?", "What did {X} drive before the new one?"),
        when=("When did {X} get the new car?", "when did {X} trade in the old car"),
        world=("Does {X}'s current car run on petrol, electricity or both?",),
    ),
    Changing(
        "instrument",
        _values(
            "instrument family",
            [
                "guitar / string",
                "piano / keyboard",
                "violin / string",
                "drums / percussion",
                "saxophone / woodwind",
                "cello / string",
                "trumpet / brass",
                "flute / woodwind",
            ],
        ),
        first=(
            "I signed up for {instrument} lessons on Thursday evenings.",
            "My neighbours must hate me, I practise the {instrument} every night.",
        ),
        change=(
            "I gave up on the old lessons and started learning the {instrument} instead.",
            "New teacher, new instrument: it's the {instrument} now and I love it.",
        ),
        now=(
            "What instrument is {X} learning these days?",
            "what does {X} play now?",
            "Which new instrument did {X} start?",
        ),
        before=("Which instrument did {X} try first?", "What did {X} quit playing?"),
        when=("When did {X} switch instruments?", "When did {X} give up the old lessons?"),
        world=("What family of instruments does {X}'s current one belong to?",),
    ),
    Changing(
        "sport",
        _values(
            "sport gear",
            [
                "tennis / a racket",
                "rock climbing / climbing shoes and chalk",
                "swimming / goggles",
                "cycling / a helmet",
                "boxing / gloves",
                "rowing / gloves for blisters",
                "volleyball / knee pads",
                "skateboarding / a board and pads",
            ],
        ),
        first=(
            "I joined a {sport} club, my new sport, training twice a week.",
            "Sore everywhere after {sport} practice yesterday.",
        ),
        change=(
            "My knee can't take it anymore, so I've switched to {sport}.",
            "Dropped the old club and the old sport. It's all {sport} for me now.",
        ),
        now=(
            "What sport is {X} into at the moment?",
            "how does {X} keep fit these days",
            "What did {X} switch to after the knee problems?",
        ),
        before=("What sport did {X} do before the knee trouble?", "Which club did {X} quit?"),
        when=("When did {X} take up the new sport?", "When did {X}'s knee force a switch?"),
        world=("What gear would make a useful gift for {X}'s current sport?",),
    ),
)


@dataclass(frozen=True)
class Single:
    """A fact told once; each question asks one field of it."""

    name: str
    values: tuple[Value, ...]
    lines: tuple[str, ...]
    questions: tuple[tuple[str, str], ...]  # (category, question)
    pair: str  # multi-hop: the same fact of both people ({A}, {B})


SINGLES = (
    Single(
        "pet",
        _values(
            "breed pet",
            [
                "beagle / Biscuit",
                "labrador / Pepper",
                "border collie / Scout",
                "dachshund / Noodle",
                "golden retriever / Maple",
                "corgi / Waffles",
                "greyhound / Dash",
                "poodle / Olive",
            ],
        ),
        lines=(
            "We adopted a {breed} puppy, the kids named him {pet}.",
            "Meet {pet}! Our new {breed} from the shelter.",
        ),
        questions=(
            ("single-hop", "What did {X}'s kids name the puppy?"),
            ("single-hop", "what breed did {X} adopt"),
            ("temporal", "When did {X} get the puppy?"),
            ("open-domain", "Is {X}'s pet likely to need a lot of exercise?"),
        ),
        pair="What are the names of the dogs {A} and {B} have?",
    ),
    Single(
        "allergy",
        _values("food", ["peanuts", "shellfish", "gluten", "sesame", "kiwi", "eggs", "dairy"]),
        lines=(
            "The doctor confirmed it, I'm allergic to {food}.",
            "Ended up in urgent care, turns out I react badly to {food}.",
        ),
        questions=(
            ("single-hop", "What is {X} allergic to?"),
            ("open-domain", "What should I leave out when cooking dinner for {X}?"),
        ),
        pair="Which foods are {A} and {B} allergic to?",
    ),
    Single(
        "food",
        _values(
            "dish cuisine",
            [
                "ramen / Japanese",
                "pad thai / Thai",
                "tacos al pastor / Mexican",
                "butter chicken / Indian",
                "pho / Vietnamese",
                "paella / Spanish",
                "pierogi / Polish",
                "bibimbap / Korean",
            ],
        ),
        lines=(
            "There's a tiny place near the station, their {dish} is the best I've ever had.",
            "I could eat {dish} every single day, honestly.",
        ),
        questions=(
            ("single-hop", "Which dish does {X} rave about?"),
            ("open-domain", "What kind of restaurant would {X} pick for a birthday dinner?"),
        ),
        pair="What are {A} and {B} each obsessed with eating?",
    ),
    Single(
        "book",
        _values(
            "book author",
            [
                "The Overstory / Richard Powers",
                "Piranesi / Susanna Clarke",
                "Circe / Madeline Miller",
                "Dune / Frank Herbert",
                "Educated / Tara Westover",
                "Project Hail Mary / Andy Weir",
                "Beloved / Toni Morrison",
            ],
        ),
        lines=(
            "I finished {book} by {author} last night, couldn't put it down.",
            "Reading {book} at the moment, {author} is a genius.",
        ),
        questions=(
            ("single-hop", "Which book did {X} finish reading?"),
            ("single-hop", "who wrote the book {X} was reading"),
        ),
        pair="Which books have {A} and {B} been reading?",
    ),
    Single(
        "race",
        _values(
            "race time",
            [
                "Riverside 10k / 52 minutes",
                "city half marathon / 1:58",
                "Harbour 5k / 24 minutes",
                "trail half marathon / 2:21",
                "Turkey Trot / 31 minutes",
            ],
        ),
        lines=(
            "I ran the {race} yesterday and finished in {time}!",
            "Did the {race} last weekend, {time}, legs are dead.",
        ),
        questions=(
            ("temporal", "When did {X} do the {race}?"),
            ("single-hop", "what was {X}'s finish time in the {race}"),
        ),
        pair="Did {A} or {B} run the faster race?",
    ),
)


# what a fact is called in an ordering question ("which came first for X: … or …?")
EVENT_NAMES = {
    "job": "the job change",
    "home": "the move",
    "car": "the new car",
    "instrument": "switching instruments",
    "sport": "the new sport",
    "pet": "getting the dog",
    "race": "the race",
}
BOTH = {  # multi-hop: both values of a changing fact
    "job": "What two jobs has {X} had?",
    "home": "Which cities has {X} called home?",
    "car": "which cars has {X} owned",
    "instrument": "What instruments has {X} played?",
    "sport": "Name the sports {X} has done.",
}
ORDER = (
    "Which came first for {X}: {a} or {b}?",
    "for {X}, was {a} before {b}?",
    "What happened earlier in {X}'s life, {a} or {b}?",
)
