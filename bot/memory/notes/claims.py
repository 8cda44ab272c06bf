"""What a fact claims, to tell a correction from one more fact: its subject, its relation (an
attribute, or what its verb says), its value, and whether it says the relation holds.

    Ann lives in Lyon                  ann · home · lyon
    Ann moved to Bergen                ann · home · bergen
    User drinks coffee                 user · drink · coffee
    I drink green tea in the morning   user · drink (in the morning) · green tea
    I prefer tea to coffee now         user · prefer · tea, displacing coffee
    I no longer drink coffee           user · drink · coffee, not holding
    Ann's phone number is 555-1234     ann · phone number · 555-1234
    The gate code is 1234              the · gate code · 1234

The subject is the words before the verb (I, me, my, "user", "the owner" and none at all are
the user; "my sister Ann" is Ann). A newer claim contradicts an older one (`contradicts`) when
both have the same subject and

1. the same relation, one that holds a single value at a time (`SINGLE`, `ATTRIBUTES`: where
   someone lives, their employer, job, partner, name, age, diet, drink; a `<someone>'s
   <thing> is …` for a thing one has one of), and another value; or
2. the same relation and value, one saying it holds and the other that it no longer does
   ("no longer", "not … any more", "stopped", "quit", "gave up"), whatever the relation; or
3. the newer names the older's value as the one it displaces ("A instead of B", "A rather than
   B", "prefers A to B", "A over B", "switched from B to A") in the same family of relations
   (`FAMILY`: what someone likes, drinks, eats or prefers is one family; a home another).

A qualifier of a habit (`in the morning`, `at work`, `on weekends`) is part of its relation: the
morning's drink does not replace the evening's. Anything else — another subject, a relation that
holds many values at once ("likes tea" and "likes jazz"), a shape the rule does not read — is a
new fact beside the old one. The words are English; a fact in another language is never a
correction by the rule (the model can still name what it replaces).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from bot.memory.lines import bare

USER = frozenset({"", "i", "me", "my", "myself", "user", "the user", "owner", "the owner"})


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


KIN = _set(
    "sister brother mother mom mum father dad wife husband partner friend boss colleague son "
    "daughter aunt uncle cousin grandma grandpa neighbour neighbor roommate flatmate"
)
# verb (its forms) → relation; (verb, preposition) for those whose meaning the preposition makes
VERBS: dict[str, str] = {
    "live in": "home", "live at": "home", "move to": "home", "move into": "home",
    "relocate to": "home", "reside in": "home", "based in": "home", "settle in": "home",
    "work at": "employer", "work for": "employer", "work as": "job", "work in": "work in",
    "drink": "drink", "eat": "eat", "like": "like", "love": "like", "enjoy": "like",
    "prefer": "prefer", "adore": "like", "hate": "dislike", "dislike": "dislike",
    "drive": "drive", "married to": "partner", "marry": "partner", "engaged to": "partner",
    "marry to": "partner", "date": "partner", "study at": "school", "study in": "school",
    "call": "name", "switch to": "switch",
    "name": "name", "use": "use", "play": "play", "speak": "speak", "own": "own", "have": "have",
    "smoke": "smoke", "support": "team", "switch": "switch", "go by": "name",
}  # fmt: skip
SINGLE = frozenset({"home", "employer", "job", "work in", "drink", "drive", "partner", "school",
                    "name", "team", "age", "status", "diet", "when"})  # fmt: skip
FAMILY = {"drink": "taste", "eat": "taste", "like": "taste", "prefer": "taste", "switch": "taste",
          "favourite": "taste", "dislike": "taste", "home": "home"}  # fmt: skip
ATTRIBUTES = (
    r"birthday|address|phone(?: number)?|(?:e-?)?mail(?: address)?|job|employer|boss|manager|"
    r"partner|wife|husband|boyfriend|girlfriend|name|age|favou?rite \w+|dentist|doctor|"
    r"anniversary|deadline|due date|home|city|country|time ?zone|salary|title|role|code|"
    r"password|pin|car|school|team|landlord|bank|gym|diet|drink|coffee order|usual \w+"
)
_STATUS = {"single": "status", "married": "status", "divorced": "status", "engaged": "status",
           "widowed": "status", "vegetarian": "diet", "vegan": "diet",
           "pescatarian": "diet"}  # fmt: skip
_AUX = _set(
    "does do did will would is are was were has have had also still now usually always often "
    "mostly really just currently actually recently"
)
_LEAD = re.compile(r"^(?:(?:actually|now|update|correction|these days|nowadays|from now on|"
                   r"since then|lately)[,:]?\s+)+")  # fmt: skip
_TAIL = re.compile(r"(?:[,;]?\s+(?:now|these days|nowadays|any ?more|again|currently|"
                   r"at the moment|instead|lately))+$")  # fmt: skip
_NOT = re.compile(r"\b(?:no longer|(?:does|do|did|is|are|was|has|have)(?: not|n't)|never|"
                  r"stopped|quit|gave up|given up)\b\s*")  # fmt: skip
_DISPLACED = re.compile(r"(?:,\s+not|\s+instead of|\s+rather than|\s+more than)\s+(?P<b>.+)$")
_CHOOSING = _set("prefer like love choose pick")  # "A over B" says A is chosen over B
_PREPOSITIONS = _set("to at in on from with around through into onto for by")
_FROM_TO = re.compile(r"\bfrom\s+(?P<b>.+?)\s+to\s+(?P<a>.+)$")
_OWNS = re.compile(
    rf"^(?:(?P<my>my|our)|(?P<s>[\w .'-]+?)'s|the)\s+(?P<m>[\w -]*?)\b(?P<a>{ATTRIBUTES})\s+"
    r"(?:is|are|was|(?:has |have |was |were )?(?:moved|changed|switched) to)\s+(?:now\s+)?"
    r"(?P<v>.+)$"
)
_SAME_ATTRIBUTE = {"email address": "email", "e-mail": "email", "mail": "email",
                   "mail address": "email", "e-mail address": "email", "phone number": "phone",
                   "city": "home"}  # fmt: skip
_WHEN = re.compile(
    r"^(?P<s>[\w .'-]+?)\s+(?:is|are)\s+(?:due\s+)?on\s+(?P<v>(?:\d|mon|tue|wed|thu|fri|sat|"
    r"sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|today|tomorrow|next).*)$"
)
_COPULA = re.compile(r"^(?P<s>[\w .'-]*?)\s*\b(?:is|are|am|was)\s+(?P<v>.+)$")
_AGE = re.compile(r"^(?P<v>\d{1,3})(?: years? old)?$")
_WHENEVER = re.compile(  # when a habit holds: the qualifier of a job
    r"\s+(?P<q>(?:in the (?:morning|afternoon|evening)s?|at (?:night|weekends?)|on (?:weekends?|"
    r"weekdays|\w+days?)|every \w+|before \w+|after \w+|when .+).*)$"
)
_QUALIFIED = re.compile(  # how, when or with what something is had: of a drink, a food, a car
    r"\s+(?P<q>(?:in|at|on|with|for|before|after|during|when|every|each|most)\b.*)$"
)
_HABITS = {"drink": _QUALIFIED, "eat": _QUALIFIED, "drive": _QUALIFIED, "employer": _WHENEVER,
           "work in": _WHENEVER}  # a qualifier is part of their relation  # fmt: skip
_SHORT = {"ve": "have", "m": "am", "re": "are", "d": "had"}
_QUITS = _set("stopped quit") | {"gave up", "given up"}  # with a noun: whatever held it stops
_PRONOUNS = _set("it that this them those these there one so too")
_CLAUSE = re.compile(r"\s*(?:,(?!\s(?:not|instead|rather)\b)|[;:(]|\s(?:and|but|because|so|"
                     r"which|who|though|although|if|while)\s).*$")  # fmt: skip
ANY = "*"  # the relation of what no longer holds, whatever it was ("quit Google")
_WORD = re.compile(r"[\w'-]+")
_ARTICLES = frozenset({"a", "an", "the", "some", "my", "his", "her", "their", "our"})


@dataclass(frozen=True)
class Claim:
    subject: str
    relation: str  # "home", "drink (in the morning)", "phone number", a verb's lemma …
    value: str
    holds: bool = True  # False: it says the relation no longer holds
    displaces: str = ""  # a value it names as replaced ("coffee" in "tea instead of coffee")
    single: bool = False  # a relation that holds one value at a time

    @property
    def key(self) -> tuple[str, str]:
        return self.subject, self.relation

    @property
    def family(self) -> str:
        head = self.relation.split(" (", 1)[0]
        return FAMILY.get(head, FAMILY.get(head.split()[0], head))


def contradicts(old: Claim, new: Claim) -> bool:
    """Whether `new` corrects `old` (see the module's docstring)."""
    if old.subject != new.subject:
        return False
    named = new.relation == "switch" or old.family == new.family  # "from B to A" names B
    if new.displaces and old.holds and named and _same_value(old.value, new.displaces):
        return True
    if not new.holds and new.relation == ANY and old.holds:  # "quit Google", "gave up tennis"
        return _covers(new.value, old.value)
    if old.relation != new.relation:
        return False
    if old.holds != new.holds:  # what stops may be said more generally than what held
        return (
            _covers(new.value, old.value) if old.holds else _nouns(old.value) == _nouns(new.value)
        )
    return new.single and old.value != new.value


@lru_cache(maxsize=4096)  # a file's lines are read again at every append
def claim_of(fact: str) -> Claim | None:
    """What a fact claims, or None for a shape the rule does not read."""
    text = _plain(fact)
    if not text:
        return None
    negation = _NOT.search(text)
    holds = negation is None
    text = " ".join(_NOT.sub("", text).split()) if not holds else text
    found = _attribute(text, holds) or _state(text, holds) or _verb(text, holds)
    if found is not None or negation is None or negation[0].strip() not in _QUITS:
        return found if found is None or found.value not in _PRONOUNS else None
    return _given_up(text)


def _given_up(text: str) -> Claim | None:
    """`Sam quit Google`, `User gave up tennis`: what no longer holds, whatever it was."""
    words = text.split()
    for at in range(1, min(len(words), 4)):
        if _is_subject(words[:at]) and (value := _value(" ".join(words[at:]))):
            return Claim(_subject(" ".join(words[:at])), ANY, value, holds=False)
    return None


def _plain(fact: str) -> str:
    text = " ".join(bare(fact).casefold().replace("’", "'").split()).rstrip(".!;")
    text = re.sub(r"\b(i|you|we|they)'(ve|m|re|d)\b", lambda m: f"{m[1]} {_SHORT[m[2]]}", text)
    text = _CLAUSE.sub("", text)  # the main clause: what a subordinate one says is not the claim
    text = re.sub(r"\s*\([^)]*\)", "", text)  # "Ann (sister)": the name is Ann
    return _TAIL.sub("", _LEAD.sub("", text)).strip(" ,")


def _attribute(text: str, holds: bool) -> Claim | None:
    if found := _OWNS.match(text):
        subject = "user" if found["my"] else _subject(found["s"] or "the")
        named = _SAME_ATTRIBUTE.get(found["a"], found["a"])
        attribute = " ".join(f"{found['m']} {named}".split())
        value, displaced = _displaced(found["v"])
        return Claim(subject, attribute, _value(value), holds, displaced, single=True)
    if found := _WHEN.match(text):
        return Claim(_subject(found["s"]), "when", _value(found["v"]), holds, single=True)
    return None


def _verb(text: str, holds: bool) -> Claim | None:
    words = [w for w in text.split() if w != "back"]  # "moved back to"
    for at, word in enumerate(words):
        relation, used = _relation(word, words[at + 1 : at + 2])
        if relation is None or not _is_subject(words[:at]):
            continue
        if relation == "have" and _auxiliary(words[at + 1 :]):
            continue  # "has moved to", "have been": the verb is the next one
        rest = " ".join(words[at + 1 + used :])
        if not used and rest.split(" ", 1)[0] in _PREPOSITIONS and relation != "switch":
            return None  # "drives to work": not what it drives
        if re.fullmatch(r"\w+ly", rest) or (relation == "home" and rest.startswith(("a ", "an "))):
            return None  # "drives carefully": how, not what; "lives in a dorm": not where
        value, displaced = _displaced(rest, head=word)
        single = relation in SINGLE
        if (qualifier := _HABITS.get(relation)) and (habit := qualifier.search(value)):
            value, relation = value[: habit.start()], f"{relation} ({habit['q']})"
        subject = _subject(" ".join(words[:at]))
        return Claim(subject, relation, _value(value), holds, displaced, single=single)
    return None


def _state(text: str, holds: bool) -> Claim | None:
    """`Ann is vegan`, `I am 34`, `Tom is married`: a status, a diet, an age."""
    found = _COPULA.match(text)
    if found is None or not _is_subject(found["s"].split()):
        return None
    value = found["v"].strip()
    if (age := _AGE.match(value)) is not None:
        return Claim(_subject(found["s"]), "age", age["v"], holds, single=True)
    if value in _STATUS:
        return Claim(_subject(found["s"]), _STATUS[value], value, holds, single=True)
    return None


def _relation(word: str, after: list[str]) -> tuple[str | None, int]:
    """The relation a word (and the preposition after it) names, and how many more words."""
    lemma = _lemma(word)
    if after and (relation := VERBS.get(f"{lemma} {after[0]}")) is not None:
        return relation, 1
    if lemma in ("live", "move", "work", "based", "married", "engaged", "study", "settle"):
        return None, 0  # their meaning is the preposition's: none that the rule knows
    return VERBS.get(lemma), 0


def _auxiliary(after: list[str]) -> bool:
    """Whether "have" before these words is an auxiliary: a participle or a verb follows."""
    if not after:
        return False
    word = after[0]
    return (
        word in ("been", "got", "gotten")
        or word.endswith("ed")
        or (_relation(word, after[1:2])[0] is not None)
    )


def _lemma(word: str) -> str:
    """A verb's base form, roughly: drinks, drank, drinking → drink; moved → move."""
    irregular = {"drank": "drink", "ate": "eat", "drove": "drive", "has": "have", "had": "have",
                 "went": "go", "called": "call", "named": "name", "quit": "quit"}  # fmt: skip
    if word in irregular:
        return irregular[word]
    for suffix, back in (("ies", "y"), ("ing", ""), ("ied", "y"), ("ed", ""), ("es", ""),
                         ("s", "")):  # fmt: skip
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            stem = word[: len(word) - len(suffix)] + back
            if stem in _STEMS:
                return stem
            if stem + "e" in _STEMS:
                return stem + "e"
            if len(stem) > 2 and stem[-1] == stem[-2] and stem[:-1] in _STEMS:
                return stem[:-1]  # "dropping" → "drop"
    return word


_STEMS = frozenset(key.split()[0] for key in VERBS) | {"live", "move", "work", "study", "settle"}


def _is_subject(words: list[str]) -> bool:
    """Whether the words before a verb can be its subject (a name, a pronoun, a short noun
    phrase), not a clause of its own."""
    kept = [w for w in words if w not in _AUX]
    return len(kept) <= 4 and all(_WORD.fullmatch(w) for w in kept)


def _subject(text: str) -> str:
    words = [w for w in text.strip(" ,.-").split() if w not in _AUX]
    if words and words[0] in ("the", "a", "an"):
        words = words[1:]
    if words and words[0] in ("my", "our") and len(words) > 2 and words[1] in KIN:
        words = words[2:]  # "my sister Ann" is Ann
    subject = " ".join(words).removesuffix("'s")
    return "user" if subject in USER else subject


def _displaced(value: str, *, head: str = "") -> tuple[str, str]:
    """The value, and a value it names as displaced ("" for none)."""
    if (moved := _FROM_TO.search(value)) is not None:
        return moved["a"], moved["b"]
    found = _DISPLACED.search(value)
    if found is not None and found["b"]:
        return value[: found.start()], _value(found["b"])
    if _lemma(head) in _CHOOSING and " over " in value:
        better, _, worse = value.partition(" over ")
        return better, _value(worse)
    if _lemma(head) == "prefer" and " to " in f" {value} ":
        better, _, worse = value.partition(" to ")
        return better, _value(worse)
    return value, ""


def _value(text: str) -> str:
    words = [w for w in _WORD.findall(_CLAUSE.sub("", text)) if w not in _ARTICLES]
    return " ".join(words)


def _same_value(one: str, other: str) -> bool:
    """Whether two values name the same thing (one holds the other's words: "coffee", "black
    coffee")."""
    a, b = _nouns(one), _nouns(other)
    return a == b or (bool(a and b) and (a <= b or b <= a))


def _covers(general: str, specific: str) -> bool:
    """Whether a value names the other or more of it ("coffee" covers "black coffee")."""
    a, b = _nouns(general), _nouns(specific)
    return a == b or (bool(a) and a <= b)


def _nouns(value: str) -> set[str]:
    """A value's words, a plural's "s" aside ("coffees" is coffee)."""
    words = _value(value).split()
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words}
