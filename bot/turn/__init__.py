"""A turn's surroundings: the router (what a message meets: nothing, the door or /stop at once,
a command, or a turn; the journal and the reply's delivery), the runner (one chat's turn under
its lock; the reply shown while it is written in `live`), chat commands (`commands`, one module
per family; a slow command's feedback in `progress`), who may talk to the bot and the door for
everyone else (pairing, claiming), the per-chat locks, the queue of a channel that polls
(`intake`), and the preview of a chat's next prompt (`python -m bot prompt`)."""
