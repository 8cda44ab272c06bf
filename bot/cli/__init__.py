"""The command line, `python -m bot …` (or `mnemo …`): each command a module.

main.py      `main`: run (Telegram), chat (the console), and the dispatch to the others
setup.py     setup: asks for the token, the model, the time zone; checks them; writes .env
doctor.py    doctor (every dependency, one line each) and health (the heartbeat)
doctor_media.py  doctor's checks of transcription and vision
findings.py  what a doctor check found, and the secrets checks need
memory.py    memory search | reindex | stats (and export | import: transfer.py)
pairs.py     pair list | approve | unpair
prompt.py    prompt --chat KEY: the next prompt of a chat
evaluate.py  eval retrieval: the recall evaluation (`bot.eval`)
spending.py  usage: tokens and model calls, today and this month (`bot.usage`)
"""

from bot.cli.main import main

__all__ = ["main"]
