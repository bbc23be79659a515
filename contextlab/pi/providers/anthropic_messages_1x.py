"""pi-ai 1.6.0's ``anthropic-messages`` request: the Messages API body Pi 1.x sends.

Ported from ``@earendil-works/pi-ai@1.6.0`` ``dist/api/anthropic-messages.js`` (``streamSimple``,
``stream``'s ``resolveTranscript``, ``getAnthropicCompat``, ``getBetaFeatures``, ``buildParams``,
``convertMessages``, ``insertThinkingLevelMessages``) and ``dist/api/simple-options.js``
(``adjustMaxTokensForThinking``, ``clampMaxTokensToContext`` through the caller); MIT licence,
(c) Mario Zechner / Earendil Works. API-key authentication only, as in ``anthropic_messages``
(OAuth's Claude Code identity, Copilot and workload federation are out of scope).

The body is what reaches the wire: pi-ai passes ``betas`` to the SDK's ``beta.messages.create``,
which sends them as the ``anthropic-beta`` header (``beta_features``) to
``/v1/messages?beta=true`` and leaves them out of the body.

What differs from 0.80.2 (``anthropic_messages.py``), for what a request can carry here:

- the prompt arrives as the transcript's leading system message (``normalizeContext``), its text
  ``getSystemMessageText``; later system messages are collapsed into it unless the model takes
  them mid-conversation;
- a summary asks for no cache retention (``completeSummarization``): no ``cache_control`` on the
  system block nor on the last user message (0.80.2 marked both ``ephemeral``); where a marker is
  set, the last message may also be a system message;
- budget thinking: ``max_tokens`` is clamped to the context window again after the budget is
  added, the budget capped to leave 1024 tokens for the answer (``xhigh`` and ``max`` take
  ``high``'s budget);
- a model with ``compat.supportsMidConvoEffort``: adaptive thinking with ``block_binding``
  (``prefix_mismatch_behavior: drop_block``), ``output_config: {effort: "low"}`` and the
  requested effort as a trailing ``{role: "system", content: [], output_config}`` message, and
  no ``temperature`` (with thinking off: ``thinking: {type: "disabled"}`` only);
- ``compat.allowedFallbackModels`` adds ``fallbacks``.

The rules that are 0.80.2's too are imported from ``anthropic_messages`` (the user message
conversion, ``getCacheControl``, ``mapThinkingLevelToEffort``, ``adjustMaxTokensForThinking``)
and ``openai_completions_1x`` (``collapseSystemMessages``, ``getSystemMessageText``,
``transformMessages``, which pi-ai shares between providers).

Not ported (a request with them raises ``NotImplementedError``; a summary has none): assistant
messages and tool results in the conversation, later system messages (``tool_addition`` /
``tool_removal`` and the effort markers of earlier replies), tools (strict schemas, native tool
changes), message threads (a summary's ``cacheRetention: "none"`` turns them off).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contextlab.pi.entries import Json
from contextlab.pi.providers import anthropic_messages as anthropic_0x
from contextlab.pi.providers import openai_completions_1x as openai_1x

__all__ = [
    "INTERLEAVED_THINKING_BETA",
    "beta_features",
    "build_params",
    "build_simple_params",
    "convert_messages",
    "get_compat",
    "insert_thinking_level_messages",
]

_UNDEFINED: Any = object()
FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
SERVER_SIDE_FALLBACK_BETA = "server-side-fallback-2026-07-01"
MID_CONVERSATION_OUTPUT_CONFIG_BETA = "mid-conversation-output-config-2026-07-01"
THINKING_BINDING_CONTROLS_BETA = "thinking-binding-controls-2026-08-01"
MIN_ANSWER_TOKENS = 1024
# Block types the history's cache marker may go on (the last block of the last message).
_CACHEABLE_BLOCKS = ("text", "image", "tool_result", "tool_addition", "tool_removal")


def get_compat(model: Mapping[str, Any]) -> Json:
    """``getAnthropicCompat``: the model's compat flags with pi-ai 1.6.0's defaults."""
    compat = model.get("compat") or {}
    base_url = model.get("baseUrl") or ""
    is_openrouter = model.get("provider") == "openrouter" or "openrouter.ai" in base_url

    def flag(name: str, default: Any) -> Any:
        value = compat.get(name)
        return default if value is None else value

    return {
        "supportsEagerToolInputStreaming": flag("supportsEagerToolInputStreaming", True),
        "supportsLongCacheRetention": flag("supportsLongCacheRetention", True),
        "sendSessionAffinityHeaders": flag("sendSessionAffinityHeaders", is_openrouter),
        "sessionAffinityFormat": flag(
            "sessionAffinityFormat", "openrouter" if is_openrouter else None
        ),
        "supportsCacheControlOnTools": flag("supportsCacheControlOnTools", True),
        "supportsTemperature": flag("supportsTemperature", True),
        "allowEmptySignature": flag("allowEmptySignature", False),
        "supportsStrictTools": flag("supportsStrictTools", False),
        "supportsMidConvoSystemMessages": flag("supportsMidConvoSystemMessages", False),
        "supportsMidConvoToolChanges": flag("supportsMidConvoToolChanges", False),
        "supportsMessageThreads": flag("supportsMessageThreads", "api.anthropic.com" in base_url),
    }


def _mid_convo_effort(model: Mapping[str, Any]) -> bool:
    return (model.get("compat") or {}).get("supportsMidConvoEffort") is True


def _fallback_models(model: Mapping[str, Any]) -> list[Any]:
    fallbacks = (model.get("compat") or {}).get("allowedFallbackModels")
    return list(fallbacks) if isinstance(fallbacks, list) else []


def _resolve_transcript(model: Mapping[str, Any], messages: Sequence[Json]) -> list[Json]:
    """``resolveTranscript``: the system messages collapsed into the leading one unless the model
    takes mid-conversation system messages."""
    if get_compat(model)["supportsMidConvoSystemMessages"] is True:
        return list(messages)
    return openai_1x.collapse_system_messages(messages)


def convert_messages(messages: Sequence[Json], cache_control: Json | None) -> list[Json]:
    """``convertMessages`` (API key) for a conversation of user messages (the transcript after
    ``transformMessages``, its leading system message taken off): the history's cache marker on
    the last block of the last message when that is a user or system message."""
    params: list[Json] = []
    for msg in messages:
        if msg.get("role") != "user":
            raise NotImplementedError(f"pi-ai 1.x's anthropic {msg.get('role')} messages")
        converted = anthropic_0x.convert_user_message(msg)
        if converted is not None:
            params.append(converted)
    if cache_control and params and params[-1]["role"] in ("user", "system"):
        last = params[-1]
        content = last["content"]
        if isinstance(content, list):
            if content and content[-1].get("type") in _CACHEABLE_BLOCKS:
                content[-1]["cache_control"] = cache_control
        elif isinstance(content, str):
            last["content"] = [{"type": "text", "text": content, "cache_control": cache_control}]
    return params


def insert_thinking_level_messages(messages: Sequence[Json], active_effort: str) -> list[Json]:
    """``insertThinkingLevelMessages`` with no earlier replies: the requested effort as a trailing
    system message."""
    return [
        *messages,
        {"role": "system", "content": [], "output_config": {"effort": active_effort}},
    ]


def beta_features(model: Mapping[str, Any], options: Mapping[str, Any]) -> list[str]:
    """``getBetaFeatures`` (API key, no tools, no native tool changes, no message threads): what
    the SDK sends as ``anthropic-beta``; a configured ``anthropic-beta`` header replaces them
    (``null``: none)."""
    configured: Any = _UNDEFINED
    for headers in (model.get("headers"), options.get("headers")):
        for name, value in (headers or {}).items():
            if name.lower() == "anthropic-beta":
                configured = value
    if configured is None:
        return []
    if configured is not _UNDEFINED:
        parts = [part.strip() for part in str(configured).split(",")]
        return list(dict.fromkeys(part for part in parts if part))
    features = []
    if (
        model.get("reasoning")
        and options.get("thinkingEnabled") is True
        and options.get("interleavedThinking", True) is not False
        and (model.get("compat") or {}).get("forceAdaptiveThinking") is not True
    ):
        features.append(INTERLEAVED_THINKING_BETA)
    if _fallback_models(model):
        features.append(SERVER_SIDE_FALLBACK_BETA)
    if _mid_convo_effort(model):
        features += [MID_CONVERSATION_OUTPUT_CONFIG_BETA, THINKING_BINDING_CONTROLS_BETA]
    return list(dict.fromkeys(features))


# Long on purpose: it follows pi-ai 1.6.0's buildParams statement by statement, so that the two
# read side by side.
def build_params(
    model: Mapping[str, Any], messages: Sequence[Json], options: Mapping[str, Any] | None = None
) -> Json:
    """``buildParams`` (API key) for a transcript (the prompt as its leading system message): the
    HTTP body in pi-ai's key order (``betas`` travel as a header, see ``beta_features``)."""
    options = options or {}
    compat = get_compat(model)
    marker = anthropic_0x.cache_control(
        dict(model), options.get("cacheRetention"), options.get("env") or {}
    )
    transcript = _resolve_transcript(model, messages)
    initial = transcript[0] if transcript and transcript[0].get("role") == "system" else None
    initial_text = openai_1x.system_message_text(initial) if initial is not None else ""
    transformed = openai_1x.transform_messages(transcript, model)
    conversation = transformed[1:] if initial is not None else transformed
    if openai_1x.current_tools(transcript):
        raise NotImplementedError("pi-ai 1.x's anthropic tools")
    level_map = model.get("thinkingLevelMap") or {}
    thinking_disabled = (
        bool(model.get("reasoning"))
        and options.get("thinkingEnabled") is False
        and level_map.get("off", _UNDEFINED) is not None
    )
    effort_messages = _mid_convo_effort(model) and not thinking_disabled
    converted = convert_messages(conversation, marker)
    active_effort = options.get("effort") or "high"
    max_tokens = options.get("maxTokens")
    params: Json = {
        "model": model.get("id"),
        "messages": insert_thinking_level_messages(converted, active_effort)
        if effort_messages
        else converted,
        "max_tokens": max_tokens if max_tokens is not None else model.get("maxTokens"),
        "stream": True,
    }
    if initial_text:
        params["system"] = anthropic_0x.system_blocks(initial_text, marker)
    temperature = options.get("temperature")
    if (
        temperature is not None
        and not options.get("thinkingEnabled")
        and not _mid_convo_effort(model)
        and compat["supportsTemperature"]
    ):
        params["temperature"] = temperature
    if thinking_disabled:
        params["thinking"] = {"type": "disabled"}
    elif effort_messages:
        params["thinking"] = {
            "type": "adaptive",
            "display": options.get("thinkingDisplay") or "summarized",
            "block_binding": {"prefix_mismatch_behavior": "drop_block"},
        }
        params["output_config"] = {"effort": "low"}
    elif model.get("reasoning") and options.get("thinkingEnabled"):
        anthropic_0x.enabled_thinking(params, model, options)
    metadata = options.get("metadata")
    if metadata and isinstance(metadata.get("user_id"), str):
        params["metadata"] = {"user_id": metadata["user_id"]}
    tool_choice = options.get("toolChoice")
    if tool_choice:
        params["tool_choice"] = (
            {"type": tool_choice} if isinstance(tool_choice, str) else tool_choice
        )
    fallbacks = _fallback_models(model)
    if fallbacks:
        params["fallbacks"] = [{"model": f.get("model")} for f in fallbacks]
    return params


def build_simple_params(
    model: Mapping[str, Any],
    messages: Sequence[Json],
    options: Mapping[str, Any],
    *,
    clamp_to_context: Callable[[int], int],
) -> Json:
    """``streamSimple``: the body for ``{maxTokens, reasoning?, cacheRetention?, ...}``.

    ``options["maxTokens"]`` is ``buildBaseOptions``' (the caller's ``clampMaxTokensToContext``
    of the requested cap or ``model.maxTokens``); ``clamp_to_context`` is that clamp for this
    transcript, applied again to the cap with a thinking budget added."""
    base: Json = {
        key: options.get(key)
        for key in (
            "temperature",
            "maxTokens",
            "cacheRetention",
            "env",
            "metadata",
            "headers",
            "toolChoice",
        )
    }
    reasoning = options.get("reasoning")
    if not reasoning:
        return build_params(model, messages, {**base, "thinkingEnabled": False})
    if (model.get("compat") or {}).get("forceAdaptiveThinking") is True:
        effort = anthropic_0x.effort_for_level(dict(model), reasoning)
        return build_params(model, messages, {**base, "thinkingEnabled": True, "effort": effort})
    # thinkingBudgetForLevel: xhigh and max take high's budget (clampReasoning).
    level = "high" if reasoning in ("xhigh", "max") else reasoning
    adjusted_max, budget = anthropic_0x.adjust_max_tokens_for_thinking(
        base["maxTokens"],
        int(model.get("maxTokens") or 0),
        level,
        options.get("thinkingBudgets"),
    )
    max_tokens = clamp_to_context(adjusted_max)
    return build_params(
        model,
        messages,
        {
            **base,
            "maxTokens": max_tokens,
            "thinkingEnabled": True,
            "thinkingBudgetTokens": min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS)),
        },
    )
