"""One copy per prompt: when a text is already shown. The one owner of that rule.

Texts are compared `flat`: case-folded, whitespace collapsed, with the forms memory writes the
same words in made alike — a daily note's `[HH:MM]` and its ` | ` between user and assistant, a
list bullet, code fence markers, an ellipsis where a text was cut, full stops at the end. A text
is shown when each of its lines lies within what is already held (a note line holds its
exchange's words; a MEMORY.md line holds the item made of it), or when what it adds beyond the
shown lines it holds whole is less than `MIN_CHARS` of letters and digits (a turn item that is a
shown statement and "Noted."). Texts shorter than `MIN_CHARS` once flat never count as shown (a
"yes" is in every note); a long chunk that shares one line with the prompt is not shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from bot.memory.items.code import unfenced
from bot.memory.lines import unbulleted

MIN_CHARS = 12
_CLOCK = re.compile(r"(?m)^\s*\[\d{1,2}:\d{2}\]\s*")
_NOISE = re.compile(r"\s\|\s|…")
_LABELS = re.compile(r"\b(?:user|assistant):")
_LETTERS = re.compile(r"[^\w]|_")


@lru_cache(maxsize=4096)  # a turn compares a few hundred lines; most are the last turn's
def flat(text: str) -> str:
    """`text` as compared: see the module's docstring."""
    text = unfenced(_unbulleted(_CLOCK.sub("", text)))
    text = _NOISE.sub(" ", text)
    return " ".join(text.casefold().split()).rstrip(". ")


class Shown:
    """What a prompt holds so far; texts are added as they are placed. Checking a text costs
    about its own length, not the prompt's: held pieces are looked up whole, then by substring
    in their joined text, and the pieces a text may contain are found by their first words, up to
    three but never the last (a held line lies in a text from a word's start, and its last word
    may have punctuation after it there; notes' lines share their first two, "user:" and a
    common word)."""

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self._order: dict[str, int] = {}  # piece -> when it was added
        self._by_start: dict[str, dict[str, dict[str, list[str]]]] = {}  # `_key` -> pieces
        self._own: set[str] | None = None  # a layer's: first words whose pieces it copied
        self._under = ""  # a layer's: the pieces of the `Shown` it was made from, joined
        self._added: list[str] = []  # the pieces added to this one
        self._joined: str | None = ""  # and joined
        for text in texts:
            self.add(text)

    def layer(self) -> Shown:
        """A `Shown` holding all this one does, to which texts are added without adding them
        here: one made for many prompts (the parts of `# Memory` that stay from turn to turn)
        is read from any thread while nothing adds to it. Costs a copy of its index's first
        level; what is added below a first word copies that word's pieces."""
        made = Shown()
        made._order = dict(self._order)
        made._by_start = dict(self._by_start)
        made._own = set()
        made._under = self._held()
        return made

    def _held(self) -> str:
        """Every piece held, joined."""
        return f"{self._under}\n{self._own_joined()}" if self._under else self._own_joined()

    def _within(self, piece: str) -> bool:
        """Whether `piece` lies inside a held one."""
        return piece in self._own_joined() or piece in self._under

    def _own_joined(self) -> str:
        """The pieces added to this one, joined (made again after an add)."""
        if self._joined is None:
            self._joined = "\n".join(self._added)
        return self._joined

    def add(self, text: str) -> None:
        for line in text.splitlines():
            piece = flat(line)
            if len(piece) >= MIN_CHARS and piece not in self._order:
                self._order[piece] = len(self._order)
                self._added.append(piece)
                first, second, third = _key(piece)
                seconds = self._seconds(first)
                seconds.setdefault(second, {}).setdefault(third, []).append(piece)
                self._joined = None

    def _seconds(self, first: str) -> dict[str, dict[str, list[str]]]:
        """The pieces under `first`, this `Shown`'s own (copied first in a layer)."""
        if self._own is not None and first not in self._own:
            self._own.add(first)
            below = self._by_start.get(first, {})
            self._by_start[first] = {
                second: {third: list(pieces) for third, pieces in thirds.items()}
                for second, thirds in below.items()
            }
        return self._by_start.setdefault(first, {})

    def holds(self, text: str) -> bool:
        """True when `text` adds nothing substantial to what is shown (see above)."""
        lines = [piece for line in text.splitlines() if (piece := flat(line))]
        substantial = [piece for piece in lines if len(piece) >= MIN_CHARS]
        if not substantial:
            return False
        if all(piece in self._order or self._within(piece) for piece in substantial):
            return True
        whole = " ".join(lines)
        rest = whole
        for piece in self._inside(whole):
            if piece in rest:
                rest = rest.replace(piece, " ")
        return rest != whole and len(_LETTERS.sub("", _LABELS.sub("", rest))) < MIN_CHARS

    def _inside(self, text: str) -> list[str]:
        """The held pieces that may lie in `text` (their first three words do), in the order
        added."""
        words = [*text.split(" "), "", ""]
        found: set[str] = set()
        for at in range(len(words) - 2):
            if (seconds := self._by_start.get(words[at])) is None:
                continue
            if (one := seconds.get("")) is not None:
                found.update(one.get("", ()))  # pieces of one or two words
            if words[at + 1] and (thirds := seconds.get(words[at + 1])) is not None:
                found.update(thirds.get("", ()))  # of three
                if words[at + 2]:
                    found.update(thirds.get(words[at + 2], ()))
        return sorted(found, key=self._order.__getitem__)


def _unbulleted(text: str) -> str:
    """Each line of `text` without its bullet (`bot.memory.lines`)."""
    return "\n".join(unbulleted(line) for line in text.split("\n"))


def _key(piece: str) -> tuple[str, str, str]:
    """The words a piece is found by: its first, and its second and third when more follow
    ("" for those it is not found by)."""
    words = piece.split(" ", 3)
    used = 1 if len(words) <= 2 else len(words) - 1
    first, second, third = [*words[:used], "", ""][:3]
    return first, second, third
