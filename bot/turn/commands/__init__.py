"""Chat commands, answered before any turn: the parsed `Command` and the `Handler` shape
(`handler`, with the menu channels register), the dispatcher (`dispatch.Commands`), and one
module per family of handlers: `basics` (/start /help /stop), `conversation` (/new /reset
/compact), `memory` (/memory /remember /forget /undo), `status` (/status, and /context for
owners), `keep` (/keep: an owner keeps quoted material as memory), `spending` (/usage)."""
