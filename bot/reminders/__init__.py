"""Reminders and scheduled tasks: what a chat asked to hear later, and getting it there once.
Wired in `bot.app.reminders`: the tool, system 22, the scheduler service, the task turns
(`Router.kinds`) and the commands; a channel's queue reaches it by `Router.outlets`.

model.py      `Reminder` and its `Rule` (once, or by a cron expression): the next occurrence,
              in the person's own time zone (wall-clock time, so 09:00 stays 09:00 across DST)
when.py       the one way a time is written: "in 20 minutes", "2026-11-27 09:00", "09:00", cron
store.py      `ReminderStore`: each chat's `reminders.jsonl` beside its memory, locked, atomic
zones.py      `Zones`: each person's time zone (`/timezone`), over the bot's `BOT_TIMEZONE`
tool.py       `remind`: the model schedules, lists, changes and cancels a chat's items
scheduler.py  `Scheduler`: due items journaled (the inbox) and handed to their channel, once
tasks.py      `TaskTurns`: a scheduled task's turn (the model, the chat's memory, token caps,
              nothing sent when there is nothing to say)
commands.py   `/reminders`, `/timezone`
prompt.py     system 22: the chat's next few items in the prompt
"""
