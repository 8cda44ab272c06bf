"""Tools offered to the model: the `Tool` protocol, the registry, and the tools themselves.

registry.py       `Tool`, `ToolContext`, `ToolRegistry`: the tool boundary (errors → text)
offered.py        the tools offered, in order, built from settings; what the prompt says of them
arguments.py      reading a tool's JSON arguments: types and ranges, errors in words
clock.py          `current_time`
memory_search.py  `memory_search` over the index, with citations; the recall contract
memory_get.py     `memory_get`: a numbered slice of one memory file the chat may read
memory_items.py   `memory_add` / `memory_update` / `memory_promote` / `memory_forget`

memory_edit.py  `memory_edit`: the model corrects long-term memory — one line of MEMORY.md or of
                this chat's own memory, found by its text, replaced or deleted
"""
