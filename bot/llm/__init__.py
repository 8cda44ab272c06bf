"""The model seam: the `LLM` protocol, its one OpenAI-compatible implementation, token counts,
and what a request is made of (`inspection`: /context, `python -m bot prompt`)."""
