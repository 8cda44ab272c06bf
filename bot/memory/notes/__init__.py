"""The markdown people edit: daily notes, MEMORY.md (global and per chat), HISTORY and its
monthly files, working memory, and the tag format the model writes them with; the supersede
mark of a corrected line (`supersede`), what a fact claims so that a correction is told from one
more fact (`claims`), and quoted material waiting for an owner (`quoted`)."""
