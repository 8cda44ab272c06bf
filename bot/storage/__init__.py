"""Bytes on disk: the workspace layout, atomic files, sessions and the inbox journal."""
