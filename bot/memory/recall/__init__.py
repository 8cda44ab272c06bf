"""The read side: the prompt's `# Memory` section (the markdown part and the memory pack of
items beside it), `# Relevant Memory` from the search index, and the /memory inventory.
Nothing here writes memory.

inventory.py  The inventory of one chat's memory
markdown.py   The markdown part of `# Memory`
overlap.py    One copy per prompt
pack.py       The memory pack
prompt.py     The memory parts of a request
relevant.py   `# Relevant Memory`
retrieval.py  Retrieval: a `MemoryQuery` in, a scored and budgeted `MemoryPack` out
scoring.py    A pack's scores and its top k per layer
section.py    The `# Memory` prompt section
sides.py      Each exchange's words once in `# Relevant Memory`
sources.py    What recall reads: the structured items and the search index (`ItemsAndIndex`)
"""
