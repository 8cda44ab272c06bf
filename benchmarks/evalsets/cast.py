"""Who the synthetic evalset's people are and the talk around their facts: names, the people
they mention by relation and what those did later (the multi-hop pairs), small talk, greetings,
reactions. Slots: `{A}`/`{B}` the two speakers, `{name}` someone mentioned, `{X}`, `{relation}`,
`{place}`, `{street}`, `{pet}`.
"""

from __future__ import annotations

from dataclasses import dataclass

PEOPLE = (
    ("Maya", "she"), ("Tom", "he"), ("Priya", "she"), ("Daniel", "he"), ("Sofia", "she"),
    ("Marcus", "he"), ("Elena", "she"), ("James", "he"), ("Aisha", "she"), ("Lucas", "he"),
    ("Hannah", "she"), ("Omar", "he"), ("Grace", "she"), ("Leo", "he"), ("Nina", "she"),
    ("Victor", "he"), ("Chloe", "she"), ("Ravi", "he"), ("Zoe", "she"), ("Felix", "he"),
)  # fmt: skip
OTHERS = (
    "Lena", "Rosa", "Ben", "Kai", "Ivy", "Hugo", "Greta", "Iris", "Jonah", "Mila", "Otto",
    "Ruth", "Sam", "Tara", "Wes", "Dora", "Eli", "Faye", "Gus", "Nora", "Pete", "Quinn",
)  # fmt: skip


@dataclass(frozen=True)
class Relation:
    """Multi-hop: someone introduced by relation in one session, named alone in a later one."""

    relation: str
    intro: tuple[str, ...]


RELATIONS = (
    Relation("sister", ("My sister {name} is staying with us this weekend.",)),
    Relation("brother", ("Had lunch with my brother {name}, he says hi.",)),
    Relation("best friend", ("{name}, my best friend since school, called for an hour.",)),
    Relation("coworker", ("A coworker of mine, {name}, covered my shift today.",)),
    Relation("neighbour", ("Our neighbour {name} lent us a ladder again.",)),
    Relation("cousin", ("My cousin {name} is in town for a conference.",)),
    Relation("old roommate", ("Bumped into {name}, my roommate from college!",)),
)

# (what happened, told by name only; questions about it through the relation; questions that
# name the person or the place instead: the "people" category)
EVENTS = (
    (
        "{name} is moving to {place} for grad school in the fall.",
        (
            "Where is {X}'s {relation} going to study?",
            "what city is {X}'s {relation} headed to",
            "Where is {X}'s {relation} doing grad school?",
        ),
        ("Where is {name} going for grad school?", "Who is moving to {place} in the fall?"),
    ),
    (
        "{name} got engaged on a hike, the ring was hidden in a granola bar.",
        (
            "How did {X}'s {relation} get proposed to?",
            "Any big news from {X}'s {relation}?",
            "Where was {X}'s {relation} when the engagement happened?",
        ),
        ("How did {name} get engaged?", "is {name} getting married"),
    ),
    (
        "{name} finally opened that bakery on {street}.",
        (
            "What business did {X}'s {relation} start?",
            "Where is the shop {X}'s {relation} runs?",
            "Which street is the bakery of {X}'s {relation} on?",
        ),
        ("What did {name} open?", "Who has a shop on {street}?", "where is {name}'s bakery"),
    ),
    (
        "{name} broke a wrist snowboarding, six weeks in a cast.",
        (
            "What injury did {X}'s {relation} have?",
            "why was {X}'s {relation} in a cast",
            "How did {X}'s {relation} break a wrist?",
        ),
        ("What happened to {name}'s wrist?", "why is {name} in a cast", "How did {name} get hurt?"),
    ),
    (
        "{name} adopted a cat called {pet}.",
        (
            "What's the name of the cat {X}'s {relation} took in?",
            "what did {X}'s {relation} call the cat",
        ),
        ("What's {name}'s cat called?", "Who took in a cat named {pet}?"),
    ),
    (
        "{name} is running for the school board in {place}.",
        (
            "What election is {X}'s {relation} standing in?",
            "Where is {X}'s {relation} running for office?",
        ),
        ("What is {name} running for?", "Who is standing for the school board in {place}?"),
    ),
)
WHO = (  # the "people" category: who someone named is (the turn that introduced them)
    "Who is {name}?",
    "How does {X} know {name}?",
    "what's {name} to {X}",
)
PLACES = ("Montreal", "Boston", "Glasgow", "Dublin", "Seattle", "Utrecht", "Bologna", "Leeds")
STREETS = ("Elm Street", "Harbour Road", "Quarry Lane", "Mill Street", "Bay Avenue")
CATS = ("Miso", "Pickle", "Juniper", "Toast", "Clementine", "Ziggy")

# turns that carry no fact: they share words with the facts, as real chat does
SMALL_TALK = (
    "How was your weekend?",
    "Pretty quiet, mostly laundry and a long walk.",
    "The weather has been awful all week.",
    "Did you watch the game last night?",
    "Work has been hectic, we have a deadline on Friday.",
    "I'm trying to drink less coffee, it's not going well.",
    "We finally cleaned out the garage.",
    "My sister keeps sending me cat videos.",
    "The dog next door barked all night.",
    "Thinking about a trip somewhere warm this winter.",
    "Our team at work got a new manager.",
    "I need a new pair of running shoes.",
    "The car needs an oil change, I keep forgetting.",
    "Anyone recommend a good book for the flight?",
    "Dinner plans tonight: leftovers and a movie.",
    "I've been sleeping badly, too much screen time.",
    "The kids have a school play next week.",
    "Our apartment is freezing, the heating broke.",
    "Practised a bit of music this evening, very rusty.",
    "Went to the farmers market, bought way too many apples.",
    "Traffic on the highway was terrible today.",
    "My phone screen cracked again.",
    "We should get dinner soon, it's been ages.",
    "I started a puzzle with a thousand pieces, big mistake.",
    "Friends from the old job came over for board games.",
    "I keep meaning to call my brother back.",
    "The gym was packed this morning.",
    "Saw a great documentary about octopuses.",
)
REACTIONS = (
    "That's great news!",
    "Oh wow, congrats!",
    "No way, tell me more.",
    "Ha, I love that.",
    "Sounds like a lot, hang in there.",
    "Nice, that's exciting.",
    "Ugh, sorry to hear that.",
    "Good for you, seriously.",
    "I'm so happy for you.",
    "That makes sense.",
    "Haha, classic.",
)
ASKS = (
    "Anything new on your side, {B}?",
    "How about you, {B}?",
    "What have you been up to?",
    "So what's your news?",
    "How are things with you?",
)
GREETINGS = ("Hey {B}!", "Hi {B}, long time!", "Morning {B}.", "Hey, got a minute?")
ANSWERS = ("Hey {A}, good to hear from you.", "Hi {A}! All good here.", "Hey {A}, sure.")
CLOSINGS = ("Talk soon!", "Gotta run, catch you later.", "Speak next week?")
GOODBYES = ("Bye {A}!", "Later!", "Take care.")
