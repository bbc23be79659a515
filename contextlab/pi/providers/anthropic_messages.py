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

import re
from typing import Any

__all__ = [
    "adjust_max_tokens_for_thinking",
    "build_params",
    "build_simple_params",
    "convert_messages",
    "sanitize_surrogates",
    "transform_messages",
]

Json = dict[str, Any]

NO_RESULT_TEXT = "No result provided"
NON_VISION_USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
NON_VISION_TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"
DEFAULT_THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}

_LONE_SURROGATE = re.compile(
    r"[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]"
)
_TOOL_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def sanitize_surrogates(text: str) -> str:
    """``sanitizeSurrogates``: drop unpaired UTF-16 surrogates (valid pairs are kept)."""
    return _LONE_SURROGATE.sub("", text)


def _compat(model: Json) -> Json:
    compat = model.get("compat") or {}
    return {
        "supportsEagerToolInputStreaming": compat.get("supportsEagerToolInputStreaming", True),
        "supportsLongCacheRetention": compat.get("supportsLongCacheRetention", True),
        "supportsCacheControlOnTools": compat.get("supportsCacheControlOnTools", True),
        "supportsTemperature": compat.get("supportsTemperature", True),
        "allowEmptySignature": compat.get("allowEmptySignature", False),
    }


def _cache_control(model: Json, retention: str | None, env: dict[str, str]) -> Json | None:
    # resolveCacheRetention: explicit option, then PI_CACHE_RETENTION=long, else "short".
    if not retention:
        retention = "long" if env.get("PI_CACHE_RETENTION") == "long" else "short"
    if retention == "none":
        return None
    if retention == "long" and _compat(model)["supportsLongCacheRetention"]:
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def _replace_images(content: list[Json], placeholder: str) -> list[Json]:
    result: list[Json] = []
    previous_was_placeholder = False
    for block in content:
        if block.get("type") == "image":
            if not previous_was_placeholder:
                result.append({"type": "text", "text": placeholder})
            previous_was_placeholder = True
            continue
        result.append(block)
        previous_was_placeholder = block.get("text") == placeholder
    return result


def normalize_tool_call_id(tool_call_id: str) -> str:
    return _TOOL_ID_UNSAFE.sub("_", tool_call_id)[:64]


def transform_messages(messages: list[Json], model: Json) -> list[Json]:
    """``transformMessages`` with Anthropic's id normaliser (same rules as pi-ai, in order)."""
    if "image" not in (model.get("input") or []):
        downgraded = []
        for msg in messages:
            if msg["role"] == "user" and isinstance(msg.get("content"), list):
                msg = {
                    **msg,
                    "content": _replace_images(msg["content"], NON_VISION_USER_IMAGE_PLACEHOLDER),
                }
            elif msg["role"] == "toolResult":
                msg = {
                    **msg,
                    "content": _replace_images(msg["content"], NON_VISION_TOOL_IMAGE_PLACEHOLDER),
                }
            downgraded.append(msg)
        messages = downgraded

    id_map: dict[str, str] = {}
    transformed: list[Json] = []
    for msg in messages:
        if msg["role"] == "toolResult":
            new_id = id_map.get(msg["toolCallId"])
            transformed.append({**msg, "toolCallId": new_id} if new_id else msg)
            continue
        if msg["role"] != "assistant":
            transformed.append(msg)
            continue
        same_model = (
            msg.get("provider") == model.get("provider")
            and msg.get("api") == model.get("api")
            and msg.get("model") == model.get("id")
        )
        content: list[Json] = []
        for block in msg.get("content") or []:
            kind = block.get("type")
            if kind == "thinking":
                if block.get("redacted"):
                    if same_model:
                        content.append(block)
                    continue
                if same_model and block.get("thinkingSignature"):
                    content.append(block)
                    continue
                thinking = block.get("thinking")
                if not thinking or thinking.strip() == "":
                    continue
                content.append(block if same_model else {"type": "text", "text": thinking})
            elif kind == "text":
                content.append(block if same_model else {"type": "text", "text": block["text"]})
            elif kind == "toolCall":
                call = block
                if not same_model and call.get("thoughtSignature"):
                    call = {k: v for k, v in call.items() if k != "thoughtSignature"}
                if not same_model:
                    new_id = normalize_tool_call_id(call["id"])
                    if new_id != call["id"]:
                        id_map[call["id"]] = new_id
                        call = {**call, "id": new_id}
                content.append(call)
            else:
                content.append(block)
        transformed.append({**msg, "content": content})

    # Second pass: drop error/aborted assistant turns and give orphan tool calls a result.
    result: list[Json] = []
    pending: list[Json] = []
    seen: set[str] = set()

    def flush() -> None:
        nonlocal pending, seen
        for call in pending:
            if call["id"] not in seen:
                result.append(
                    {
                        "role": "toolResult",
                        "toolCallId": call["id"],
                        "toolName": call.get("name"),
                        "content": [{"type": "text", "text": NO_RESULT_TEXT}],
                        "isError": True,
                    }
                )
        pending, seen = [], set()

    for msg in transformed:
        if msg["role"] == "assistant":
            flush()
            if msg.get("stopReason") in ("error", "aborted"):
                continue
            calls = [b for b in msg["content"] if b.get("type") == "toolCall"]
            if calls:
                pending, seen = calls, set()
            result.append(msg)
        elif msg["role"] == "toolResult":
            seen.add(msg["toolCallId"])
            result.append(msg)
        elif msg["role"] == "user":
            flush()
            result.append(msg)
        else:
            result.append(msg)
    flush()
    return result


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


def convert_messages(messages: list[Json], model: Json, cache_control: Json | None) -> list[Json]:
    """``convertMessages`` for API-key auth (tool names are never renamed to Claude Code's)."""
    allow_empty_signature = _compat(model)["allowEmptySignature"]
    msgs = transform_messages(messages, model)
    params: list[Json] = []
    i = 0
    while i < len(msgs):
        msg = msgs[i]
        role = msg["role"]
        if role == "user":
            content = msg.get("content")
            if isinstance(content, str):
                if content.strip():
                    params.append({"role": "user", "content": sanitize_surrogates(content)})
            else:
                blocks = [
                    {"type": "text", "text": sanitize_surrogates(b["text"])}
                    if b.get("type") == "text"
                    else _image_block(b)
                    for b in content or []
                ]
                blocks = [b for b in blocks if b["type"] != "text" or b["text"].strip()]
                if blocks:
                    params.append({"role": "user", "content": blocks})
        elif role == "assistant":
            blocks = []
            for block in msg.get("content") or []:
                kind = block.get("type")
                if kind == "text":
                    if block["text"].strip():
                        blocks.append({"type": "text", "text": sanitize_surrogates(block["text"])})
                elif kind == "thinking":
                    if block.get("redacted"):
                        blocks.append(
                            {"type": "redacted_thinking", "data": block.get("thinkingSignature")}
                        )
                        continue
                    if not block.get("thinking", "").strip():
                        continue
                    signature = block.get("thinkingSignature")
                    if not signature or not signature.strip():
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
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": tr["toolCallId"],
                        "content": _tool_result_content(tr.get("content") or []),
                        "is_error": tr.get("isError"),
                    }
                )
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
    cache_control = _cache_control(model, options.get("cacheRetention"), options.get("env") or {})
    max_tokens = options.get("maxTokens")
    params: Json = {
        "model": model["id"],
        "messages": convert_messages(context.get("messages") or [], model, cache_control),
        "max_tokens": max_tokens if max_tokens is not None else model.get("maxTokens"),
        "stream": True,
    }
    system_prompt = context.get("systemPrompt")
    if system_prompt:
        block: Json = {"type": "text", "text": sanitize_surrogates(system_prompt)}
        if cache_control:
            block["cache_control"] = cache_control
        params["system"] = [block]
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
            cache_control if compat["supportsCacheControlOnTools"] else None,
        )
    if model.get("reasoning"):
        thinking_level_map = model.get("thinkingLevelMap") or {}
        if options.get("thinkingEnabled"):
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
        elif options.get("thinkingEnabled") is False and not (
            "off" in thinking_level_map and thinking_level_map["off"] is None
        ):
            params["thinking"] = {"type": "disabled"}
    return params


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


def _effort(model: Json, level: str) -> str:
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
            model, context, {**base, "thinkingEnabled": True, "effort": _effort(model, reasoning)}
        )
    max_tokens, budget = adjust_max_tokens_for_thinking(
        base["maxTokens"], model["maxTokens"], reasoning, options.get("thinkingBudgets")
    )
    return build_params(
        model,
        context,
        {**base, "maxTokens": max_tokens, "thinkingEnabled": True, "thinkingBudgetTokens": budget},
    )
