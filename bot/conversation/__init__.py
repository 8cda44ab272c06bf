"""Keeping a conversation within its window and fresh: the session a turn continues
(`continuation`: a damaged file set aside, a stale one renewed by `renewal`'s freshness
policy), closing a conversation (`closing`, for /new and renewal alike), session compaction (a
summary replaces old messages; `summary` asks for it in stages that fit the fast model's
window), a turn run again after a context overflow (`overflow`), a conversation the model keeps
failing on started anew (`breakdown`), the silent memory flush before compaction; and who said
what in a group (`speakers`: the `Name: text` the model reads)."""
