"""Mnemo: a self-hosted Telegram assistant that remembers."""
