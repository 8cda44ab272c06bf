"""The model seam: the `LLM` protocol, its one OpenAI-compatible implementation (answers
streamed, tool calls written as text read as calls), the request's JSON (`wire`), token counts,
and what a request is made of (`inspection`: /context, `python -m bot prompt`).

client.py         The `LLM` protocol
embeddings.py     `OpenAIEmbedder`: the index's `Embedder` over any OpenAI-compatible
                  `/v1/embeddings` endpoint
failures.py       What a person is told when the model fails, by cause (`bot.errors.LLMCause`)
inspection.py     What a request is made of, for a person to see
meter.py          Prompt accounting: how many tokens a turn's prompt will take, and the model's
                  window
openai_chat.py    `OpenAIChat`: the `LLM` protocol over any OpenAI-compatible `/chat/completions`
                  endpoint
stream.py         Reading a streamed chat completion
text_calls.py     Tool calls a model wrote as text
tokens.py         Offline token counting (tiktoken's bundled cl100k encoding), corrected by
                  provider usage
transcription.py  `OpenAITranscriber`: speech to text through an OpenAI-compatible
                  `/v1/audio/transcriptions`
windows.py        Context windows per model
wire.py           A request in the JSON of OpenAI's chat API
"""
