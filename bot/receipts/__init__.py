"""Memory receipts: what the bot tells a person when it stored something they said, with
buttons (Undo, Edit, Forget) that act on it later.

    store.py   `ReceiptStore`: the receipts and the edits waiting for their new text, in
               `state/receipts.json` (bounded, atomic, locked)
    desk.py    `ReceiptDesk`: a receipt issued (tags, /remember), shown after the reply, a press
               (or its text command, `/receipt ID undo`) checked and carried out, an edit's new
               text taken from the person's next message
    words.py   what receipts and presses say

A press names a receipt by a short id; the desk looks everything else up on its side (which
chat, who said it, what text, which memory), so a client can never point a button elsewhere.
Only the person who said it, or an owner, may press, in the chat it was said in, for as long
as the text is in memory.
"""

from bot.receipts.desk import ReceiptDesk, ReceiptMemory
from bot.receipts.store import ReceiptStore

__all__ = ["ReceiptDesk", "ReceiptMemory", "ReceiptStore"]
