"""What receipts and presses say, and the button data and text command of each action."""

from __future__ import annotations

from textwrap import shorten

from bot.models import Button, Keyed

PREFIX = "rc"  # a button's data: "rc:<receipt id>:<action>", 13 bytes
COMMAND = "receipt"  # the text form: /receipt <id> <action>
ACTIONS = {"u": "undo", "e": "edit", "f": "forget", "k": "keep"}
LABELS = {"u": "Undo", "e": "Edit", "f": "Forget", "k": "Keep as a fact"}
FACT_ACTIONS = ("u", "e", "f")
SHOWN_CHARS = 300  # of a fact, in a receipt
TEXT_CHARS = 3500  # of a message a press edits (Telegram's limit is 4096)

SAVED = "Saved to memory: {fact}"
QUOTED = "Kept as a quote, not as a fact: “{fact}” ({source}). An owner can keep it as a fact."
PROMOTED = "Kept in memory as a fact: “{fact}”."
OWNERS_ONLY = "Only an owner can keep quoted material as a fact."
EXPIRED = "That receipt is too old to act on; /memory shows what I keep, /forget removes text."
NOT_YOURS = "Only the person who said this, or an owner, can change it."
DONE_ALREADY = "That was already {state}."
GONE = "“{fact}” is no longer in memory, so there is nothing to {action}."
UNDONE = "Undone: “{fact}” is no longer in memory."
ASK_NEW_TEXT = (
    "Send me the new text for “{fact}”: your next message here replaces it (a /command cancels)."
)
ASK_NEW_TEXT_NOTICE = "Send the new text as your next message."
EDITED = "Changed in memory: “{old}” → “{new}”."
EDIT_EMPTY = "The new text is empty; “{fact}” stays as it is."
USAGE = "Usage: /{command} ID undo|edit|forget|keep — acts on a memory receipt I sent."


def short(fact: str) -> str:
    return shorten(fact, SHOWN_CHARS, placeholder=" …")


def receipt_message(receipt_id: str, fact: str) -> Keyed:
    return Keyed(SAVED.format(fact=short(fact)), _buttons(receipt_id, FACT_ACTIONS))


def quote_message(receipt_id: str, text: str, source: str) -> Keyed:
    """A quote kept from others' words, with the button that makes it a fact (owners)."""
    return Keyed(QUOTED.format(fact=short(text), source=source), _buttons(receipt_id, ("k",)))


def _buttons(receipt_id: str, actions: tuple[str, ...]) -> tuple[Button, ...]:
    return tuple(
        Button(
            label=LABELS[action],
            data=f"{PREFIX}:{receipt_id}:{action}",
            command=f"/{COMMAND} {receipt_id} {ACTIONS[action]}",
        )
        for action in actions
    )


def parse_data(data: str) -> tuple[str, str] | None:
    """A button's data as (receipt id, action); None when it is not one of ours."""
    prefix, _, rest = data.partition(":")
    receipt_id, _, action = rest.partition(":")
    if prefix != PREFIX or action not in ACTIONS or not _is_id(receipt_id):
        return None
    return receipt_id, action


def parse_command(args: str) -> tuple[str, str] | None:
    """`/receipt ID ACTION`'s arguments as (receipt id, action); None when they are not."""
    words = args.split()
    names = {name: action for action, name in ACTIONS.items()}
    if len(words) != 2 or not _is_id(words[0]) or words[1].lower() not in names:
        return None
    return words[0], names[words[1].lower()]


def _is_id(text: str) -> bool:
    return len(text) == 8 and all(c in "0123456789abcdef" for c in text)
