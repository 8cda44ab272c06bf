"""Bytes on disk: the workspace layout, atomic files, sessions and the inbox journal, the roster
of claimed owners and paired users (`roster`), a group's chatter until the bot's next turn there
(`chatter`); where a memory file may lead (`confined`: scopes closed on disk) and how a person's
text file is changed (`textfile`: UTF-8 or refused, line endings kept)."""
