"""A turn's surroundings: the runner (inbox, per-chat order, the pipeline, the reply), chat
commands, who may talk to the bot and the door for everyone else (pairing, claiming), and the
per-chat locks."""
