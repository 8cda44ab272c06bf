"""The memory model: what the bot remembers, where it is true, and what is derived from it.

Truth is what a person can open: the markdown under `memory/` (MEMORY.md, chat memory, daily
notes and their archive, HISTORY, working memory) and the session files under `sessions/`
(current and archived). Everything else is derived from them and rebuildable: the structured
items under `memory/items/` cite the file line or session turn they came from, and the search
index (`bot.index`) is made again from the files alone.

    lines       what a memory line is: its bullet forms, bare fact, normal form, fingerprint, and
                the supersede mark (the ground floor: every other module reads a line through it)
    notes/    the markdown people edit: daily notes, MEMORY.md, HISTORY, working memory, tags
    items/    structured items: their rules, JSONL format, store and item writer
    recall/   the read side: the `# Memory` and `# Relevant Memory` sections, /memory
    upkeep/   background work: consolidation, archiving old notes, item decay
    provenance  who said a fact, where, when, as what (its JSON and text; MEMORY.md's side file)
    trust       whose words a turn's memory would be (a person's own, or quoted material)
    cited       where a search hit's text came from

cited.py       Where a cited text came from
facts.py       MEMORY.md's facts as the writer (`MemoryWriter`) makes them
lines.py       A memory line
provenance.py  Provenance: who said a remembered fact, in which chat, when, and what it came as
scopes.py      Who sees what, the one owner of the privacy rule
trust.py       Whose words a turn's memory would be
writer.py      The one writer
forgetting/    Forgetting that forgets
transfer/      Memory moved between machines
"""
