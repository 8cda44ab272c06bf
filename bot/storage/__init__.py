"""Bytes on disk: the workspace layout, atomic files, sessions and the inbox journal, the roster
of claimed owners and paired users (`roster`); where a memory file may lead (`confined`: scopes
closed on disk) and how a person's text file is changed (`textfile`: UTF-8 or refused, line
endings kept)."""
