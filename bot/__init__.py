"""Mnemo: a self-hosted Telegram assistant that remembers.

__main__.py         `python -m bot` → the command line
background.py       Background work an object owns
errors.py           The exception tree, named by intent (no imports from `bot`)
logs.py             Logging and scrubbing
models.py           The core's data
pipeline.py         The turn pipeline
settings.py         Settings: `config/settings.toml` defaults < `.env` < `BOT_*` environment
                    variables
settings_errors.py  Invalid settings in a person's words
versioned.py        The envelope of every JSON document the bot keeps, `{"version": N, …}`: one
                    reader and writer
shell.py            How a person types one of the bot's commands where the bot runs (every hint's
                    wording)
app/                The composition root
channels/           Channels: where messages come from and replies go (Telegram, the local console)
cli/                The command line, `python -m bot …` (or `mnemo …`)
conversation/       Keeping a conversation within its window and fresh
eval/               Offline evaluation of recall
index/              The embedded search index (system 55, `memory_search`, `# Relevant Memory`)
llm/                The model seam
media/              What came with a message, read before the turn
memory/             The memory model
receipts/           Memory receipts: what the bot tells a person when it stored something they
                    said, with buttons (Undo, Edit, Forget) that act on it later
reminders/          Reminders and scheduled tasks
replicas/           Replicated mode: several Mnemo processes sharing one PostgreSQL database
storage/            Bytes on disk
systems/            The pipeline's systems, one module each
tools/              Tools offered to the model
turn/               A turn's surroundings
usage/              What the model costs
web/                The memory page
"""
