"""The command line, `python -m bot …` (or `mnemo …`): each command a module, imported only once
that command is chosen (`--help` imports none of them).

main.py      the grammar (every command, its arguments, its --help) and `main`: parse, hand over
launch.py    a chosen command run: settings, logs, its module, and every failure ending here
serving.py   run (Telegram, with the model asked once at start) and chat (the console)
setup.py     setup: asks for the token, the model, the time zone; checks them; writes .env
doctor.py    doctor: every dependency, one line each
doctor_media.py  doctor's checks of transcription and vision
findings.py  what a doctor check found, and the secrets checks need
health.py    health: the running bot's heartbeat (Docker's check), light on imports
memory/      memory search | reindex | stats | export | import | edit
pairs.py     pair list | approve | unpair
prompt.py    prompt --chat KEY: the next prompt of a chat
reminders.py reminders list
evaluate.py  eval retrieval: the recall evaluation (`bot.eval`)
spending.py  usage: tokens and model calls, today and this month (`bot.usage`)
web.py       web link: a one-time sign-in link to the memory page (`bot.web`)
"""

from bot.cli.main import main

__all__ = ["main"]
