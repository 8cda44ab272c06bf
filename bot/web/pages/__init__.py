"""The memory page's pages, one module each; every one reads and writes through the owner of
its truth (the writer, the receipts' desk, the memory search, the reminders' commands, the
usage ledger, doctor's checks), never a copy of its rule.

    memory.py         MEMORY.md and each chat's memory: facts with provenance, Forget, Undo, edit
    learned.py        the receipts: Undo, Forget, Edit as their buttons
    search.py         the memory search and a hit's source
    conversations.py  current and archived conversations, Forget for a message
    reminders.py      list, cancel, move
    usage.py          tokens and cost: the chart, by day, chat and model, the caps
    health.py         doctor's checks
    forms.py          what the pages read from a request
"""
