"""Channels: where messages come from and replies go (Telegram, the local console).

console.py   The console channel
markdown.py  What the bot or the model writes, shown as written by a markdown renderer
telegram/    The Telegram channel
"""
