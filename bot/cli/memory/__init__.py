"""`python -m bot memory …`: what the bot remembers, from a shell.

commands.py  search | reindex | stats (the index opened as the bot opens it), and the dispatch
transfer.py  export | import: the memory moved between workspaces, checked by searches
editing.py   edit: one memory document in $EDITOR, written back over the version it was read at
"""
