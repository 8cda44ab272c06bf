"""A turn's surroundings: the runner (inbox, per-chat order, the pipeline, the reply; the reply
shown while it is written in `live`), chat
commands (/status's words in `status`, a slow command's feedback in `progress`), who may talk to
the bot and the door for everyone else (pairing, claiming), the per-chat locks, and the preview
of a chat's next prompt (`python -m bot prompt`)."""
