"""The pipeline's systems, one module each: 18 compaction, 19 files first, 20 context, 30 tool loop,
50 memory persist, 55 indexing.

compaction.py  System 18, auto-compaction
context.py     System 20, context building
flush.py       System 17, pre-compaction memory flush
indexing.py    System 55, RAG indexing
origin.py      A turn's origin as the memory systems (40 tags, 50 persist) and the tools read it
persist.py     System 50, memory persist
tags.py        System 40, memory tags
tool_loop.py   System 30, the LLM tool loop
truth.py       System 19, files first
"""
