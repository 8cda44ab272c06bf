"""The model seam: the `LLM` protocol, its one OpenAI-compatible implementation, token counts."""
