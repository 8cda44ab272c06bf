"""The pipeline's systems, one module each. A system is a thin adapter over a mechanism one
floor down: it reads the `TurnContext`, calls that mechanism (compaction, the prompt, the tool
loop, the memory writer, the session's window, the index …) and writes the fields it owns back.
Each system's `order` is a constant in its module; `Pipeline.describe()` is the one place that
lists them in the order they run (logs and /status show it).

compaction.py  Auto-compaction
context.py     Context building
flush.py       The pre-compaction memory flush
indexing.py    RAG indexing
origin.py      A turn's origin as the memory systems (40 tags, 50 persist) and the tools read it
persist.py     Memory persist: the session saved, its window trimmed, the turn handed to the writer
tags.py        Memory tags
tool_loop.py   The LLM tool loop
truth.py       Files first
"""
