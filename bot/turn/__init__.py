"""A turn's surroundings: the runner (inbox, per-chat order, the pipeline, the reply), chat
commands, who may talk to the bot, and the per-chat locks."""
