"""A turn's surroundings: the runner (inbox, per-chat order, the pipeline, the reply), chat
commands (/status's words in `status`, a slow command's feedback in `progress`), who may talk to
the bot and the door for everyone else (pairing, claiming), and the per-chat locks."""
