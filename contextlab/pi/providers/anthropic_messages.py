"""The body Pi 0.80.2 sends to Anthropic Messages (pi-ai ``dist/api/anthropic-messages.js``).

A pure port of ``streamSimple`` → ``stream`` → ``buildParams`` / ``convertMessages`` for API-key
authentication (the only kind contextlab uses; OAuth and Copilot identities are out of scope), so
the request contextlab sends for a summarisation equals Pi's key for key, in Pi's key order. The
caller hands the result to the official ``anthropic`` SDK unchanged.

Model and context are plain dicts shaped as pi-ai's ``Model`` and ``Context``:
``model = {"id", "provider", "api", "reasoning", "input", "maxTokens", "compat"?,
"thinkingLevelMap"?}``; ``context = {"systemPrompt"?, "messages", "tools"?}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextlab.pi.context import transform_messages
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_trim, js_truthy
from contextlab.pi.providers.common import sanitize_surrogates, sanitize_tool_call_id

__all__ = [
    "adjust_max_tokens_for_thinking",
    "build_params",
    "build_simple_params",
    "cache_control",
    "convert_messages",
    "convert_user_message",
    "effort_for_level",
    "enabled_thinking",
    "normalize_tool_call_id",
    "sanitize_surrogates",
    "system_blocks",
]


DEFAULT_THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}


def _compat(model: Json) -> Json:
    compat = model.get("compat") or {}
    return {
        "supportsEagerToolInputStreaming": compat.get("supportsEagerToolInputStreaming", True),
        "supportsLongCacheRetention": compat.get("supportsLongCacheRetention", True),
        "supportsCacheControlOnTools": compat.get("supportsCacheControlOnTools", True),
        "supportsTemperature": compat.get("supportsTemperature", True),
        "allowEmptySignature": compat.get("allowEmptySignature", False),
    }


def cache_control(model: Json, retention: str | None, env: dict[str, str]) -> Json | None:
    """``getCacheControl``: the ``cache_control`` marker for ``retention`` (None for ``none``);
    ``resolveCacheRetention``: the explicit option, then ``PI_CACHE_RETENTION=long``, else
    ``short``."""
    if not retention:
        retention = "long" if env.get("PI_CACHE_RETENTION") == "long" else "short"
    if retention == "none":
        return None
    if retention == "long" and _compat(model)["supportsLongCacheRetention"]:
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def normalize_tool_call_id(tool_call_id: str, model: Json | None = None, source: Any = None) -> str:
    """``normalizeToolCallId``: Anthropic ids match ``^[a-zA-Z0-9_-]+$``, at most 64 characters."""
    return sanitize_tool_call_id(tool_call_id)[:64]


def _image_block(block: Json) -> Json:
    return {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": block.get("mimeType"),
            "data": block.get("data"),
        },
    }


def _tool_result_content(content: list[Json]) -> str | list[Json]:
    if not any(b.get("type") == "image" for b in content):
        return sanitize_surrogates("\n".join(b.get("text", "") for b in content))
    blocks = [
        {"type": "text", "text": sanitize_surrogates(b["text"])}
        if b.get("type") == "text"
        else _image_block(b)
        for b in content
    ]
    if not any(b["type"] == "text" for b in blocks):
        blocks.insert(0, {"type": "text", "text": "(see attached image)"})
    return blocks


def convert_user_message(msg: Json) -> Json | None:
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


# Long on purpose: it follows pi-ai's convertMessages statement by statement, so that the two
# read side by side.
def convert_messages(messages: list[Json], model: Json, cache_control: Json | None) -> list[Json]:
    """``convertMessages`` for API-key auth (tool names are never renamed to Claude Code's)."""
    allow_empty_signature = _compat(model)["allowEmptySignature"]
    msgs = transform_messages(messages, model, normalize_tool_call_id=normalize_tool_call_id)
    params: list[Json] = []
    i = 0
    while i < len(msgs):
        msg = msgs[i]
        role = msg["role"]
        if role == "user":
            converted = convert_user_message(msg)
            if converted is not None:
                params.append(converted)
        elif role == "assistant":
            blocks = []
            for block in msg.get("content") or []:
                kind = block.get("type")
                if kind == "text":
                    if js_trim(block["text"]):
                        blocks.append({"type": "text", "text": sanitize_surrogates(block["text"])})
                elif kind == "thinking":
                    if block.get("redacted"):
                        blocks.append(
                            {"type": "redacted_thinking", "data": block.get("thinkingSignature")}
                        )
                        continue
                    if not js_trim(block.get("thinking", "")):
                        continue
                    signature = block.get("thinkingSignature")
                    if not js_truthy(signature) or not js_trim(signature):
                        if allow_empty_signature:
                            blocks.append(
                                {
                                    "type": "thinking",
                                    "thinking": sanitize_surrogates(block["thinking"]),
                                    "signature": "",
                                }
                            )
                        else:
                            blocks.append(
                                {"type": "text", "text": sanitize_surrogates(block["thinking"])}
                            )
                    else:
                        blocks.append(
                            {
                                "type": "thinking",
                                "thinking": sanitize_surrogates(block["thinking"]),
                                "signature": signature,
                            }
                        )
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
            if blocks:
                params.append({"role": "assistant", "content": blocks})
        elif role == "toolResult":
            # Consecutive tool results travel in one user message (z.ai's endpoint needs it).
            results = []
            while i < len(msgs) and msgs[i]["role"] == "toolResult":
                tr = msgs[i]
                result: Json = {"type": "tool_result"}
                if "toolCallId" in tr:  # a result without one: JSON.stringify drops undefined
                    result["tool_use_id"] = tr["toolCallId"]
                result["content"] = _tool_result_content(tr.get("content") or [])
                if "isError" in tr:  # undefined is dropped, null is sent
                    result["is_error"] = tr["isError"]
                results.append(result)
                i += 1
            params.append({"role": "user", "content": results})
            continue
        i += 1

    # The last user message carries the cache breakpoint for the conversation history.
    if cache_control and params and params[-1]["role"] == "user":
        last = params[-1]
        if isinstance(last["content"], list):
            if last["content"] and last["content"][-1].get("type") in (
                "text",
                "image",
                "tool_result",
            ):
                last["content"][-1]["cache_control"] = cache_control
        elif isinstance(last["content"], str):
            last["content"] = [
                {"type": "text", "text": last["content"], "cache_control": cache_control}
            ]
    return params


def _convert_tools(tools: list[Json], eager: bool, cache_control: Json | None) -> list[Json]:
    out = []
    for index, tool in enumerate(tools):
        schema = tool.get("parameters") or {}
        item: Json = {"name": tool["name"], "description": tool.get("description")}
        if eager:
            item["eager_input_streaming"] = True
        item["input_schema"] = {
            "type": "object",
            "properties": schema.get("properties") or {},
            "required": schema.get("required") or [],
        }
        if cache_control and index == len(tools) - 1:
            item["cache_control"] = cache_control
        out.append(item)
    return out


def build_params(model: Json, context: Json, options: Json | None = None) -> Json:
    """``buildParams`` (API key): the JSON body of ``messages.create``, in Pi's key order."""
    options = options or {}
    compat = _compat(model)
    marker = cache_control(model, options.get("cacheRetention"), options.get("env") or {})
    max_tokens = options.get("maxTokens")
    params: Json = {
        "model": model["id"],
        "messages": convert_messages(context.get("messages") or [], model, marker),
        "max_tokens": max_tokens if max_tokens is not None else model.get("maxTokens"),
        "stream": True,
    }
    system_prompt = context.get("systemPrompt")
    if system_prompt:
        params["system"] = system_blocks(system_prompt, marker)
    temperature = options.get("temperature")
    if (
        temperature is not None
        and not options.get("thinkingEnabled")
        and compat["supportsTemperature"]
    ):
        params["temperature"] = temperature
    tools = context.get("tools")
    if tools:
        params["tools"] = _convert_tools(
            tools,
            compat["supportsEagerToolInputStreaming"],
            marker if compat["supportsCacheControlOnTools"] else None,
        )
    if model.get("reasoning"):
        thinking_level_map = model.get("thinkingLevelMap") or {}
        if options.get("thinkingEnabled"):
            enabled_thinking(params, model, options)
        elif options.get("thinkingEnabled") is False and not (
            "off" in thinking_level_map and thinking_level_map["off"] is None
        ):
            params["thinking"] = {"type": "disabled"}
    return params


def system_blocks(text: str, marker: Json | None) -> list[Json]:
    """The ``system`` parameter: one text block, with the cache marker when there is one."""
    block: Json = {"type": "text", "text": sanitize_surrogates(text)}
    if marker:
        block["cache_control"] = marker
    return [block]


def enabled_thinking(params: Json, model: Mapping[str, Any], options: Mapping[str, Any]) -> None:
    """Thinking asked for a model that reasons: adaptive (with the effort) where the model's
    compat forces it, else a budget (pi-ai 0.80.2 and 1.6.0 alike)."""
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


def adjust_max_tokens_for_thinking(
    base_max_tokens: int | None, model_max_tokens: int, level: str, custom: Json | None = None
) -> tuple[int, int]:
    """``adjustMaxTokensForThinking`` → ``(maxTokens, thinkingBudget)``."""
    budgets = {**DEFAULT_THINKING_BUDGETS, **(custom or {})}
    clamped = "high" if level == "xhigh" else level
    budget = budgets[clamped]
    if base_max_tokens is None:
        max_tokens = model_max_tokens
    else:
        max_tokens = min(base_max_tokens + budget, model_max_tokens)
    if max_tokens <= budget:
        budget = max(0, max_tokens - 1024)
    return max_tokens, budget


def effort_for_level(model: Json, level: str) -> str:
    """``mapThinkingLevelToEffort``: the model's ``thinkingLevelMap`` entry, else minimal/low →
    low, medium, high, anything else high."""
    mapped = (model.get("thinkingLevelMap") or {}).get(level)
    if isinstance(mapped, str):
        return mapped
    return {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}.get(level, "high")


def build_simple_params(model: Json, context: Json, options: Json | None = None) -> Json:
    """``streamSimple``: the body for ``{maxTokens, reasoning?}``, as compaction calls it."""
    options = options or {}
    base: Json = {
        "temperature": options.get("temperature"),
        "maxTokens": options.get("maxTokens"),
        "cacheRetention": options.get("cacheRetention"),
        "env": options.get("env"),
    }
    reasoning = options.get("reasoning")
    if not reasoning:
        return build_params(model, context, {**base, "thinkingEnabled": False})
    if (model.get("compat") or {}).get("forceAdaptiveThinking") is True:
        return build_params(
            model,
            context,
            {**base, "thinkingEnabled": True, "effort": effort_for_level(model, reasoning)},
        )
    max_tokens, budget = adjust_max_tokens_for_thinking(
        base["maxTokens"], model["maxTokens"], reasoning, options.get("thinkingBudgets")
    )
    return build_params(
        model,
        context,
        {**base, "maxTokens": max_tokens, "thinkingEnabled": True, "thinkingBudgetTokens": budget},
    )
