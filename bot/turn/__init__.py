"""A turn's surroundings: the router (what a message meets: nothing, the door or /stop at once,
a command, or a turn; the journal and the reply's delivery), the runner (one chat's turn under
its lock; the reply shown while it is written in `live`), chat commands (`commands`, one module
per family; a slow command's feedback in `progress`), who may talk to the bot and the door for
everyone else (pairing, claiming), the per-chat locks, the queue of a channel that polls
(`intake`), and the preview of a chat's next prompt (`python -m bot prompt`).

access.py    Who may talk to the bot, and whose memory a chat may see (`bot.memory.scopes`)
alerts.py    Owner-side failures of someone else's turn, told to the owners
chats.py     Per-chat coordination: one lock per chat, and the turn each chat is running (for
             /stop)
delivery.py  Getting a reply out
door.py      `Door`: what a message meets before the journal when its sender is not let in yet, or
             when it is /pair, /unpair or /claim
intake.py    `Intake`: how a channel hands messages over to be answered, a chat's in order
live.py      The reply shown while the model writes it
notices.py   `ToldNotices`: which of the door's one-time notices each stranger heard
pairing.py   Pairing and claiming
preview.py   The prompt the next message in a chat would get, built without the model
progress.py  `ProgressNotice`: what a slow command (/new, /compact, /forget) is doing, said once it
             has taken longer than `NOTICE_AFTER` seconds
router.py    The router: what a message meets — nothing, the door or /stop at once, a command, or a
             turn
runner.py    The turn runner
together.py  Quick follow-ups answered together
commands/    Chat commands, answered before any turn
"""
