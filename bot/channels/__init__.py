"""Channels: where messages come from and replies go (Telegram, the local console)."""
