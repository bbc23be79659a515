"""The body Pi 0.80.2 sends to an OpenAI-compatible chat-completions API.

A pure port of pi-ai's ``dist/api/openai-completions.js`` (``streamSimple`` → ``stream`` →
``buildParams`` / ``convertMessages`` / ``convertTools``, ``detectCompat`` / ``getCompat``) and of
``clampThinkingLevel`` (``dist/models.js``). The result is the request body key for key, in pi-ai's
key order; ``build_request_body`` serialises it as the ``openai`` npm SDK does
(``JSON.stringify``), so it can be compared byte for byte with what Pi sent.

Model, context and options are plain dicts shaped as pi-ai's:
``model = {"id", "provider", "api", "baseUrl", "reasoning", "input", "compat"?,
"thinkingLevelMap"?}``; ``context = {"systemPrompt"?, "messages", "tools"?}`` where ``messages``
are the LLM messages **after** ``transformMessages`` (contextlab.pi.context's ``sent``) and
``tools`` are ``{"name", "description", "parameters"}``.

The module reads no environment: ``PI_CACHE_RETENTION=long`` corresponds to
``cacheRetention="long"`` in the options.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_slice, js_trim, js_truthy, json_parse, json_stringify
from contextlab.pi.providers.common import sanitize_surrogates, sanitize_tool_call_id

__all__ = [
    "EXTENDED_THINKING_LEVELS",
    "build_params",
    "build_request_body",
    "clamp_thinking_level",
    "convert_messages",
    "convert_tools",
    "detect_compat",
    "get_compat",
    "image_url",
    "normalize_tool_call_id",
    "sanitize_surrogates",
    "simple_options",
    "supported_thinking_levels",
]


EXTENDED_THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
OPENAI_PROMPT_CACHE_KEY_MAX_LENGTH = 64

_UNDEFINED = object()


# --- thinking levels (dist/models.js) --------------------------------------------------------


def supported_thinking_levels(
    model: Mapping[str, Any],
    levels: Sequence[str] = EXTENDED_THINKING_LEVELS,
    opt_in: Sequence[str] = ("xhigh",),
) -> list[str]:
    """``getSupportedThinkingLevels``: ``levels`` a reasoning model offers; those in ``opt_in``
    only when its ``thinkingLevelMap`` names them, any mapped to null never. pi-ai 1.x passes
    its longer list (with "max", also opt-in)."""
    if not model.get("reasoning"):
        return ["off"]
    level_map = model.get("thinkingLevelMap") or {}
    out = []
    for level in levels:
        mapped = level_map.get(level, _UNDEFINED)
        if mapped is None:
            continue
        if level in opt_in and mapped is _UNDEFINED:
            continue
        out.append(level)
    return out


def clamp_thinking_level(
    model: Mapping[str, Any],
    level: str,
    levels: Sequence[str] = EXTENDED_THINKING_LEVELS,
    opt_in: Sequence[str] = ("xhigh",),
) -> str:
    """``clampThinkingLevel``: the requested level, else the nearest higher one, else lower."""
    available = supported_thinking_levels(model, levels, opt_in)
    if level in available:
        return level
    if level not in levels:
        return available[0] if available else "off"
    index = levels.index(level)
    for candidate in levels[index:]:
        if candidate in available:
            return candidate
    for candidate in reversed(levels[:index]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"


def simple_options(
    model: Mapping[str, Any],
    *,
    reasoning: str | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    tool_choice: Any = None,
    session_id: str | None = None,
    cache_retention: str | None = None,
) -> Json:
    """The options ``streamSimple`` hands to ``stream``: the thinking level becomes an effort.

    The coding agent passes ``reasoning`` = the session thinking level (``None`` when ``off``) and
    no ``max_tokens`` for agent turns; compaction passes ``max_tokens`` and ``reasoning``; branch
    summaries pass ``max_tokens=2048`` only.
    """
    clamped = clamp_thinking_level(model, reasoning) if reasoning else None
    options: Json = {}
    if temperature is not None:
        options["temperature"] = temperature
    if max_tokens:
        options["maxTokens"] = max_tokens
    if session_id is not None:
        options["sessionId"] = session_id
    if cache_retention is not None:
        options["cacheRetention"] = cache_retention
    if clamped and clamped != "off":
        options["reasoningEffort"] = clamped
    if tool_choice is not None:
        options["toolChoice"] = tool_choice
    return options


# --- compatibility flags ---------------------------------------------------------------------


# Long on purpose: it follows pi-ai's detectCompat statement by statement, so that the two read
# side by side.
def detect_compat(model: Mapping[str, Any]) -> Json:
    """``detectCompat``: flags guessed from the provider name and base URL."""
    provider = model.get("provider", "")
    base_url = model.get("baseUrl", "")
    model_id = model.get("id", "")
    is_zai = (
        provider in ("zai", "zai-coding-cn")
        or "api.z.ai" in base_url
        or ("open.bigmodel.cn" in base_url)
    )
    is_together = (
        provider == "together" or "api.together.ai" in base_url or "api.together.xyz" in base_url
    )
    is_moonshot = provider in ("moonshotai", "moonshotai-cn") or "api.moonshot." in base_url
    is_openrouter = provider == "openrouter" or "openrouter.ai" in base_url
    is_cf_workers = provider == "cloudflare-workers-ai" or "api.cloudflare.com" in base_url
    is_cf_gateway = provider == "cloudflare-ai-gateway" or "gateway.ai.cloudflare.com" in base_url
    is_nvidia = provider == "nvidia" or "integrate.api.nvidia.com" in base_url
    is_ant_ling = provider == "ant-ling" or "api.ant-ling.com" in base_url
    is_non_standard = (
        is_nvidia
        or provider == "cerebras"
        or "cerebras.ai" in base_url
        or provider == "xai"
        or "api.x.ai" in base_url
        or is_together
        or "chutes.ai" in base_url
        or "deepseek.com" in base_url
        or is_zai
        or is_moonshot
        or provider == "opencode"
        or "opencode.ai" in base_url
        or is_cf_workers
        or is_cf_gateway
        or is_ant_ling
    )
    use_max_tokens = (
        "chutes.ai" in base_url
        or is_moonshot
        or is_cf_gateway
        or is_together
        or is_nvidia
        or is_ant_ling
    )
    is_grok = provider == "xai" or "api.x.ai" in base_url
    is_deepseek = provider == "deepseek" or "deepseek.com" in base_url
    is_openrouter_developer = is_openrouter and (
        model_id.startswith("anthropic/") or model_id.startswith("openai/")
    )
    if is_deepseek:
        thinking_format = "deepseek"
    elif is_zai:
        thinking_format = "zai"
    elif is_together:
        thinking_format = "together"
    elif is_ant_ling:
        thinking_format = "ant-ling"
    elif is_openrouter:
        thinking_format = "openrouter"
    else:
        thinking_format = "openai"
    return {
        "supportsStore": not is_non_standard,
        "supportsDeveloperRole": is_openrouter_developer
        or (not is_non_standard and not is_openrouter),
        "supportsReasoningEffort": not (
            is_grok or is_zai or is_moonshot or is_together or is_cf_gateway or is_nvidia
        )
        and not is_ant_ling,
        "supportsUsageInStreaming": True,
        "maxTokensField": "max_tokens" if use_max_tokens else "max_completion_tokens",
        "requiresToolResultName": False,
        "requiresAssistantAfterToolResult": False,
        "requiresThinkingAsText": False,
        "requiresReasoningContentOnAssistantMessages": is_deepseek,
        "thinkingFormat": thinking_format,
        "openRouterRouting": {},
        "vercelGatewayRouting": {},
        "chatTemplateKwargs": {},
        "zaiToolStream": False,
        "supportsStrictMode": not (is_moonshot or is_together or is_cf_gateway or is_nvidia),
        "cacheControlFormat": (
            "anthropic" if provider == "openrouter" and model_id.startswith("anthropic/") else None
        ),
        "sendSessionAffinityHeaders": False,
        "supportsLongCacheRetention": not (
            is_together or is_cf_workers or is_cf_gateway or is_nvidia or is_ant_ling
        ),
    }


def get_compat(model: Mapping[str, Any]) -> Json:
    """``getCompat``: detected flags overridden by the model's explicit ``compat`` (``??``)."""
    detected = detect_compat(model)
    explicit = model.get("compat")
    if not explicit:
        return detected
    merged = {}
    for key, value in detected.items():
        given = explicit.get(key)
        merged[key] = value if given is None else given
    # openRouterRouting falls back to {} rather than to the detected value.
    routing = explicit.get("openRouterRouting")
    merged["openRouterRouting"] = {} if routing is None else routing
    return merged


# --- messages --------------------------------------------------------------------------------


def normalize_tool_call_id(tool_call_id: str, model: Mapping[str, Any]) -> str:
    """The id normaliser convertMessages hands to ``transformMessages`` for this provider.

    Pipe-separated Responses-API ids keep their call id, sanitised and cut to 40 characters;
    provider ``openai`` cuts any id to 40. ``transformMessages`` only applies it to tool calls of
    assistant messages from a different model (and re-maps their results).
    """
    if "|" in tool_call_id:
        call_id = tool_call_id.split("|")[0]
        return js_slice(sanitize_tool_call_id(call_id), 0, 40)
    if model.get("provider") == "openai":
        return js_slice(tool_call_id, 0, 40)
    return tool_call_id


def image_url(block: Mapping[str, Any]) -> Json:
    """An image block as a chat-completions ``image_url`` part (a data URL)."""
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{block.get('mimeType')};base64,{block.get('data')}"},
    }


def _thought_signature_details(tool_calls: Sequence[Mapping[str, Any]]) -> list[Any]:
    details = []
    for call in tool_calls:
        signature = call.get("thoughtSignature")
        if not signature:
            continue
        try:
            parsed = json_parse(signature)
        except ValueError:
            continue
        # `.filter(Boolean)` after JSON.parse: null, false, 0 and "" are dropped.
        if parsed is None or parsed is False or parsed == 0 or parsed == "":
            continue
        details.append(parsed)
    return details


def _convert_tool_call(call: Mapping[str, Any]) -> Json:
    function: Json = {"name": call["name"]}
    # JSON.stringify(undefined) is undefined, so a call without arguments loses the key.
    if "arguments" in call:
        function["arguments"] = json_stringify(call["arguments"])
    return {"id": call["id"], "type": "function", "function": function}


def _convert_assistant(
    msg: Mapping[str, Any], model: Mapping[str, Any], compat: Mapping[str, Any]
) -> Json | None:
    assistant: Json = {
        "role": "assistant",
        "content": "" if compat["requiresAssistantAfterToolResult"] else None,
    }
    content = msg.get("content") or []
    text_parts = [
        {"type": "text", "text": sanitize_surrogates(block["text"])}
        for block in content
        if block.get("type") == "text" and len(js_trim(block.get("text", ""))) > 0
    ]
    assistant_text = "".join(part["text"] for part in text_parts)
    thinking_blocks = [
        block
        for block in content
        if block.get("type") == "thinking" and len(js_trim(block.get("thinking", ""))) > 0
    ]
    if thinking_blocks:
        if compat["requiresThinkingAsText"]:
            thinking_text = "\n\n".join(sanitize_surrogates(b["thinking"]) for b in thinking_blocks)
            assistant["content"] = [{"type": "text", "text": thinking_text}, *text_parts]
        else:
            if assistant_text:
                assistant["content"] = assistant_text
            signature = thinking_blocks[0].get("thinkingSignature")
            if model.get("provider") == "opencode-go" and signature == "reasoning":
                signature = "reasoning_content"
            if signature:
                assistant[signature] = "\n".join(b["thinking"] for b in thinking_blocks)
    elif assistant_text:
        assistant["content"] = assistant_text
    tool_calls = [block for block in content if block.get("type") == "toolCall"]
    if tool_calls:
        assistant["tool_calls"] = [_convert_tool_call(call) for call in tool_calls]
        details = _thought_signature_details(tool_calls)
        if details:
            assistant["reasoning_details"] = details
    if (
        compat["requiresReasoningContentOnAssistantMessages"]
        and model.get("reasoning")
        and "reasoning_content" not in assistant
    ):
        assistant["reasoning_content"] = ""
    body = assistant["content"]
    has_content = body is not None and len(body) > 0
    if not has_content and "tool_calls" not in assistant:
        # Providers reject assistant messages with neither content nor tool calls.
        return None
    return assistant


# Long on purpose: it follows pi-ai's convertMessages statement by statement, so that the two
# read side by side.
def convert_messages(
    model: Mapping[str, Any],
    context: Mapping[str, Any],
    compat: Mapping[str, Any] | None = None,
) -> list[Json]:
    """``convertMessages`` applied to messages that already went through ``transformMessages``."""
    compat = compat if compat is not None else get_compat(model)
    params: list[Json] = []
    system_prompt = context.get("systemPrompt")
    if system_prompt:
        developer = bool(model.get("reasoning")) and compat["supportsDeveloperRole"]
        system_role = "developer" if developer else "system"
        params.append({"role": system_role, "content": sanitize_surrogates(system_prompt)})
    messages: Sequence[Mapping[str, Any]] = context.get("messages") or []
    accepts_images = "image" in (model.get("input") or [])
    last_role: str | None = None
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if (
            compat["requiresAssistantAfterToolResult"]
            and last_role == "toolResult"
            and role == "user"
        ):
            params.append({"role": "assistant", "content": "I have processed the tool results."})
        if role == "user":
            content = msg.get("content")
            if isinstance(content, str):
                params.append({"role": "user", "content": sanitize_surrogates(content)})
            else:
                parts = [
                    {"type": "text", "text": sanitize_surrogates(item["text"])}
                    if item.get("type") == "text"
                    else image_url(item)
                    for item in content or []
                ]
                if not parts:
                    i += 1
                    continue
                params.append({"role": "user", "content": parts})
        elif role == "assistant":
            converted = _convert_assistant(msg, model, compat)
            if converted is None:
                i += 1
                continue
            params.append(converted)
        elif role == "toolResult":
            image_blocks: list[Json] = []
            j = i
            while j < len(messages) and messages[j].get("role") == "toolResult":
                tool_msg = messages[j]
                blocks = tool_msg.get("content") or []
                text = "\n".join(b["text"] for b in blocks if b.get("type") == "text")
                has_images = any(b.get("type") == "image" for b in blocks)
                result: Json = {
                    "role": "tool",
                    "content": sanitize_surrogates(text if text else "(see attached image)"),
                }
                if "toolCallId" in tool_msg:  # JSON.stringify drops an undefined one
                    result["tool_call_id"] = tool_msg["toolCallId"]
                if compat["requiresToolResultName"] and tool_msg.get("toolName"):
                    result["name"] = tool_msg["toolName"]
                params.append(result)
                if has_images and accepts_images:
                    image_blocks.extend(image_url(b) for b in blocks if b.get("type") == "image")
                j += 1
            i = j
            if image_blocks:
                if compat["requiresAssistantAfterToolResult"]:
                    params.append(
                        {"role": "assistant", "content": "I have processed the tool results."}
                    )
                params.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "Attached image(s) from tool result:"},
                            *image_blocks,
                        ],
                    }
                )
                last_role = "user"
            else:
                last_role = "toolResult"
            continue
        last_role = role
        i += 1
    return params


def convert_tools(tools: Sequence[Mapping[str, Any]], compat: Mapping[str, Any]) -> list[Json]:
    converted = []
    for tool in tools:
        function: Json = {
            "name": tool["name"],
            "description": tool.get("description"),
            "parameters": tool.get("parameters"),
        }
        if compat.get("supportsStrictMode") is not False:
            function["strict"] = False
        converted.append({"type": "function", "function": function})
    return converted


def _has_tool_history(messages: Sequence[Mapping[str, Any]]) -> bool:
    for msg in messages:
        if msg.get("role") == "toolResult":
            return True
        if msg.get("role") == "assistant" and any(
            block.get("type") == "toolCall" for block in msg.get("content") or []
        ):
            return True
    return False


# --- Anthropic-style cache control (OpenRouter anthropic/* models) ---------------------------


def _add_cache_control_to_text(message: Json, cache_control: Json) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": cache_control}]
        return True
    if not isinstance(content, list):
        return False
    for part in reversed(content):
        if isinstance(part, dict) and part.get("type") == "text":
            part["cache_control"] = cache_control
            return True
    return False


def _apply_anthropic_cache_control(
    messages: list[Json], tools: list[Json] | None, cache_control: Json
) -> None:
    for message in messages:
        if message["role"] in ("system", "developer"):
            _add_cache_control_to_text(message, cache_control)
            break
    if tools:
        tools[-1]["cache_control"] = cache_control
    for message in reversed(messages):
        if message["role"] in ("user", "assistant") and _add_cache_control_to_text(
            message, cache_control
        ):
            return


# --- the request ----------------------------------------------------------------------------


def _clamp_prompt_cache_key(key: str | None) -> str | None:
    if key is None:
        return None
    chars = list(key)
    if len(chars) <= OPENAI_PROMPT_CACHE_KEY_MAX_LENGTH:
        return key
    return "".join(chars[:OPENAI_PROMPT_CACHE_KEY_MAX_LENGTH])


def _chat_template_kwargs(model: Mapping[str, Any], effort: str | None, compat: Json) -> Json:
    kwargs: Json = {}
    level_map = model.get("thinkingLevelMap") or {}
    for key, value in (compat.get("chatTemplateKwargs") or {}).items():
        if not isinstance(value, dict | list):
            kwargs[key] = value
            continue
        spec = value if isinstance(value, dict) else {}
        if not effort and js_truthy(spec.get("omitWhenOff")):
            continue
        if spec.get("$var") == "thinking.enabled":
            kwargs[key] = bool(effort)
            continue
        mapped = level_map.get(effort, _UNDEFINED) if effort else level_map.get("off", _UNDEFINED)
        if mapped is _UNDEFINED:
            resolved: Any = effort
        else:
            resolved = mapped if isinstance(mapped, str) else None
        if resolved is not None:
            kwargs[key] = resolved
    return kwargs


def _mapped(model: Mapping[str, Any], level: str) -> Any:
    """``model.thinkingLevelMap?.[level] ?? level``."""
    value = (model.get("thinkingLevelMap") or {}).get(level)
    return level if value is None else value


def _apply_thinking(
    params: Json, model: Mapping[str, Any], effort: str | None, compat: Json
) -> None:
    reasoning = bool(model.get("reasoning"))
    fmt = compat.get("thinkingFormat")
    level_map = model.get("thinkingLevelMap") or {}
    off = level_map.get("off", _UNDEFINED)
    if fmt == "zai" and reasoning:
        params["thinking"] = {"type": "enabled" if effort else "disabled"}
        if effort and compat["supportsReasoningEffort"]:
            mapped = level_map.get(effort, _UNDEFINED)
            value = effort if mapped is _UNDEFINED else mapped
            if isinstance(value, str):
                params["reasoning_effort"] = value
    elif fmt == "qwen" and reasoning:
        params["enable_thinking"] = bool(effort)
    elif fmt == "qwen-chat-template" and reasoning:
        params["chat_template_kwargs"] = {
            "enable_thinking": bool(effort),
            "preserve_thinking": True,
        }
    elif fmt == "chat-template" and reasoning:
        kwargs = _chat_template_kwargs(model, effort, compat)
        if kwargs:
            params["chat_template_kwargs"] = kwargs
    elif fmt == "deepseek" and reasoning:
        if effort:
            params["thinking"] = {"type": "enabled"}
        elif off is not None:
            params["thinking"] = {"type": "disabled"}
        if effort and compat["supportsReasoningEffort"]:
            params["reasoning_effort"] = _mapped(model, effort)
    elif fmt == "openrouter" and reasoning:
        if effort:
            params["reasoning"] = {"effort": _mapped(model, effort)}
        elif off is not None:
            params["reasoning"] = {"effort": "none" if off is _UNDEFINED else off}
    elif fmt == "ant-ling" and reasoning and effort:
        value = level_map.get(effort)
        if isinstance(value, str):
            params["reasoning"] = {"effort": value}
    elif fmt == "together" and reasoning:
        params["reasoning"] = {"enabled": bool(effort)}
        if effort and compat["supportsReasoningEffort"]:
            params["reasoning_effort"] = _mapped(model, effort)
    elif fmt == "string-thinking" and reasoning:
        if effort:
            params["thinking"] = _mapped(model, effort)
        elif off is not None:
            params["thinking"] = "none" if off is _UNDEFINED else off
    elif effort and reasoning and compat["supportsReasoningEffort"]:
        params["reasoning_effort"] = _mapped(model, effort)
    elif not effort and reasoning and compat["supportsReasoningEffort"] and isinstance(off, str):
        params["reasoning_effort"] = off


def build_params(
    model: Mapping[str, Any],
    context: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
    *,
    raw_messages: Sequence[Mapping[str, Any]] | None = None,
) -> Json:
    """``buildParams``: the chat-completions request as a dict in pi-ai's key order.

    ``options`` are ``stream`` options (see ``simple_options``). ``raw_messages`` are the messages
    before ``transformMessages``; pi-ai checks them (not the transformed ones) for tool history when
    no tools are given, which only differs when a dropped error message held the only tool call.
    """
    options = options or {}
    compat = get_compat(model)
    cache_retention = options.get("cacheRetention") or "short"
    messages = convert_messages(model, context, compat)
    params: Json = {"model": model["id"], "messages": messages, "stream": True}
    long_cache = cache_retention == "long" and compat["supportsLongCacheRetention"]
    if ("api.openai.com" in model.get("baseUrl", "") and cache_retention != "none") or long_cache:
        key = _clamp_prompt_cache_key(options.get("sessionId"))
        if key is not None:
            params["prompt_cache_key"] = key
    if long_cache:
        params["prompt_cache_retention"] = "24h"
    if compat["supportsUsageInStreaming"] is not False:
        params["stream_options"] = {"include_usage": True}
    if compat["supportsStore"]:
        params["store"] = False
    if options.get("maxTokens"):
        field = (
            "max_tokens" if compat["maxTokensField"] == "max_tokens" else "max_completion_tokens"
        )
        params[field] = options["maxTokens"]
    if options.get("temperature") is not None:
        params["temperature"] = options["temperature"]
    tools = context.get("tools")
    if tools:
        params["tools"] = convert_tools(tools, compat)
        if compat["zaiToolStream"]:
            params["tool_stream"] = True
    elif _has_tool_history(
        raw_messages if raw_messages is not None else context.get("messages") or []
    ):
        # Anthropic behind LiteLLM-style proxies demands `tools` once tool calls are in history.
        params["tools"] = []
    cache_format = compat.get("cacheControlFormat")
    if cache_format == "anthropic" and cache_retention != "none":
        cache_control: Json = {"type": "ephemeral"}
        if long_cache:
            cache_control["ttl"] = "1h"
        _apply_anthropic_cache_control(messages, params.get("tools"), cache_control)
    if js_truthy(options.get("toolChoice")):
        params["tool_choice"] = options["toolChoice"]
    _apply_thinking(params, model, options.get("reasoningEffort"), compat)
    explicit = model.get("compat") or {}
    if js_truthy(explicit.get("openRouterRouting")):
        params["provider"] = explicit["openRouterRouting"]
    routing: Any = explicit.get("vercelGatewayRouting")
    if js_truthy(routing) and (js_truthy(routing.get("only")) or js_truthy(routing.get("order"))):
        gateway: Json = {}
        if js_truthy(routing.get("only")):
            gateway["only"] = routing["only"]
        if js_truthy(routing.get("order")):
            gateway["order"] = routing["order"]
        params["providerOptions"] = {"gateway": gateway}
    return params


def build_request_body(
    model: Mapping[str, Any],
    context: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
    *,
    raw_messages: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """The HTTP body exactly as the ``openai`` npm SDK sends it (``JSON.stringify(params)``)."""
    return json_stringify(build_params(model, context, options, raw_messages=raw_messages))
