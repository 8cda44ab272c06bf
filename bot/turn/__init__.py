"""A turn's surroundings: the runner (inbox, per-chat order, the pipeline, the reply), chat
commands, who may talk to the bot, the per-chat locks, and the preview of a chat's next prompt
(`python -m bot prompt`)."""
