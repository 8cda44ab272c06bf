"""Background upkeep of memory: consolidation of old messages into HISTORY and MEMORY.md (and,
with replicas, the jobs a replica left behind: `left`), archiving daily notes past their
retention, and item decay; each on its own schedule."""
