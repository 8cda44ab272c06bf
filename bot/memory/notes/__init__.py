"""The markdown people edit: daily notes, MEMORY.md (global and per chat), HISTORY and its
monthly files, working memory, and the tag format the model writes them with; the supersede
mark of a corrected line (`supersede`), what a fact claims so that a correction is told from one
more fact (`claims`), and quoted material waiting for an owner (`quoted`).

claims.py     What a fact claims, to tell a correction from one more fact
daily.py      Daily notes: one `[HH:mm] User: … | Assistant: …` line per exchange, append-only (one
              `O_APPEND` write: a line a person adds meanwhile is kept)
history.py    The consolidation history
long_term.py  Long-term memory: `MEMORY.md`, hand-editable, read fresh every turn, never clobbered
merge.py      A person's edit of a whole memory file (the memory page's editor) meeting a change
              made since they loaded it
quoted.py     Quoted material: what a turn would have remembered from words that were not the
              person's own (`bot.memory.trust`), kept as a quote with its source
supersede.py  Corrections: a newer fact about the same subject and attribute supersedes the older
              one
tags.py       Memory tags in the model's reply
working.py    Working memory: one session's scratchpad, `memory/working/<session-key>.md`
"""
