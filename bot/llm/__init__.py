"""The model seam: the `LLM` protocol, its one OpenAI-compatible implementation (answers
streamed, tool calls written as text read as calls), the request's JSON (`wire`), token counts,
and what a request is made of (`inspection`: /context, `python -m bot prompt`)."""
