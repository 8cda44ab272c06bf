"""Structured memory items: typed records with confidence and salience, their rules
(fingerprint, reinforce, promote, decay), their JSONL format and store (`cache`: files as parsed,
read again only as far as they changed; `usage`: last-used marks written in batches), keyword
relevance, what a turn becomes, the item writer, the items as index sources, and how the items
made of MEMORY.md lines follow them (`truth`)."""
