"""Pure ports of the request bodies pi-ai 0.80.2 builds for each provider API (no Django, no I/O).

- openai_completions: OpenAI chat-completions (OpenAI, vLLM, Ollama, llama.cpp, LM Studio, ...)
- anthropic_messages: Anthropic Messages
"""
