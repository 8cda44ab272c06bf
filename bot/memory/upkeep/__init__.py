"""Background upkeep of memory: consolidation of old messages into HISTORY and MEMORY.md,
archiving daily notes past their retention, and item decay; each on its own schedule."""
