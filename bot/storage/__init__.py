"""Bytes on disk: the workspace layout, atomic files, sessions and the inbox journal, the roster
of claimed owners and paired users (`roster`), a group's chatter until the bot's next turn there
(`chatter`); where a memory file may lead (`confined`: scopes closed on disk) and how a person's
text file is changed (`textfile`: UTF-8 or refused, line endings kept).

chatter.py     `state/chatter/<chat>.json`: what a group said that did not address the bot, since
               the bot last answered there
confined.py    Where a memory file may lead
files.py       Atomic, locked file I/O
heartbeat.py   The heartbeat: a file (`state/heartbeat`) whose modification time the running bot
               moves on after every poll of its channel, and how old it is
inbox.py       The durable inbox
jobs.py        Durable consolidation jobs
lines.py       Memory files read as lines for the prompt, cheaply and defensively
marks.py       A session file's `metadata`
roster.py      `state/paired.json`: who became an owner by /claim, whom an owner let in by /pair,
               the pairing requests waiting for an owner, and the claim code
sessions.py    Session files: one versioned JSON document per session key, written atomically
textfile.py    A person's text file as the bot changes it
transcript.py  Transcript repair: a loaded session's messages made acceptable to the provider
undo.py        Undo data: what a /forget rewrote, kept under `state/undo/` for a short while, then
               deleted
workspace.py   The workspace layout
"""
