"""Structured memory items (seed 000): typed records with confidence and salience, their rules
(fingerprint, reinforce, promote, decay), their JSONL format and store, what a turn becomes,
and the item writer."""
