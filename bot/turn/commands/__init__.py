"""Chat commands, answered before any turn: the parsed `Command` and the `Handler` shape
(`handler`, with the menu channels register), the dispatcher (`dispatch.Commands`), and one
module per family of handlers: `basics` (/start /help /stop), `conversation` (/new /reset
/compact), `memory` (/memory /remember /forget /undo), `status` (/status, and /context for
owners), `keep` (/keep: an owner keeps quoted material as memory), `spending` (/usage).

basics.py        /start, /help and /stop
conversation.py  /new (and /reset) and /compact
dispatch.py      `Commands`: the handler for each command name, and the hint for an unknown one
handler.py       What a command is
keep.py          `/keep`: an owner keeps quoted material as a fact (`MemoryWriter.keep_quoted`, the
                 one promotion of a quote
memory.py        /memory, /remember, /forget and /undo
spending.py      /usage: tokens in and out, the cached share and model calls, today and this month,
                 by kind (`bot.usage`)
status.py        /status: the conversation in plain words, and more with `/status verbose` (or -v)
"""
