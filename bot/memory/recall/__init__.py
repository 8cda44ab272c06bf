"""The read side: the prompt's `# Memory` section (the markdown part and the memory pack of
items beside it), `# Relevant Memory` from the search index, and the /memory inventory.
Nothing here writes memory."""
