"""Structured memory items: typed records with confidence and salience, their rules
(fingerprint, reinforce, promote, decay), their JSONL format and store (`cache`: files as parsed,
read again only as far as they changed; `usage`: last-used marks written in batches), keyword
relevance, what a turn becomes, the item writer, the items as index sources, and how the items
made of MEMORY.md lines follow them (`truth`).

cache.py       Item files as parsed, kept in memory
code.py        Code-aware extraction: the shell commands, error messages and code a text holds
format.py      The JSONL line format of memory items
indexing.py    Structured items as index sources
keeper.py      The item keeper
keywords.py    Keyword relevance for memory retrieval
rules.py       Memory items' own rules
statements.py  Statements: the sentences of a user's message that say something durable about them
store.py       Item files: each scope's JSONL stores of memory items, read through a cache, written
               locked
truth.py       Files stay the truth
turn.py        What a finished turn becomes as memory items (`TurnMemoryEvent`)
usage.py       Last-used marks: when a prompt last showed each item, kept in memory and written in
               batches
"""
