"""Keeping a conversation within its window and fresh, and the one place messages leave a
session: the session a turn continues (`continuation`: a damaged file set aside, a stale one
renewed by `renewal`'s freshness policy), closing a conversation (`closing`, for /new and renewal
alike, and the one hand-over to consolidation), the window's trimming past `memory_window`
messages (`window`), session compaction (a summary replaces old messages; `summary` asks for it
in stages that fit the fast model's window), a turn run again after a context overflow
(`overflow`), a conversation the model keeps failing on started anew (`breakdown`), the silent
memory flush before compaction; and who said what in a group (`speakers`: the `Name: text` the
model reads).

breakdown.py     A conversation the model keeps failing on, started anew
closing.py       Closing a conversation
compaction.py    Session compaction: a session's old messages become one summary message
continuation.py  The session a turn continues
flush.py         The pre-compaction memory flush
overflow.py      A turn over its context window
renewal.py       Session freshness: when a conversation has gone stale, and starting the next one
shortening.py    A kept message too large for the window, shortened in the session so the next turn
                 fits
speakers.py      Who said what in a group, as the model reads it
summary.py       The conversation summary, in stages that fit the summary model's window
window.py        The session's window: past `memory_window` messages its older part leaves
"""
