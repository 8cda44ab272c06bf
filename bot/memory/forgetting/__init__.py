"""Forgetting that forgets: every place the bot would use a text loses it, and /undo brings it
back for a short while.

Where a chat's text can be (its visible scopes only, `bot.memory.scopes`; `targets`):

    MEMORY.md, chat memory, daily notes, archived notes, HISTORY*.md,
    this session's working memory, structured items (JSONL),
    documents' text (files/*.md, `bot.media`)                      lines containing it removed
    this conversation, this chat's past conversations,
    pending consolidation jobs of this chat                        messages holding it marked
    this chat's memory receipts (`Copies`)                         dropped (not put back)

Matching is case-insensitive. A markdown or JSONL line that holds the text is removed (every
other byte kept); a message that holds it (in its text or a tool call's arguments) has its
content replaced by `MARKER`. Each file is rewritten atomically under the lock its other
writers hold, after its original bytes went to the undo store (`bot.storage.undo`). A file
that is not text, or a JSON document that is not one, is left alone and reported. The caller
holds the chat's lock and makes the index follow. A forget inside a turn (the model's
`memory_forget`) also reaches the turn's messages not saved yet: system 50 saves them `unsaid`.

Undo puts back what this chat's last forget removed: a file as forget left it gets its original
bytes; one that only grew since (notes, history) gets the original plus what was added; a
session document gets its messages' contents back where the marker still stands; any other
change keeps the file as it is and adds the removed lines back at its end (and says so).

    forget.py    `Forgetting`: the places, the rewrite of each under its lock, the undo
    files.py     a file without a text, and with it again (markdown and JSONL lines, messages)
    receipts.py  what /forget and /undo answer
"""

from bot.memory.forgetting.files import FORGET_MIN_CHARS, MARKER, forgotten, unsaid
from bot.memory.forgetting.forget import Forgetting, Forgotten, Target, Undone
from bot.memory.forgetting.receipts import forget_receipt, undo_receipt

__all__ = [
    "FORGET_MIN_CHARS",
    "MARKER",
    "Forgetting",
    "Forgotten",
    "Target",
    "Undone",
    "forget_receipt",
    "forgotten",
    "undo_receipt",
    "unsaid",
]
