"""Reminders and scheduled tasks: what a chat asked to hear later, and getting it there once.

model.py      `Reminder` and its `Rule` (once, or by a cron expression): the next occurrence,
              in the person's own time zone (wall-clock time, so 09:00 stays 09:00 across DST)
store.py      `ReminderStore`: each chat's `reminders.json` beside its memory, locked, atomic
zones.py      `Zones`: each person's time zone (`/timezone`), over the bot's `BOT_TIMEZONE`
tool.py       `remind`: the model schedules, lists, changes and cancels a chat's items
scheduler.py  `Scheduler`: due items journaled (the inbox) and handed to their channel, once
tasks.py      `TaskTurns`: a scheduled task's turn (the model, the chat's memory, token caps)
commands.py   `/reminders`, `/timezone`
prompt.py     system 22: the chat's next few items in the prompt
"""
