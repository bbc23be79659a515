"""Pure ports of the request bodies pi-ai builds for each provider API (no Django, no I/O), one
module per API with what differs between pi-ai releases keyed by ``pi_ai.PiAi``:

- openai_completions: OpenAI chat-completions (OpenAI, vLLM, Ollama, llama.cpp, LM Studio, ...)
- anthropic_messages: Anthropic Messages
- options: the ``maxTokens`` a request carries (pi-ai's clamp) and the thinking levels
- transcript: the 1.x transcript (system messages) both ports read
- summary: one summarisation call's body and usage
"""
