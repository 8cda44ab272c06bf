"""Keeping a conversation within its window and fresh: session compaction (a summary replaces
old messages), the silent memory flush before it, and session renewal (freshness policy); and
who said what in a group (`speakers`: the `Name: text` the model reads)."""
