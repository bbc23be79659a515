"""pi-ai 1.6.0's ``openai-completions`` request: the chat-completions body Pi 1.x sends.

Ported from ``@earendil-works/pi-ai@1.6.0`` ``dist/api/openai-completions.js`` (``detectCompat``,
``getCompat``, ``convertMessages``, ``convertTools``, ``buildParams``), ``dist/utils/transcript.js``
(``resolveTranscript``, ``resolveTranscriptTools``) and ``dist/api/transform-messages.js``; MIT
licence, (c) Mario Zechner / Earendil Works.

What differs from 0.80.2 (``openai_completions.py``): the prompt and tools arrive as ``system``
messages (collapsed into one leading message unless the model takes mid-conversation system
messages); thinking of another model is dropped, not sent as text; an empty tool result is sent as
``(no tool output)``; every request carries ``max_completion_tokens`` (the caller passes pi-ai's
clamp, see ``contextlab.pi.dialects.pi_1_x.clamp_max_tokens``); the developer role is used only on
OpenAI's own API; ``strict`` is not sent unless the model's compat enables strict mode.

Earlier 1.x releases shaped the body differently (docs/pi-dialects.md; sampled 1.0.3, 1.3.0,
1.5.2): ``variant`` names the generation — "1.6" (default), "1.5" (developer role for every
standard OpenAI-compatible host), "1.3" (also: ``tools: []`` whenever the history has tool calls
and no tool is declared; a whitespace-only tool result sent as is), "1.0" (also: thinking of
another model sent as text).

Not ported (the request then differs and the caller should say so): grammar tools, strict
JSON-schema tools, Anthropic cache control through OpenRouter, chat-template and budget thinking
formats other than ``openai``/``openrouter``/``deepseek``/``qwen``/``zai``, Kimi-style in-place tool
declarations (``supportsMidConvoToolAdditions``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from contextlab.pi.context import replace_images
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_len, js_slice, js_trim, js_truthy, json_stringify
from contextlab.pi.providers import openai_completions as completions_0x
from contextlab.pi.providers.common import sanitize_surrogates

__all__ = [
    "EXTENDED_THINKING_LEVELS_1X",
    "VARIANTS",
    "build_params",
    "build_request_body",
    "clamp_thinking_level",
    "convert_messages",
    "current_system_message",
    "current_tools",
    "get_compat",
    "system_message_text",
    "transform_messages",
]

_UNDEFINED: Any = object()
EXTENDED_THINKING_LEVELS_1X = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
# Levels a model offers only when its thinkingLevelMap names them.
_OPT_IN = ("xhigh", "max")
NO_RESULT_TEXT = "No result provided"
NO_TOOL_OUTPUT = "(no tool output)"
SEE_ATTACHED_IMAGE = "(see attached image)"
NON_VISION_USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
NON_VISION_TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"
OPENAI_REASONING_FIELDS = ("reasoning", "reasoning_content", "reasoning_text")
# pi-ai generations of the 1.x line whose requests differ, oldest first (see the module doc).
VARIANTS = ("1.0", "1.3", "1.5", "1.6")


def before(variant: str, generation: str) -> bool:
    """Whether ``variant`` is older than ``generation`` (both in ``VARIANTS``)."""
    return VARIANTS.index(variant) < VARIANTS.index(generation)


# --- thinking levels (dist/models.js) ---------------------------------------------------------


def supported_thinking_levels(model: Mapping[str, Any]) -> list[str]:
    return completions_0x.supported_thinking_levels(model, EXTENDED_THINKING_LEVELS_1X, _OPT_IN)


def clamp_thinking_level(model: Mapping[str, Any], level: str) -> str:
    return completions_0x.clamp_thinking_level(model, level, EXTENDED_THINKING_LEVELS_1X, _OPT_IN)


# --- system messages (dist/utils/transcript.js, dist/utils/text.js) ---------------------------


def content_text(content: Any, separator: str = "\n") -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return separator.join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


def system_message_text(message: Mapping[str, Any]) -> str:
    """``getSystemMessageText``: content then every section, non-empty parts joined by a blank
    line."""
    parts = [content_text(message.get("content", ""))]
    for text in (message.get("sections") or {}).values():
        if text is not None:
            parts.append(text)
    return "\n\n".join(p for p in parts if js_len(p) > 0)


def render_system_message_update(message: Mapping[str, Any]) -> str:
    parts = []
    text = content_text(message.get("content", ""))
    if text:
        parts.append(text)
    for name, value in (message.get("sections") or {}).items():
        parts.append(
            f'Removed system prompt section "{name}".'
            if value is None
            else f'Updated system prompt section "{name}":\n\n{value}'
        )
    return "\n\n".join(parts)


def current_tools(messages: Sequence[Mapping[str, Any]]) -> list[Json]:
    """``getCurrentTools``: removals then additions of every system message, in order; a name
    keeps the position of its first declaration unless it was removed in between."""
    tools: dict[str, Json] = {}
    for message in messages:
        if message.get("role") != "system":
            continue
        for tool in message.get("toolsRemoved") or []:
            tools.pop(tool.get("name"), None)
        for tool in message.get("toolsAdded") or []:
            tools[tool.get("name")] = tool
    return list(tools.values())


def current_system_message(messages: Sequence[Mapping[str, Any]]) -> Json | None:
    """``getCurrentSystemMessage``: every system message replayed into one. Later ``content`` is
    appended to the base prompt, ``sections`` are patched by name (``null`` deletes; a new name
    goes to the end), tools resolved with ``current_tools``."""
    content: list[str] = []
    sections: dict[str, Any] = {}
    timestamp: Any = _UNDEFINED
    for message in messages:
        if message.get("role") != "system":
            continue
        if timestamp is _UNDEFINED or timestamp is None:
            timestamp = message.get("timestamp")
        text = content_text(message.get("content", ""))
        if text:
            content.append(text)
        for name, value in (message.get("sections") or {}).items():
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
    tools = current_tools(messages)
    if (timestamp is _UNDEFINED or timestamp is None) and not tools:
        return None
    out: Json = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        out["sections"] = sections
    if tools:
        out["toolsAdded"] = tools
    out["timestamp"] = 0 if timestamp is _UNDEFINED or timestamp is None else timestamp
    return out


def collapse_system_messages(messages: Sequence[Json]) -> list[Json]:
    head = current_system_message(messages)
    rest = [m for m in messages if m.get("role") != "system"]
    return [head, *rest] if head is not None else rest


def _last_non_additive_tool_change(system_messages: Sequence[Mapping[str, Any]]) -> int:
    declared: set[Any] = set()
    last = -1
    for index, message in enumerate(system_messages):
        if message.get("toolsRemoved"):
            last = index
        for tool in message.get("toolsAdded") or []:
            if tool.get("name") in declared:
                last = index
            declared.add(tool.get("name"))
    return last


def resolve_transcript_tools(messages: Sequence[Json], support: str) -> tuple[list[Json], int]:
    system_messages = [m for m in messages if m.get("role") == "system"]
    if support == "none":
        return current_tools(system_messages), len(system_messages)
    if support == "changes":
        return [], 0
    leading = 1 if messages and messages[0].get("role") == "system" else 0
    folded = max(leading, _last_non_additive_tool_change(system_messages) + 1)
    return current_tools(system_messages[:folded]), folded


# --- compatibility flags ----------------------------------------------------------------------


# Long on purpose: it follows pi-ai 1.x's detectCompat statement by statement (with the older
# generations' differences inline), so that the two read side by side.
def detect_compat(model: Mapping[str, Any], variant: str = "1.6") -> Json:
    provider = model.get("provider") or ""
    base_url = model.get("baseUrl") or ""
    is_zai = provider in ("zai", "zai-coding-cn") or any(
        h in base_url for h in ("api.z.ai", "open.bigmodel.cn")
    )
    is_together = provider == "together" or any(
        h in base_url for h in ("api.together.ai", "api.together.xyz")
    )
    is_moonshot = provider in ("moonshotai", "moonshotai-cn") or "api.moonshot." in base_url
    is_openrouter = provider == "openrouter" or "openrouter.ai" in base_url
    is_cf_workers = provider == "cloudflare-workers-ai" or "api.cloudflare.com" in base_url
    is_cf_gateway = provider == "cloudflare-ai-gateway" or "gateway.ai.cloudflare.com" in base_url
    is_nvidia = provider == "nvidia" or "integrate.api.nvidia.com" in base_url
    is_ant_ling = provider == "ant-ling" or "api.ant-ling.com" in base_url
    is_cerebras = provider == "cerebras" or "cerebras.ai" in base_url
    is_deepseek = provider == "deepseek" or "deepseek.com" in base_url.lower()
    is_grok = provider == "xai" or "api.x.ai" in base_url
    is_non_standard = (
        is_nvidia
        or is_cerebras
        or is_grok
        or is_together
        or "chutes.ai" in base_url
        or is_deepseek
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
        or is_deepseek
        or is_moonshot
        or is_cf_gateway
        or is_together
        or is_nvidia
        or is_ant_ling
        or is_zai
    )
    is_openai = provider == "openai" or "api.openai.com" in base_url
    model_id = model.get("id") or ""
    if before(variant, "1.6"):
        # pi-ai <= 1.5: the developer role for every standard host, and OpenRouter's Anthropic and
        # OpenAI models.
        developer = (
            is_openrouter and (model_id.startswith("anthropic/") or model_id.startswith("openai/"))
        ) or (not is_non_standard and not is_openrouter)
    else:
        developer = is_openai
    thinking_format = (
        "deepseek"
        if is_deepseek
        else "zai"
        if is_zai
        else "together"
        if is_together
        else "ant-ling"
        if is_ant_ling
        else "openrouter"
        if is_openrouter
        else "openai"
    )
    return {
        "supportsStore": not is_non_standard,
        "supportsDeveloperRole": developer,
        "supportsReasoningEffort": not (
            is_grok or is_zai or is_moonshot or is_together or is_cf_gateway or is_nvidia
        )
        and not is_ant_ling,
        "supportsUsageInStreaming": True,
        "maxTokensField": "max_tokens" if use_max_tokens else "max_completion_tokens",
        "requiresToolResultName": False,
        "requiresAssistantAfterToolResult": False,
        "requiresNonNullAssistantContent": False,
        "requiresToolsWithToolHistory": False,
        "requiresThinkingAsText": False,
        "requiresReasoningContentOnAssistantMessages": is_deepseek,
        "thinkingFormat": thinking_format,
        "zaiToolStream": False,
        "supportsStrictMode": False,
        "supportsMidConvoSystemMessages": False,
        "supportsMidConvoToolAdditions": False,
        "cacheControlFormat": (
            "anthropic" if provider == "openrouter" and model_id.startswith("anthropic/") else None
        ),
        "supportsLongCacheRetention": not (
            is_together or is_cf_workers or is_cf_gateway or is_nvidia or is_ant_ling
        ),
    }


def get_compat(model: Mapping[str, Any], variant: str = "1.6") -> Json:
    detected = detect_compat(model, variant)
    explicit = model.get("compat")
    if not isinstance(explicit, dict):
        return detected
    merged = dict(detected)
    for key in detected:
        if explicit.get(key) is not None:
            merged[key] = explicit[key]
    for key in ("promptCacheKeyMode", "openRouterRouting", "vercelGatewayRouting"):
        if key in explicit:
            merged[key] = explicit[key]
    return merged


# --- transformMessages (dist/api/transform-messages.js) ---------------------------------------


def normalize_tool_call_id(tool_call_id: str, model: Mapping[str, Any]) -> str:
    if "|" in tool_call_id:
        call_id, _, item_id = tool_call_id.partition("|")
        call_id = re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)
        item_id = re.sub(r"[^a-zA-Z0-9_-]", "_", item_id)
        combined = f"{call_id}_{item_id}" if item_id else call_id
        if js_len(combined) <= 40:
            return combined
        raise NotImplementedError("pi-ai's shortHash of long pipe-separated tool call ids")
    if model.get("provider") == "openai" and js_len(tool_call_id) > 40:
        return js_slice(tool_call_id, 0, 40)
    return tool_call_id


# Long on purpose: it follows pi-ai 1.x's transformMessages statement by statement (with the older
# generations' differences inline), so that the two read side by side.
def transform_messages(
    messages: Sequence[Json], model: Mapping[str, Any], variant: str = "1.6"
) -> list[Json]:
    id_map: dict[Any, str] = {}
    normalized = [{**m, "content": []} if m.get("content") is None else m for m in messages]
    if "image" not in (model.get("input") or []):
        downgraded = []
        for m in normalized:
            if m.get("role") == "user" and isinstance(m.get("content"), list):
                m = {
                    **m,
                    "content": replace_images(m["content"], NON_VISION_USER_IMAGE_PLACEHOLDER),
                }
            elif m.get("role") == "toolResult":
                m = {
                    **m,
                    "content": replace_images(m["content"], NON_VISION_TOOL_IMAGE_PLACEHOLDER),
                }
            downgraded.append(m)
        normalized = downgraded
    transformed: list[Json] = []
    for m in normalized:
        role = m.get("role")
        if role == "toolResult":
            new_id = id_map.get(m.get("toolCallId"))
            transformed.append(
                {**m, "toolCallId": new_id} if new_id and new_id != m.get("toolCallId") else m
            )
            continue
        if role != "assistant":
            transformed.append(m)
            continue
        same = (
            m.get("provider") == model.get("provider")
            and m.get("api") == model.get("api")
            and m.get("model") == model.get("id")
        )
        content: list[Any] = []
        for block in m.get("content") or []:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "thinking" and before(variant, "1.3"):
                # pi-ai 1.0: thinking of another model becomes text; redacted is dropped.
                if js_truthy(block.get("redacted")):
                    if same:
                        content.append(block)
                elif same and js_truthy(block.get("thinkingSignature")):
                    content.append(block)
                elif js_truthy(block.get("thinking")) and js_trim(block["thinking"]) != "":
                    content.append(block if same else {"type": "text", "text": block["thinking"]})
            elif kind == "thinking":
                if not same:
                    continue
                signed = js_truthy(block.get("redacted")) or js_truthy(
                    block.get("thinkingSignature")
                )
                text = block.get("thinking")
                if signed or (js_truthy(text) and js_trim(text) != ""):
                    content.append(block)
            elif kind == "text":
                content.append(block if same else {"type": "text", "text": block.get("text")})
            elif kind == "toolCall":
                call = block
                if not same and "thoughtSignature" in call and js_truthy(call["thoughtSignature"]):
                    call = {k: v for k, v in call.items() if k != "thoughtSignature"}
                if not same:
                    new_id = normalize_tool_call_id(call.get("id", ""), model)
                    if new_id != call.get("id"):
                        id_map[call.get("id")] = new_id
                        call = {**call, "id": new_id}
                content.append(call)
            else:
                content.append(block)
        transformed.append({**m, "content": content})

    result: list[Json] = []
    pending: list[Json] = []
    existing: set[Any] = set()
    held: list[Json] = []

    def close() -> None:
        nonlocal pending, existing
        if pending:
            for call in pending:
                if call.get("id") not in existing:
                    # Pi stamps Date.now(); the timestamp never reaches the request body.
                    result.append(
                        {
                            "role": "toolResult",
                            "toolCallId": call.get("id"),
                            "toolName": call.get("name"),
                            "content": [{"type": "text", "text": NO_RESULT_TEXT}],
                            "isError": True,
                            "timestamp": 0,
                        }
                    )
            pending = []
            existing = set()
        result.extend(held)
        held.clear()

    for m in transformed:
        role = m.get("role")
        if role == "assistant":
            close()
            if m.get("stopReason") in ("error", "aborted"):
                continue
            calls = [b for b in m["content"] if isinstance(b, dict) and b.get("type") == "toolCall"]
            if calls:
                pending = calls
                existing = set()
            result.append(m)
        elif role == "toolResult":
            existing.add(m.get("toolCallId"))
            result.append(m)
        elif role == "system":
            (held if pending else result).append(m)
        elif role == "user":
            close()
            result.append(m)
        else:
            result.append(m)
    close()
    return result


# --- convertMessages / convertTools / buildParams ---------------------------------------------


def convert_tools(tools: Sequence[Mapping[str, Any]], compat: Mapping[str, Any]) -> list[Json]:
    out = []
    for tool in tools:
        function: Json = {
            "name": tool.get("name"),
            "description": tool.get("description"),
            "parameters": tool.get("parameters"),
        }
        if compat.get("supportsStrictMode") is not False:
            function["strict"] = False
        out.append({"type": "function", "function": function})
    return out


def _convert_assistant(
    message: Json, model: Mapping[str, Any], compat: Mapping[str, Any]
) -> Json | None:
    content_value: Any = (
        ""
        if compat["requiresAssistantAfterToolResult"] or compat["requiresNonNullAssistantContent"]
        else None
    )
    out: Json = {"role": "assistant", "content": content_value}
    blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
    text_parts = [
        sanitize_surrogates(b.get("text", ""))
        for b in blocks
        if b.get("type") == "text" and js_len(js_trim(b.get("text", ""))) > 0
    ]
    text = "".join(text_parts)
    thinking = [b for b in blocks if b.get("type") == "thinking"]
    calls = [b for b in blocks if b.get("type") == "toolCall"]
    non_empty = [b for b in thinking if js_len(js_trim(b.get("thinking") or "")) > 0]
    if any(_reasoning_details(b.get("thinkingSignature")) for b in thinking):
        raise NotImplementedError("OpenAI reasoning_details replay")
    if non_empty:
        if compat["requiresThinkingAsText"]:
            joined = "\n\n".join(sanitize_surrogates(b["thinking"]) for b in non_empty)
            out["content"] = [{"type": "text", "text": joined}] + [
                {"type": "text", "text": t} for t in text_parts
            ]
        else:
            if text:
                out["content"] = text
            signature = non_empty[0].get("thinkingSignature")
            if model.get("provider") == "opencode-go" and signature == "reasoning":
                signature = "reasoning_content"
            if js_truthy(signature) and signature in OPENAI_REASONING_FIELDS:
                out[signature] = "\n".join(b["thinking"] for b in non_empty)
    elif text:
        out["content"] = text
    if calls:
        out["tool_calls"] = [
            {
                "id": c.get("id"),
                "type": "function",
                "function": {
                    "name": c.get("name"),
                    "arguments": json_stringify(c.get("arguments")),
                },
            }
            for c in calls
        ]
    if (
        compat["requiresReasoningContentOnAssistantMessages"]
        and model.get("reasoning")
        and "reasoning_content" not in out
    ):
        out["reasoning_content"] = ""
    content = out["content"]
    has_content = content is not None and len(content) > 0
    if not has_content and "tool_calls" not in out:
        return None
    return out


def _reasoning_details(signature: Any) -> bool:
    """Whether a thinking signature holds OpenAI ``reasoning_details`` (not ported)."""
    return isinstance(signature, str) and signature.startswith("[") and '"type"' in signature


# Long on purpose: it follows pi-ai 1.x's convertMessages statement by statement (with the older
# generations' differences inline), so that the two read side by side.
def convert_messages(
    model: Mapping[str, Any],
    messages: Sequence[Json],
    compat: Mapping[str, Any],
    variant: str = "1.6",
) -> list[Json]:
    mid_convo = compat.get("supportsMidConvoSystemMessages") is True
    transcript = list(messages) if mid_convo else collapse_system_messages(messages)
    transformed = transform_messages(transcript, model, variant)
    support = (
        "additions" if mid_convo and compat.get("supportsMidConvoToolAdditions") is True else "none"
    )
    _, folded = resolve_transcript_tools(transcript, support)
    role = "developer" if model.get("reasoning") and compat["supportsDeveloperRole"] else "system"
    params: list[Json] = []
    last_role: str | None = None
    system_index = 0
    i = 0
    while i < len(transformed):
        msg = transformed[i]
        kind = msg.get("role")
        if (
            compat["requiresAssistantAfterToolResult"]
            and last_role == "toolResult"
            and kind == "user"
        ):
            params.append({"role": "assistant", "content": "I have processed the tool results."})
        if kind == "system":
            added = (msg.get("toolsAdded") or []) if system_index >= folded else []
            system_index += 1
            if added:
                params.append({"role": "system", "tools": convert_tools(added, compat)})
            text = system_message_text(msg) if i == 0 else render_system_message_update(msg)
            if text:
                params.append({"role": role, "content": sanitize_surrogates(text)})
        elif kind == "user":
            content = msg.get("content")
            if isinstance(content, str):
                params.append({"role": "user", "content": sanitize_surrogates(content)})
            else:
                parts = []
                for item in content or []:
                    if item.get("type") == "text":
                        if js_len(item.get("text", "")) > 0:
                            parts.append(
                                {"type": "text", "text": sanitize_surrogates(item["text"])}
                            )
                    else:
                        parts.append(completions_0x.image_url(item))
                if not parts:
                    i += 1
                    continue
                params.append({"role": "user", "content": parts})
        elif kind == "assistant":
            converted = _convert_assistant(msg, model, compat)
            if converted is None:
                i += 1
                continue
            params.append(converted)
        elif kind == "toolResult":
            images: list[Json] = []
            j = i
            while j < len(transformed) and transformed[j].get("role") == "toolResult":
                tool = transformed[j]
                blocks = [b for b in tool.get("content") or [] if isinstance(b, dict)]
                text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
                has_images = any(b.get("type") == "image" for b in blocks)
                shown = text if before(variant, "1.5") else js_trim(text)
                if js_len(shown) > 0:
                    result_text = text
                else:
                    result_text = SEE_ATTACHED_IMAGE if has_images else NO_TOOL_OUTPUT
                tool_msg: Json = {
                    "role": "tool",
                    "content": sanitize_surrogates(result_text),
                    "tool_call_id": tool.get("toolCallId"),
                }
                if compat["requiresToolResultName"] and js_truthy(tool.get("toolName")):
                    tool_msg["name"] = tool["toolName"]
                params.append(tool_msg)
                if has_images and "image" in (model.get("input") or []):
                    images.extend(
                        completions_0x.image_url(b) for b in blocks if b.get("type") == "image"
                    )
                j += 1
            i = j
            if images:
                if compat["requiresAssistantAfterToolResult"]:
                    params.append(
                        {"role": "assistant", "content": "I have processed the tool results."}
                    )
                params.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "Attached image(s) from tool result:"},
                            *images,
                        ],
                    }
                )
                last_role = "user"
            else:
                last_role = "toolResult"
            continue
        last_role = kind
        i += 1
    return params


def _clamp_prompt_cache_key(key: Any) -> Any:
    if not isinstance(key, str):
        return key
    return key if js_len(key) <= 64 else js_slice(key, 0, 64)


def _mapped_effort(model: Mapping[str, Any], effort: str) -> Any:
    level_map = model.get("thinkingLevelMap") or {}
    mapped = level_map.get(effort, _UNDEFINED)
    return effort if mapped is _UNDEFINED or mapped is None else mapped


def build_params(
    model: Mapping[str, Any],
    messages: Sequence[Json],
    *,
    max_tokens: int | None,
    reasoning_effort: str | None,
    session_id: str | None = None,
    cache_retention: str = "short",
    variant: str = "1.6",
) -> Json:
    """``buildParams`` in pi-ai's key order for a transcript (system messages in place)."""
    compat = get_compat(model, variant)
    mid_convo = compat.get("supportsMidConvoSystemMessages") is True
    transcript = list(messages) if mid_convo else collapse_system_messages(messages)
    support = (
        "additions" if mid_convo and compat.get("supportsMidConvoToolAdditions") is True else "none"
    )
    request_tools, _ = resolve_transcript_tools(transcript, support)
    params: Json = {
        "model": model.get("id"),
        "messages": convert_messages(model, messages, compat, variant),
        "stream": True,
    }
    key_mode = compat.get("promptCacheKeyMode") or "auto"
    long_cache = cache_retention == "long" and compat["supportsLongCacheRetention"]
    supports_key = key_mode == "enabled" or (
        key_mode == "auto" and ("api.openai.com" in (model.get("baseUrl") or "") or long_cache)
    )
    if cache_retention != "none" and supports_key and session_id is not None:
        params["prompt_cache_key"] = _clamp_prompt_cache_key(session_id)
    if long_cache:
        params["prompt_cache_retention"] = "24h"
    if compat["supportsUsageInStreaming"] is not False:
        params["stream_options"] = {"include_usage": True}
    if compat["supportsStore"]:
        params["store"] = False
    if max_tokens:
        params[compat["maxTokensField"]] = max_tokens
    if request_tools:
        params["tools"] = convert_tools(request_tools, compat)
        if compat["zaiToolStream"]:
            params["tool_stream"] = True
    elif (compat["requiresToolsWithToolHistory"] or before(variant, "1.5")) and any(
        m.get("role") == "toolResult"
        or (
            m.get("role") == "assistant"
            and any(
                isinstance(b, dict) and b.get("type") == "toolCall" for b in m.get("content") or []
            )
        )
        for m in messages
    ):
        params["tools"] = []
    if compat.get("cacheControlFormat") == "anthropic":
        raise NotImplementedError("Anthropic cache control through OpenRouter")
    _apply_thinking(params, model, reasoning_effort, compat)
    explicit = model.get("compat") or {}
    if js_truthy(explicit.get("openRouterRouting")):
        params["provider"] = explicit["openRouterRouting"]
    samples = _sampling_params(model, reasoning_effort or "off")
    if samples:
        params.update(samples)
    return params


def _sampling_params(model: Mapping[str, Any], level: str) -> Json | None:
    base = model.get("samplingParams")
    by_level = (model.get("samplingParamsByThinkingLevel") or {}).get(
        clamp_thinking_level(model, level)
    )
    if not base and not by_level:
        return None
    return {**(base or {}), **(by_level or {})}


def _apply_thinking(
    params: Json, model: Mapping[str, Any], effort: str | None, compat: Mapping[str, Any]
) -> None:
    if not model.get("reasoning"):
        return
    fmt = compat["thinkingFormat"]
    level_map = model.get("thinkingLevelMap") or {}
    off = level_map.get("off", _UNDEFINED)
    if fmt == "zai":
        params["thinking"] = (
            {"type": "enabled", "clear_thinking": False} if effort else {"type": "disabled"}
        )
        if effort and compat["supportsReasoningEffort"]:
            mapped = level_map.get(effort, _UNDEFINED)
            value = effort if mapped is _UNDEFINED else mapped
            if isinstance(value, str):
                params["reasoning_effort"] = value
    elif fmt == "deepseek":
        if effort:
            params["thinking"] = {"type": "enabled"}
        elif off is not None:
            params["thinking"] = {"type": "disabled"}
        if effort and compat["supportsReasoningEffort"]:
            params["reasoning_effort"] = _mapped_effort(model, effort)
    elif fmt == "openrouter":
        if effort:
            params["reasoning"] = {"effort": _mapped_effort(model, effort)}
        elif off is not None:
            params["reasoning"] = {"effort": "none" if off is _UNDEFINED else off}
    elif fmt == "together":
        params["reasoning"] = {"enabled": bool(effort)}
        if effort and compat["supportsReasoningEffort"]:
            params["reasoning_effort"] = _mapped_effort(model, effort)
    elif fmt == "openai":
        if effort and compat["supportsReasoningEffort"]:
            params["reasoning_effort"] = _mapped_effort(model, effort)
        elif not effort and compat["supportsReasoningEffort"] and isinstance(off, str):
            params["reasoning_effort"] = off
    else:
        raise NotImplementedError(f"thinking format {fmt!r}")


def build_request_body(
    model: Mapping[str, Any],
    messages: Sequence[Json],
    *,
    max_tokens: int | None,
    reasoning_effort: str | None,
    session_id: str | None = None,
    variant: str = "1.6",
) -> str:
    """The HTTP body as the ``openai`` npm SDK sends it (``JSON.stringify(params)``)."""
    return json_stringify(
        build_params(
            model,
            messages,
            max_tokens=max_tokens,
            reasoning_effort=reasoning_effort,
            session_id=session_id,
            variant=variant,
        )
    )
