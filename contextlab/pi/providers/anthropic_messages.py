"""The body Pi sends to Anthropic Messages, for every pi-ai generation.

A pure port of pi-ai's ``dist/api/anthropic-messages.js`` (``streamSimple`` → ``stream`` →
``buildParams`` / ``convertMessages`` / ``convertTools``, ``getAnthropicCompat``,
``getCacheControl``, ``getBetaFeatures``, ``insertThinkingLevelMessages``, and 1.x's message
threads) for API-key authentication (the only kind contextlab uses; OAuth's Claude Code
identity, Copilot and workload federation are out of scope), as of 0.80.2 and 1.6.0, with what
differs between releases keyed by ``pi_ai`` (a ``contextlab.pi.providers.pi_ai.PiAi``; None:
0.80.2's rules). The result equals Pi's body key for key, in Pi's key order; MIT licence,
(c) Mario Zechner / Earendil Works.

Model and context are plain dicts shaped as pi-ai's ``Model`` and ``Context``:
``model = {"id", "provider", "api", "baseUrl", "reasoning", "input", "maxTokens", "compat"?,
"thinkingLevelMap"?}``. Before the transcript API (0.86 and older) ``context = {"systemPrompt"?,
"messages", "tools"?}`` and the port runs contextlab.pi.context's ``transformMessages``; from 0.87
``context = {"messages"}``, the prompt and tools being the transcript's ``system`` messages
(collapsed into the leading one unless the model takes them mid-conversation), transformed by
``transcript.transform_messages``.

What pi-ai 1.x adds, for the generations that have it: a summary asks for no cache retention
(``completeSummarization``), so no ``cache_control`` anywhere; budget thinking clamps
``max_tokens`` to the window again (``build_simple_params``' ``clamp_to_context``);
``compat.supportsMidConvoEffort`` models get adaptive thinking with ``block_binding``, effort
markers as ``{role: "system", content: [], output_config}`` messages and no ``temperature``;
``compat.allowedFallbackModels`` adds ``fallbacks``; the ``betas`` travel as the
``anthropic-beta`` header of ``/v1/messages?beta=true`` (``beta_features``), never in the body;
on api.anthropic.com with a session id, message threads (``thread: {type: "create"}``: the
engine builds the request that starts a thread, not a ``continue``, which only the running
process can know to send).

Not ported (a request with them raises ``NotImplementedError``): native tool changes
(``tool_addition`` / ``tool_removal``), strict (constrained-sampling) tools.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contextlab.pi import context as pi_context
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_trim
from contextlab.pi.providers.common import sanitize_surrogates, sanitize_tool_call_id
from contextlab.pi.providers.options import MIN_ANSWER_TOKENS, adjust_max_tokens_for_thinking
from contextlab.pi.providers.pi_ai import PiAi, resolve
from contextlab.pi.providers.transcript import (
    collapse_system_messages,
    current_tools,
    render_system_message_update,
    system_message_text,
    transform_messages,
)

__all__ = [
    "INTERLEAVED_THINKING_BETA",
    "adjust_max_tokens_for_thinking",
    "beta_features",
    "build_params",
    "build_simple_params",
    "cache_control",
    "convert_messages",
    "effort_for_level",
    "get_compat",
    "normalize_tool_call_id",
    "sanitize_surrogates",
    "simple_request_target",
]

_UNDEFINED: Any = object()
FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
SERVER_SIDE_FALLBACK_BETA = "server-side-fallback-2026-07-01"
MID_CONVERSATION_OUTPUT_CONFIG_BETA = "mid-conversation-output-config-2026-07-01"
THINKING_BINDING_CONTROLS_BETA = "thinking-binding-controls-2026-08-01"
MESSAGE_THREADS_BETA = "message-threads-2026-08-12"
SEE_ATTACHED_IMAGE = "(see attached image)"
ERROR_TOOL_IMAGE_PLACEHOLDER = "(image attached after the tool results)"
_EFFORTS = ("low", "medium", "high", "xhigh", "max")


def get_compat(model: Mapping[str, Any], pi_ai: PiAi | str | None = None) -> Json:
    """``getAnthropicCompat``: the model's compat flags with the generation's defaults."""
    generation = resolve(pi_ai)
    compat = model.get("compat") or {}
    base_url = model.get("baseUrl") or ""

    def flag(name: str, default: Any) -> Any:
        value = compat.get(name)
        return default if value is None else value

    threads = generation.anthropic_message_threads
    anthropic_host = "api.anthropic.com" in base_url
    return {
        "supportsEagerToolInputStreaming": flag("supportsEagerToolInputStreaming", True),
        "supportsLongCacheRetention": flag("supportsLongCacheRetention", True),
        "supportsCacheControlOnTools": flag("supportsCacheControlOnTools", True),
        "supportsTemperature": flag("supportsTemperature", True),
        "allowEmptySignature": flag("allowEmptySignature", False),
        "supportsStrictTools": flag("supportsStrictTools", False),
        "supportsMidConvoSystemMessages": generation.transcript
        and flag("supportsMidConvoSystemMessages", False),
        "supportsMidConvoToolChanges": flag("supportsMidConvoToolChanges", False),
        "supportsMessageThreads": threads != "none"
        and flag(
            "supportsMessageThreads",
            anthropic_host
            and (threads == "anthropic-host" or model.get("provider") == "anthropic"),
        ),
    }


def cache_control(
    model: Mapping[str, Any], retention: str | None, env: Mapping[str, str]
) -> Json | None:
    """``getCacheControl``: the ``cache_control`` marker for ``retention`` (None for ``none``);
    ``resolveCacheRetention``: the explicit option, then ``PI_CACHE_RETENTION=long``, else
    ``short``."""
    if not retention:
        retention = "long" if env.get("PI_CACHE_RETENTION") == "long" else "short"
    if retention == "none":
        return None
    long_retention = (model.get("compat") or {}).get("supportsLongCacheRetention", True)
    if retention == "long" and long_retention is not False:
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def normalize_tool_call_id(tool_call_id: str, model: Json | None = None, source: Any = None) -> str:
    """``normalizeToolCallId``: Anthropic ids match ``^[a-zA-Z0-9_-]+$``, at most 64 characters."""
    return sanitize_tool_call_id(tool_call_id)[:64]


def _image_block(block: Mapping[str, Any]) -> Json:
    return {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": block.get("mimeType"),
            "data": block.get("data"),
        },
    }


def _tool_result_content(content: Sequence[Mapping[str, Any]]) -> str | list[Json]:
    """``convertContentBlocks``: text joined as one string, or blocks when images are present
    (with a text block first when there is no text)."""
    if not any(b.get("type") == "image" for b in content):
        return sanitize_surrogates("\n".join(b.get("text", "") for b in content))
    blocks = [
        {"type": "text", "text": sanitize_surrogates(b["text"])}
        if b.get("type") == "text"
        else _image_block(b)
        for b in content
    ]
    if not any(b["type"] == "text" for b in blocks):
        blocks.insert(0, {"type": "text", "text": SEE_ATTACHED_IMAGE})
    return blocks


def convert_user_message(msg: Mapping[str, Any]) -> Json | None:
    """``convertMessages``' user branch: string content sent as is unless blank, blocks with the
    blank text ones dropped (None: nothing left to send)."""
    content = msg.get("content")
    if isinstance(content, str):
        if js_trim(content):
            return {"role": "user", "content": sanitize_surrogates(content)}
        return None
    blocks = [
        {"type": "text", "text": sanitize_surrogates(b["text"])}
        if b.get("type") == "text"
        else _image_block(b)
        for b in content or []
    ]
    blocks = [b for b in blocks if b["type"] != "text" or js_trim(b["text"])]
    return {"role": "user", "content": blocks} if blocks else None


def _thinking_block(
    block: Mapping[str, Any], allow_empty_signature: bool, pi_ai: PiAi
) -> Json | None:
    """An assistant's thinking as Anthropic takes it back: redacted as ``redacted_thinking``,
    signed as ``thinking``, unsigned as text (or an unsigned ``thinking`` where the compat allows
    an empty signature); empty thinking is dropped (kept when signed, from 0.84)."""
    if block.get("redacted"):
        return {"type": "redacted_thinking", "data": block.get("thinkingSignature")}
    signature = block.get("thinkingSignature")
    signed = isinstance(signature, str) and bool(js_trim(signature))
    if not js_trim(block.get("thinking", "")) and not (
        signed and pi_ai.anthropic_signed_empty_thinking
    ):
        return None
    text = sanitize_surrogates(block["thinking"])
    if signed:
        return {"type": "thinking", "thinking": text, "signature": signature}
    if allow_empty_signature:
        return {"type": "thinking", "thinking": text, "signature": ""}
    return {"type": "text", "text": text}


def _assistant_blocks(msg: Mapping[str, Any], compat: Mapping[str, Any], pi_ai: PiAi) -> list[Json]:
    blocks = []
    for block in msg.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            if js_trim(block["text"]):
                blocks.append({"type": "text", "text": sanitize_surrogates(block["text"])})
        elif kind == "thinking":
            converted = _thinking_block(block, compat["allowEmptySignature"], pi_ai)
            if converted is not None:
                blocks.append(converted)
        elif kind == "toolCall":
            arguments = block.get("arguments")
            blocks.append(
                {
                    "type": "tool_use",
                    "id": block["id"],
                    "name": block["name"],
                    "input": arguments if arguments is not None else {},
                }
            )
    return blocks


def _split_error_images(msg: Mapping[str, Any]) -> tuple[list[Any], list[Json]] | None:
    """``splitErrorToolResultImages`` (1.3 on): an error result's images leave it (each run of
    them a placeholder) and follow the turn's results, captioned."""
    content = msg.get("content") or []
    images = [b for b in content if b.get("type") == "image"]
    if not msg.get("isError") or not images:
        return None
    kept = pi_context.replace_images(content, ERROR_TOOL_IMAGE_PLACEHOLDER)
    caption = (
        f"Images from the error result of tool call {msg.get('toolCallId')} "
        f"({msg.get('toolName')}):"
    )
    return kept, [{"type": "text", "text": caption}, *(_image_block(b) for b in images)]


def _tool_results(msgs: Sequence[Mapping[str, Any]], start: int, pi_ai: PiAi) -> tuple[int, Json]:
    """Consecutive tool results as one user message (z.ai's endpoint needs it), error images
    after them; returns where the run ends."""
    results = []
    error_images: list[Json] = []
    i = start
    while i < len(msgs) and msgs[i]["role"] == "toolResult":
        tr = msgs[i]
        split = _split_error_images(tr) if pi_ai.anthropic_split_error_images else None
        result: Json = {"type": "tool_result"}
        if "toolCallId" in tr:  # a result without one: JSON.stringify drops undefined
            result["tool_use_id"] = tr["toolCallId"]
        result["content"] = _tool_result_content(split[0] if split else tr.get("content") or [])
        if "isError" in tr:  # undefined is dropped, null is sent
            result["is_error"] = tr["isError"]
        results.append(result)
        if split:
            error_images.extend(split[1])
        i += 1
    return i, {"role": "user", "content": [*results, *error_images]}


def _mark_last_message(params: list[Json], marker: Json, pi_ai: PiAi) -> None:
    """The history's cache breakpoint: the last block of the last message when that is a user
    message (or, with the transcript, a system message)."""
    roles = ("user", "system") if pi_ai.transcript else ("user",)
    if not params or params[-1]["role"] not in roles:
        return
    last = params[-1]
    content = last["content"]
    if isinstance(content, list):
        kinds = ("text", "image", "tool_result", "tool_addition", "tool_removal")
        if content and content[-1].get("type") in kinds:
            content[-1]["cache_control"] = marker
    elif isinstance(content, str):
        last["content"] = [{"type": "text", "text": content, "cache_control": marker}]


# Long on purpose: it follows pi-ai's convertMessages statement by statement, so that the two
# read side by side.
def convert_messages(
    msgs: Sequence[Mapping[str, Any]],
    model: Mapping[str, Any],
    marker: Json | None,
    pi_ai: PiAi | str | None = None,
    *,
    effort_provider: str | None = None,
) -> tuple[list[Json], dict[int, str]]:
    """``convertMessages`` (API key; tool names are never renamed to Claude Code's) of messages
    that went through ``transformMessages``: (the messages, the effort each managed-effort
    reply of ``effort_provider`` was given, by its index). Later system messages (only where the
    model takes them mid-conversation) are held back until the next assistant message sent."""
    generation = resolve(pi_ai)
    compat = get_compat(model, generation)
    params: list[Json] = []
    levels: dict[int, str] = {}
    pending: list[Json] = []
    i = 0
    while i < len(msgs):
        msg = msgs[i]
        role = msg["role"]
        if role == "system":
            if msg.get("toolsAdded") or msg.get("toolsRemoved"):
                raise NotImplementedError("pi-ai 1.x's native tool changes (tool_addition)")
            text = render_system_message_update(msg)
            if text:
                block = {"type": "text", "text": sanitize_surrogates(text)}
                pending.append({"role": "system", "content": [block]})
        elif role == "user":
            converted = convert_user_message(msg)
            if converted is not None:
                params.append(converted)
        elif role == "assistant":
            if not generation.anthropic_holds_updates_past_empty_replies:
                params.extend(pending)
                pending.clear()
            blocks = _assistant_blocks(msg, compat, generation)
            if blocks:
                params.extend(pending)
                pending.clear()
                level = msg.get("providerThinkingLevel")
                if (
                    effort_provider is not None
                    and msg.get("api") == "anthropic-messages"
                    and msg.get("provider") == effort_provider
                    and level in _EFFORTS
                ):
                    levels[len(params)] = level
                params.append({"role": "assistant", "content": blocks})
        elif role == "toolResult":
            i, results = _tool_results(msgs, i, generation)
            params.append(results)
            continue
        i += 1
    params.extend(pending)
    if marker:
        _mark_last_message(params, marker, generation)
    return params, levels


def insert_thinking_level_messages(
    messages: Sequence[Json], levels: Mapping[int, str], active_effort: str
) -> list[Json]:
    """``insertThinkingLevelMessages``: each managed-effort reply preceded by its effort, and the
    requested effort last, as ``{role: "system", content: [], output_config}`` messages."""
    out: list[Json] = []
    for index, message in enumerate(messages):
        if index in levels:
            out.append(
                {"role": "system", "content": [], "output_config": {"effort": levels[index]}}
            )
        out.append(message)
    out.append({"role": "system", "content": [], "output_config": {"effort": active_effort}})
    return out


def _convert_tools(
    tools: Sequence[Mapping[str, Any]], compat: Mapping[str, Any], marker: Json | None, pi_ai: PiAi
) -> list[Json]:
    """``convertTools``: name, description, the schema's properties and required (from 1.3 its
    ``$defs`` / ``definitions``, from 1.6 its ``additionalProperties``), the cache marker on the
    last."""
    out = []
    for index, tool in enumerate(tools):
        # resolveJsonSchemaStrictSampling: a tool is strict only where the model supports strict
        # tools (not ported); one that requires it fails the request in Pi.
        sampling = tool.get("constrainedSampling")
        config: Mapping[str, Any] = sampling if isinstance(sampling, dict) else {}
        required = config.get("strict") == "require"
        if config.get("type") == "json_schema" and (compat["supportsStrictTools"] or required):
            raise NotImplementedError("pi-ai's constrained-sampling (strict) tools")
        schema = tool.get("parameters") or {}
        item: Json = {"name": tool["name"], "description": tool.get("description")}
        if compat["supportsEagerToolInputStreaming"]:
            item["eager_input_streaming"] = True
        input_schema: Json = {
            "type": "object",
            "properties": schema.get("properties") or {},
            "required": schema.get("required") or [],
        }
        if pi_ai.anthropic_schema_additional_properties and "additionalProperties" in schema:
            input_schema["additionalProperties"] = schema["additionalProperties"]
        for key in ("$defs", "definitions") if pi_ai.anthropic_schema_defs else ():
            if key in schema:
                input_schema[key] = schema[key]
        item["input_schema"] = input_schema
        if marker and index == len(tools) - 1:
            item["cache_control"] = marker
        out.append(item)
    return out


def _mid_convo_effort(model: Mapping[str, Any]) -> bool:
    return (model.get("compat") or {}).get("supportsMidConvoEffort") is True


def _fallback_models(model: Mapping[str, Any]) -> list[Any]:
    fallbacks = (model.get("compat") or {}).get("allowedFallbackModels")
    return list(fallbacks) if isinstance(fallbacks, list) else []


def _message_threads(
    model: Mapping[str, Any], options: Mapping[str, Any], marker: Json | None, pi_ai: PiAi
) -> bool:
    """Whether the request starts a message thread: the model supports threads, and a session
    id is sent with cache retention."""
    return (
        bool(get_compat(model, pi_ai)["supportsMessageThreads"])
        and marker is not None
        and options.get("sessionId") is not None
    )


def beta_features(
    model: Mapping[str, Any],
    options: Mapping[str, Any],
    pi_ai: PiAi | str | None = "1.6",
    *,
    tools: Sequence[Json] = (),
) -> list[str]:
    """``getBetaFeatures`` (API key, no native tool changes): what pi-ai 1.x's SDK sends as
    ``anthropic-beta`` (to ``/v1/messages?beta=true``); a configured ``anthropic-beta`` header
    replaces them (``null``: none). ``tools``: the request's tools."""
    generation = resolve(pi_ai)
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
    compat = get_compat(model, generation)
    features = []
    if tools and not compat["supportsEagerToolInputStreaming"]:
        features.append(FINE_GRAINED_TOOL_STREAMING_BETA)
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
    marker = cache_control(model, options.get("cacheRetention"), options.get("env") or {})
    if _message_threads(model, options, marker, generation):
        features.append(MESSAGE_THREADS_BETA)
    return list(dict.fromkeys(features))


def simple_request_target(
    model: Mapping[str, Any],
    context: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
    *,
    pi_ai: PiAi | str | None = None,
) -> tuple[str, list[str]]:
    """Where ``streamSimple`` sends ``build_simple_params``' body, and its ``anthropic-beta``
    features: from 0.85 the SDK's ``beta.messages.create`` (``/v1/messages?beta=true``, the
    features of ``beta_features``); before, ``messages.create`` (``/v1/messages``) with the
    client's header (fine-grained tool streaming when the model cannot stream tool input
    eagerly, interleaved thinking unless the model's thinking is adaptive)."""
    generation = resolve(pi_ai)
    options = options or {}
    messages = context.get("messages") or []
    tools = current_tools(messages) if generation.transcript else list(context.get("tools") or [])
    thinking = {**options, "thinkingEnabled": bool(options.get("reasoning"))}
    if generation.anthropic_beta_endpoint:
        return "/v1/messages?beta=true", beta_features(model, thinking, generation, tools=tools)
    features = []
    if tools and not get_compat(model, generation)["supportsEagerToolInputStreaming"]:
        features.append(FINE_GRAINED_TOOL_STREAMING_BETA)
    if (model.get("compat") or {}).get("forceAdaptiveThinking") is not True:
        features.append(INTERLEAVED_THINKING_BETA)
    for headers in (model.get("headers"), options.get("headers")):
        for name, value in (headers or {}).items():
            if name.lower() == "anthropic-beta":
                features = [] if value is None else [str(value)]
    return "/v1/messages", features


def _conversation(
    model: Mapping[str, Any], context: Mapping[str, Any], pi_ai: PiAi
) -> tuple[str, list[Json], list[Json]]:
    """(the prompt text, the conversation after ``transformMessages``, the tools)."""
    if not pi_ai.transcript:
        messages = pi_context.transform_messages(
            context.get("messages") or [],
            dict(model),
            normalize_tool_call_id=normalize_tool_call_id,
        )
        return context.get("systemPrompt") or "", messages, list(context.get("tools") or [])
    transcript: list[Json] = list(context.get("messages") or [])
    if context.get("systemPrompt"):
        transcript.insert(0, {"role": "system", "content": context["systemPrompt"], "timestamp": 0})
    if not get_compat(model, pi_ai)["supportsMidConvoSystemMessages"]:
        transcript = collapse_system_messages(transcript)
    initial = transcript[0] if transcript and transcript[0].get("role") == "system" else None
    transformed = transform_messages(
        transcript, model, pi_ai, lambda id_: normalize_tool_call_id(id_)
    )
    conversation = transformed[1:] if initial is not None else transformed
    text = system_message_text(initial) if initial is not None else ""
    return text, conversation, current_tools(transcript)


# Long on purpose: it follows pi-ai's buildParams statement by statement, so that the two read
# side by side.
def build_params(
    model: Mapping[str, Any],
    context: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
    *,
    pi_ai: PiAi | str | None = None,
) -> Json:
    """``buildParams`` (API key): the JSON body of ``messages.create``, in Pi's key order
    (``betas`` travel as a header, see ``beta_features``)."""
    generation = resolve(pi_ai)
    options = options or {}
    compat = get_compat(model, generation)
    marker = cache_control(model, options.get("cacheRetention"), options.get("env") or {})
    prompt, conversation, tools = _conversation(model, context, generation)
    level_map = model.get("thinkingLevelMap") or {}
    off_sends_disabled = level_map.get("off", _UNDEFINED) is not None
    thinking_disabled = (
        bool(model.get("reasoning"))
        and options.get("thinkingEnabled") is False
        and off_sends_disabled
    )
    managed = generation.anthropic_beta_endpoint and _mid_convo_effort(model)
    effort_messages = managed and (generation.anthropic_effort_when_off or not thinking_disabled)
    converted, levels = convert_messages(
        conversation,
        model,
        marker,
        generation,
        effort_provider=model.get("provider") if effort_messages else None,
    )
    active_effort = options.get("effort") or "high"
    max_tokens = options.get("maxTokens")
    params: Json = {
        "model": model["id"],
        "messages": insert_thinking_level_messages(converted, levels, active_effort)
        if effort_messages
        else converted,
        "max_tokens": max_tokens if max_tokens is not None else model.get("maxTokens"),
        "stream": True,
    }
    if prompt:
        block: Json = {"type": "text", "text": sanitize_surrogates(prompt)}
        if marker:
            block["cache_control"] = marker
        params["system"] = [block]
    temperature = options.get("temperature")
    if (
        temperature is not None
        and not options.get("thinkingEnabled")
        and not managed
        and compat["supportsTemperature"]
    ):
        params["temperature"] = temperature
    if tools:
        tool_marker = marker if compat["supportsCacheControlOnTools"] else None
        params["tools"] = _convert_tools(tools, compat, tool_marker, generation)
    if effort_messages:
        params["thinking"] = {
            "type": "adaptive",
            "display": options.get("thinkingDisplay") or "summarized",
            "block_binding": {"prefix_mismatch_behavior": "drop_block"},
        }
        params["output_config"] = {"effort": generation.anthropic_top_effort}
    elif thinking_disabled:
        params["thinking"] = {"type": "disabled"}
    elif model.get("reasoning") and options.get("thinkingEnabled"):
        display = options.get("thinkingDisplay") or "summarized"
        if (model.get("compat") or {}).get("forceAdaptiveThinking") is True:
            params["thinking"] = {"type": "adaptive", "display": display}
            if options.get("effort"):
                params["output_config"] = {"effort": options["effort"]}
        else:
            params["thinking"] = {
                "type": "enabled",
                "budget_tokens": options.get("thinkingBudgetTokens") or 1024,
                "display": display,
            }
    metadata = options.get("metadata")
    if metadata and isinstance(metadata.get("user_id"), str):
        params["metadata"] = {"user_id": metadata["user_id"]}
    tool_choice = options.get("toolChoice")
    if tool_choice:
        params["tool_choice"] = (
            {"type": tool_choice} if isinstance(tool_choice, str) else tool_choice
        )
    fallbacks = _fallback_models(model) if generation.anthropic_beta_endpoint else []
    if fallbacks:
        params["fallbacks"] = [{"model": f.get("model")} for f in fallbacks]
    if generation.transcript and _message_threads(model, options, marker, generation):
        params["thread"] = {"type": "create"}
    return params


def effort_for_level(model: Mapping[str, Any], level: str) -> str:
    """``mapThinkingLevelToEffort``: the model's ``thinkingLevelMap`` entry, else minimal/low →
    low, medium, high, anything else high."""
    mapped = (model.get("thinkingLevelMap") or {}).get(level)
    if isinstance(mapped, str):
        return mapped
    return {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}.get(level, "high")


def build_simple_params(
    model: Mapping[str, Any],
    context: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
    *,
    pi_ai: PiAi | str | None = None,
    clamp_to_context: Callable[[int], int] | None = None,
) -> Json:
    """``streamSimple``: the body for ``{maxTokens, reasoning?, cacheRetention?, ...}``.

    ``options["maxTokens"]`` is ``buildBaseOptions``' (from 0.80.3 the caller's
    ``clampMaxTokensToContext`` of the requested cap or ``model.maxTokens``);
    ``clamp_to_context`` is that clamp for this request, which pi-ai (0.80.3 on) applies again
    to the cap once a thinking budget is added, the budget then leaving 1024 tokens for the
    answer."""
    generation = resolve(pi_ai)
    options = options or {}
    keys = (
        "temperature",
        "maxTokens",
        "cacheRetention",
        "env",
        "metadata",
        "headers",
        "toolChoice",
        "sessionId",
    )
    base: Json = {key: options.get(key) for key in keys}
    reasoning = options.get("reasoning")
    if not reasoning:
        return build_params(model, context, {**base, "thinkingEnabled": False}, pi_ai=generation)
    if (model.get("compat") or {}).get("forceAdaptiveThinking") is True:
        effort = effort_for_level(model, reasoning)
        with_effort = {**base, "thinkingEnabled": True, "effort": effort}
        return build_params(model, context, with_effort, pi_ai=generation)
    max_tokens, budget = adjust_max_tokens_for_thinking(
        base["maxTokens"],
        int(model.get("maxTokens") or 0),
        reasoning,
        options.get("thinkingBudgets"),
    )
    if clamp_to_context is not None:
        max_tokens = clamp_to_context(max_tokens)
        budget = min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS))
    budgeted = {
        **base,
        "maxTokens": max_tokens,
        "thinkingEnabled": True,
        "thinkingBudgetTokens": budget,
    }
    return build_params(model, context, budgeted, pi_ai=generation)
