"""The body Pi sends to an OpenAI-compatible chat-completions API, for every pi-ai generation.

A pure port of pi-ai's ``dist/api/openai-completions.js`` (``streamSimple`` → ``stream`` →
``buildParams`` / ``convertMessages`` / ``convertTools``, ``detectCompat`` / ``getCompat``) and of
``clampThinkingLevel`` (``dist/models.js``), as of 0.80.2 and 1.6.0, with what differs between
releases keyed by ``pi_ai`` (a ``contextlab.pi.providers.pi_ai.PiAi``; None: 0.80.2's rules).
The result is the request body key for key, in pi-ai's key order; ``build_request_body``
serialises it as the ``openai`` npm SDK does (``JSON.stringify``), so it can be compared byte for
byte with what Pi sent. MIT licence, (c) Mario Zechner / Earendil Works.

Model, context and options are plain dicts shaped as pi-ai's:
``model = {"id", "provider", "api", "baseUrl", "reasoning", "input", "compat"?,
"thinkingLevelMap"?}``; ``options`` are ``stream``'s (``simple_options``). The context differs
with the generation, as pi-ai's did:

- before the transcript API (up to 0.86), ``{"systemPrompt"?, "messages", "tools"?}`` where
  ``messages`` are the LLM messages **after** ``transformMessages`` (contextlab.pi.context's
  ``sent``) and ``tools`` are ``{"name", "description", "parameters"}``;
- with it (0.87 on, ``pi_ai.transcript``), ``{"messages"}``: the prompt and tools are the
  transcript's ``system`` messages, collapsed into one leading message unless the model takes
  mid-conversation system messages, and the port applies pi-ai's ``transformMessages`` itself
  (``transcript.transform_messages``).

The module reads no environment: ``PI_CACHE_RETENTION=long`` corresponds to
``cacheRetention="long"`` in the options.

Not ported (the request then differs; with a transcript generation the port raises
``NotImplementedError``): grammar tools, thinking token budget fields,
``vllmPriority``, Kimi-style deferred tool declarations, thinking formats other than ``openai``,
``openrouter``, ``deepseek``, ``together`` and ``zai`` after 0.86.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_len, js_slice, js_trim, js_truthy, json_parse, json_stringify
from contextlab.pi.providers.common import sanitize_surrogates, sanitize_tool_call_id, short_hash
from contextlab.pi.providers.constrained_sampling import (
    json_schema_tool_parameters,
    resolve_json_schema_strict_sampling,
)
from contextlab.pi.providers.openai_thinking import apply_thinking, sampling_params
from contextlab.pi.providers.options import clamp_thinking_level, supported_thinking_levels
from contextlab.pi.providers.pi_ai import PiAi, resolve
from contextlab.pi.providers.transcript import (
    collapse_system_messages,
    has_tool_history,
    render_system_message_update,
    resolve_transcript_tools,
    system_message_text,
    transform_messages,
)

__all__ = [
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


OPENAI_PROMPT_CACHE_KEY_MAX_LENGTH = 64
OPENAI_REASONING_FIELDS = ("reasoning", "reasoning_content", "reasoning_text")
NO_TOOL_OUTPUT = "(no tool output)"
SEE_ATTACHED_IMAGE = "(see attached image)"
_BRIDGE = {"role": "assistant", "content": "I have processed the tool results."}

_UNDEFINED = object()


def simple_options(
    model: Mapping[str, Any],
    *,
    reasoning: str | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    tool_choice: Any = None,
    session_id: str | None = None,
    cache_retention: str | None = None,
    pi_ai: PiAi | str | None = None,
) -> Json:
    """The options ``streamSimple`` hands to ``stream``: the thinking level becomes an effort.

    The coding agent passes ``reasoning`` = the session thinking level (``None`` when ``off``) and
    no ``max_tokens`` for agent turns (pi-ai then adds its own, ``options``); 0.x compaction
    passes ``max_tokens`` and ``reasoning``; 0.x branch summaries ``max_tokens=2048`` only.
    """
    clamped = clamp_thinking_level(model, reasoning, pi_ai) if reasoning else None
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


def _developer_role(
    pi_ai: PiAi, model: Mapping[str, Any], standard: bool, openrouter: bool
) -> bool:
    """``detectCompat``'s ``supportsDeveloperRole`` for the generation (``PiAi.developer_role``)."""
    if pi_ai.developer_role == "openai":
        return model.get("provider") == "openai" or "api.openai.com" in (model.get("baseUrl") or "")
    if pi_ai.developer_role == "standard":
        return standard
    model_id = model.get("id") or ""
    openrouter_model = model_id.startswith("anthropic/") or model_id.startswith("openai/")
    return (openrouter and openrouter_model) or (standard and not openrouter)


# Long on purpose: it follows pi-ai's detectCompat statement by statement, so that the two read
# side by side.
def detect_compat(model: Mapping[str, Any], pi_ai: PiAi | str | None = None) -> Json:
    """``detectCompat``: flags guessed from the provider name and base URL (the host lists are
    0.80.2's and 1.6.0's; the releases in between differ only where ``PiAi`` says)."""
    generation = resolve(pi_ai)
    provider = model.get("provider") or ""
    base_url = model.get("baseUrl") or ""
    model_id = model.get("id") or ""
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
    deepseek_host = base_url.lower() if generation.deepseek_zai_max_tokens else base_url
    is_deepseek = provider == "deepseek" or "deepseek.com" in deepseek_host
    is_grok = provider == "xai" or "api.x.ai" in base_url
    is_cerebras = provider == "cerebras" or "cerebras.ai" in base_url
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
        or is_moonshot
        or is_cf_gateway
        or is_together
        or is_nvidia
        or is_ant_ling
        or (generation.deepseek_zai_max_tokens and (is_deepseek or is_zai))
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
    compat: Json = {
        "supportsStore": not is_non_standard,
        "supportsDeveloperRole": _developer_role(
            generation, model, not is_non_standard, is_openrouter
        ),
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
        "supportsStrictMode": generation.strict_mode_detected
        and not (is_moonshot or is_together or is_cf_gateway or is_nvidia)
        and not (generation.strict_mode_not_cerebras and is_cerebras),
        "cacheControlFormat": (
            "anthropic" if provider == "openrouter" and model_id.startswith("anthropic/") else None
        ),
        "sendSessionAffinityHeaders": False,
        "supportsLongCacheRetention": not (
            is_together or is_cf_workers or is_cf_gateway or is_nvidia or is_ant_ling
        ),
    }
    if generation.transcript:
        compat["supportsMidConvoSystemMessages"] = False
        compat["supportsMidConvoToolAdditions"] = False
    if generation.tools_with_tool_history == "compat":
        compat["requiresNonNullAssistantContent"] = False
        compat["requiresToolsWithToolHistory"] = False
    return compat


def get_compat(model: Mapping[str, Any], pi_ai: PiAi | str | None = None) -> Json:
    """``getCompat``: detected flags overridden by the model's explicit ``compat`` (``??``);
    the transcript generations also read ``promptCacheKeyMode``."""
    detected = detect_compat(model, pi_ai)
    explicit = model.get("compat")
    if not isinstance(explicit, dict) or not explicit:
        return detected
    merged = {}
    for key, value in detected.items():
        given = explicit.get(key)
        merged[key] = value if given is None else given
    # openRouterRouting falls back to {} rather than to the detected value.
    routing = explicit.get("openRouterRouting")
    merged["openRouterRouting"] = {} if routing is None else routing
    if resolve(pi_ai).transcript and "promptCacheKeyMode" in explicit:
        merged["promptCacheKeyMode"] = explicit["promptCacheKeyMode"]
    return merged


# --- messages --------------------------------------------------------------------------------


def normalize_tool_call_id(
    tool_call_id: str, model: Mapping[str, Any], pi_ai: PiAi | str | None = None
) -> str:
    """The id normaliser convertMessages hands to ``transformMessages`` for this provider.

    Pipe-separated Responses-API ids keep their call id, sanitised and cut to 40 characters
    (from 0.82 with their item id: ``call_item``, or the call id and a ``shortHash`` of the
    whole id when that is longer than 40); provider ``openai`` cuts any id to 40.
    ``transformMessages`` only applies it to tool calls of assistant messages from a different
    model (and re-maps their results).
    """
    if "|" in tool_call_id:
        call_id, _, item_id = tool_call_id.partition("|")
        call_id = sanitize_tool_call_id(call_id)
        if not resolve(pi_ai).combined_tool_call_ids:
            return js_slice(call_id, 0, 40)
        item_id = sanitize_tool_call_id(item_id)
        combined = f"{call_id}_{item_id}" if item_id else call_id
        if js_len(combined) <= 40:
            return combined
        hashed = js_slice(short_hash(tool_call_id), 0, 8)
        return f"{js_slice(call_id, 0, max(1, 40 - len(hashed) - 1))}_{hashed}"
    if model.get("provider") == "openai":
        return js_slice(tool_call_id, 0, 40)
    return tool_call_id


def image_url(block: Mapping[str, Any]) -> Json:
    """An image block as a chat-completions ``image_url`` part (a data URL)."""
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{block.get('mimeType')};base64,{block.get('data')}"},
    }


def _parsed(signature: Any) -> Any:
    if not signature or not isinstance(signature, str):
        return _UNDEFINED
    try:
        return json_parse(signature)
    except ValueError:
        return _UNDEFINED


def _is_reasoning_detail(detail: Any) -> bool:
    """``isOpenAIReasoningDetail`` (0.84 on)."""
    if not isinstance(detail, dict):
        return False
    if not (detail.get("id") is None or isinstance(detail.get("id"), str)) or not isinstance(
        detail.get("format", ""), str
    ):
        return False
    index = detail.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int | float):
        return False
    kind = detail.get("type")
    if kind == "reasoning.summary":
        return isinstance(detail.get("summary"), str)
    if kind == "reasoning.encrypted":
        return isinstance(detail.get("data"), str)
    if kind == "reasoning.text":
        signature = detail.get("signature")
        return isinstance(detail.get("text"), str) and (
            signature is None or isinstance(signature, str)
        )
    return False


def _reasoning_details(
    thinking: Sequence[Mapping[str, Any]], calls: Sequence[Mapping[str, Any]], pi_ai: PiAi
) -> list[Any] | None:
    """The ``reasoning_details`` an assistant message replays (None: none).

    Up to 0.82: every truthy parsed ``thoughtSignature`` of its tool calls. From 0.84: the first
    thinking signature that is a list of OpenAI reasoning details, else the tool calls' legacy
    encrypted details (``parseLegacyEncryptedReasoningDetail``)."""
    if pi_ai.reasoning_details == "tool-calls":
        # `.filter(Boolean)` after JSON.parse: null, false, 0 and "" are dropped.
        details = [
            parsed
            for parsed in (_parsed(call.get("thoughtSignature")) for call in calls)
            if parsed is not _UNDEFINED and parsed not in (None, False, 0, "")
        ]
        return details or None
    for block in thinking:
        parsed = _parsed(block.get("thinkingSignature"))
        if isinstance(parsed, list) and parsed and all(_is_reasoning_detail(d) for d in parsed):
            return parsed
    legacy = [
        parsed
        for parsed in (_parsed(call.get("thoughtSignature")) for call in calls)
        if _is_reasoning_detail(parsed)
        and parsed.get("type") == "reasoning.encrypted"
        and isinstance(parsed.get("id"), str)
        and parsed["id"]
        and parsed["data"]
    ]
    return legacy or None


def _convert_tool_call(call: Mapping[str, Any]) -> Json:
    function: Json = {"name": call["name"]}
    # JSON.stringify(undefined) is undefined, so a call without arguments loses the key.
    if "arguments" in call:
        function["arguments"] = json_stringify(call["arguments"])
    return {"id": call["id"], "type": "function", "function": function}


def _convert_assistant(
    msg: Mapping[str, Any], model: Mapping[str, Any], compat: Mapping[str, Any], pi_ai: PiAi
) -> Json | None:
    non_null = compat["requiresAssistantAfterToolResult"] or compat.get(
        "requiresNonNullAssistantContent"
    )
    assistant: Json = {"role": "assistant", "content": "" if non_null else None}
    content = [block for block in msg.get("content") or [] if isinstance(block, dict)]
    text_parts = [
        {"type": "text", "text": sanitize_surrogates(block["text"])}
        for block in content
        if block.get("type") == "text" and len(js_trim(block.get("text", ""))) > 0
    ]
    assistant_text = "".join(part["text"] for part in text_parts)
    thinking = [block for block in content if block.get("type") == "thinking"]
    tool_calls = [block for block in content if block.get("type") == "toolCall"]
    details = _reasoning_details(thinking, tool_calls, pi_ai)
    thinking_blocks = [b for b in thinking if len(js_trim(b.get("thinking") or "")) > 0]
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
            if pi_ai.reasoning_details == "validated" and (
                details is not None or signature not in OPENAI_REASONING_FIELDS
            ):
                signature = None  # 0.84 on: only a known reasoning field, and only without details
            if signature:
                assistant[signature] = "\n".join(b["thinking"] for b in thinking_blocks)
    elif assistant_text:
        assistant["content"] = assistant_text
    if tool_calls:
        assistant["tool_calls"] = [_convert_tool_call(call) for call in tool_calls]
    if details is not None and (tool_calls or pi_ai.reasoning_details == "validated"):
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


def _convert_user(msg: Mapping[str, Any], pi_ai: PiAi) -> Json | None:
    content = msg.get("content")
    if isinstance(content, str):
        return {"role": "user", "content": sanitize_surrogates(content)}
    parts = []
    for item in content or []:
        if item.get("type") != "text":
            parts.append(image_url(item))
        elif not pi_ai.drops_empty_user_text or js_len(item["text"]) > 0:
            parts.append({"type": "text", "text": sanitize_surrogates(item["text"])})
    return {"role": "user", "content": parts} if parts else None


def _tool_result_text(text: str, has_images: bool, pi_ai: PiAi) -> str:
    """What a tool result's message says (``PiAi.empty_tool_result``)."""
    shown = js_trim(text) if pi_ai.empty_tool_result == "blank" else text
    if shown:
        return text
    if has_images or pi_ai.empty_tool_result == "image-note":
        return SEE_ATTACHED_IMAGE
    return NO_TOOL_OUTPUT


def _convert_tool_results(
    messages: Sequence[Mapping[str, Any]],
    start: int,
    model: Mapping[str, Any],
    compat: Mapping[str, Any],
    pi_ai: PiAi,
    params: list[Json],
) -> tuple[int, str]:
    """A run of tool results from ``start``: one ``tool`` message each, then their images in a
    user message when the model reads images. Returns where the run ends and the role it
    leaves last."""
    image_blocks: list[Json] = []
    j = start
    while j < len(messages) and messages[j].get("role") == "toolResult":
        tool_msg = messages[j]
        blocks = [b for b in tool_msg.get("content") or [] if isinstance(b, dict)]
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text")
        has_images = any(b.get("type") == "image" for b in blocks)
        result: Json = {
            "role": "tool",
            "content": sanitize_surrogates(_tool_result_text(text, has_images, pi_ai)),
        }
        if "toolCallId" in tool_msg:  # JSON.stringify drops an undefined one
            result["tool_call_id"] = tool_msg["toolCallId"]
        if compat["requiresToolResultName"] and js_truthy(tool_msg.get("toolName")):
            result["name"] = tool_msg["toolName"]
        params.append(result)
        if has_images and "image" in (model.get("input") or []):
            image_blocks.extend(image_url(b) for b in blocks if b.get("type") == "image")
        j += 1
    if not image_blocks:
        return j, "toolResult"
    if compat["requiresAssistantAfterToolResult"]:
        params.append(dict(_BRIDGE))
    params.append(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                *image_blocks,
            ],
        }
    )
    return j, "user"


def _mid_convo(compat: Mapping[str, Any]) -> bool:
    return compat.get("supportsMidConvoSystemMessages") is True


def _tool_support(compat: Mapping[str, Any]) -> str:
    additions = _mid_convo(compat) and compat.get("supportsMidConvoToolAdditions") is True
    return "additions" if additions else "none"


def _transcript(context: Mapping[str, Any], compat: Mapping[str, Any]) -> list[Json]:
    """The transcript generations' ``resolveTranscript``: a ``systemPrompt`` as the leading
    system message (``normalizeContext``), and the system messages collapsed into it unless
    the model takes them mid-conversation."""
    messages: list[Json] = list(context.get("messages") or [])
    if context.get("systemPrompt"):
        messages.insert(0, {"role": "system", "content": context["systemPrompt"], "timestamp": 0})
    return messages if _mid_convo(compat) else collapse_system_messages(messages)


def _messages_to_convert(
    model: Mapping[str, Any], context: Mapping[str, Any], compat: Mapping[str, Any], pi_ai: PiAi
) -> tuple[list[Json], int]:
    """(the messages ``convertMessages`` walks, how many of their system messages are folded
    into the request's ``tools``)."""
    if not pi_ai.transcript:
        # 0.x: the system prompt as the one system message; the messages were transformed.
        prompt = context.get("systemPrompt")
        head = [{"role": "system", "content": prompt}] if prompt else []
        return [*head, *(context.get("messages") or [])], len(head)
    transcript = _transcript(context, compat)
    _, folded = resolve_transcript_tools(transcript, _tool_support(compat))
    transformed = transform_messages(
        transcript, model, pi_ai, lambda id_: normalize_tool_call_id(id_, model, pi_ai)
    )
    return transformed, folded


def convert_messages(
    model: Mapping[str, Any],
    context: Mapping[str, Any],
    compat: Mapping[str, Any] | None = None,
    pi_ai: PiAi | str | None = None,
) -> list[Json]:
    """``convertMessages``: the prompt as a system (or developer) message, then each message."""
    generation = resolve(pi_ai)
    compat = compat if compat is not None else get_compat(model, generation)
    messages, folded = _messages_to_convert(model, context, compat, generation)
    instruction_role = (
        "developer" if model.get("reasoning") and compat["supportsDeveloperRole"] else "system"
    )
    params: list[Json] = []
    last_role: str | None = None
    system_index = 0
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if (
            compat["requiresAssistantAfterToolResult"]
            and last_role == "toolResult"
            and role == "user"
        ):
            params.append(dict(_BRIDGE))
        converted: Json | None = None
        if role == "system":
            added = (msg.get("toolsAdded") or []) if system_index >= folded else []
            system_index += 1
            if added:
                params.append({"role": "system", "tools": convert_tools(added, compat)})
            text = system_message_text(msg) if i == 0 else render_system_message_update(msg)
            if text:
                converted = {"role": instruction_role, "content": sanitize_surrogates(text)}
        elif role == "user":
            converted = _convert_user(msg, generation)
        elif role == "assistant":
            converted = _convert_assistant(msg, model, compat, generation)
        elif role == "toolResult":
            i, last_role = _convert_tool_results(messages, i, model, compat, generation, params)
            continue
        if converted is not None:
            params.append(converted)
        if converted is not None or role not in ("user", "assistant"):
            # A user or assistant message that sends nothing leaves the last role as it was.
            last_role = role
        i += 1
    return params


def convert_tools(tools: Sequence[Mapping[str, Any]], compat: Mapping[str, Any]) -> list[Json]:
    """``convertTools``: a JSON-schema constrained tool is sent strict where the host supports
    strict tools (``providers.constrained_sampling``, 0.86 on); grammar tools are not ported."""
    converted = []
    supports_strict = compat.get("supportsStrictMode") is not False
    for tool in tools:
        sampling = tool.get("constrainedSampling")
        grammar = isinstance(sampling, dict) and sampling.get("type") == "grammar"
        if grammar and compat.get("supportsOpenAIGrammarTools"):
            raise NotImplementedError("pi-ai's grammar-constrained tools")
        strict = resolve_json_schema_strict_sampling(tool, supports_strict)
        function: Json = {
            "name": tool["name"],
            "description": tool.get("description"),
            "parameters": json_schema_tool_parameters(tool, strict),
        }
        if supports_strict:
            function["strict"] = bool(strict)
        converted.append({"type": "function", "function": function})
    return converted


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
    messages: list[Json], tools: list[Json] | None, cache_control: Json, pi_ai: PiAi
) -> None:
    for message in messages:
        if message["role"] in ("system", "developer"):
            _add_cache_control_to_text(message, cache_control)
            break
    if tools:
        tools[-1]["cache_control"] = cache_control
    # From 0.82 the marker may also go on a tool result.
    roles = ("user", "assistant", "tool") if pi_ai.combined_tool_call_ids else ("user", "assistant")
    for message in reversed(messages):
        if message["role"] in roles and _add_cache_control_to_text(message, cache_control):
            return


# --- the request ----------------------------------------------------------------------------


def _clamp_prompt_cache_key(key: str | None) -> str | None:
    """``clampOpenAIPromptCacheKey``: at most 64 code points (``Array.from``)."""
    if key is None:
        return None
    chars = list(key)
    if len(chars) <= OPENAI_PROMPT_CACHE_KEY_MAX_LENGTH:
        return key
    return "".join(chars[:OPENAI_PROMPT_CACHE_KEY_MAX_LENGTH])


# Long on purpose: it follows pi-ai's buildParams statement by statement, so that the two read
# side by side.
def build_params(
    model: Mapping[str, Any],
    context: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
    *,
    raw_messages: Sequence[Mapping[str, Any]] | None = None,
    pi_ai: PiAi | str | None = None,
) -> Json:
    """``buildParams``: the chat-completions request as a dict in pi-ai's key order.

    ``options`` are ``stream`` options (see ``simple_options``). ``raw_messages`` are the messages
    before ``transformMessages``; pi-ai checks them (not the transformed ones) for tool history when
    no tools are given, which only differs when a dropped error message held the only tool call.
    """
    generation = resolve(pi_ai)
    options = options or {}
    compat = get_compat(model, generation)
    cache_retention = options.get("cacheRetention") or "short"
    messages = convert_messages(model, context, compat, generation)
    params: Json = {"model": model["id"], "messages": messages, "stream": True}
    long_cache = cache_retention == "long" and compat["supportsLongCacheRetention"]
    key_mode = compat.get("promptCacheKeyMode") or "auto"
    supports_key = key_mode == "enabled" or (
        key_mode == "auto" and ("api.openai.com" in (model.get("baseUrl") or "") or long_cache)
    )
    if cache_retention != "none" and supports_key:
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
    tools: Any = context.get("tools")
    if generation.transcript:
        tools, _ = resolve_transcript_tools(_transcript(context, compat), _tool_support(compat))
    history = raw_messages if raw_messages is not None else context.get("messages") or []
    if tools:
        params["tools"] = convert_tools(tools, compat)
        if compat["zaiToolStream"]:
            params["tool_stream"] = True
    elif (
        generation.tools_with_tool_history == "always" or compat["requiresToolsWithToolHistory"]
    ) and has_tool_history(history):
        # Anthropic behind LiteLLM-style proxies demands `tools` once tool calls are in history.
        params["tools"] = []
    cache_format = compat.get("cacheControlFormat")
    if cache_format == "anthropic" and cache_retention != "none":
        cache_control: Json = {"type": "ephemeral"}
        if long_cache:
            cache_control["ttl"] = "1h"
        _apply_anthropic_cache_control(messages, params.get("tools"), cache_control, generation)
    if js_truthy(options.get("toolChoice")):
        params["tool_choice"] = options["toolChoice"]
    effort = options.get("reasoningEffort")
    apply_thinking(params, model, effort, compat, generation)
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
    samples = sampling_params(model, effort, generation)
    if samples:
        params.update(samples)
    return params


def build_request_body(
    model: Mapping[str, Any],
    context: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
    *,
    raw_messages: Sequence[Mapping[str, Any]] | None = None,
    pi_ai: PiAi | str | None = None,
) -> str:
    """The HTTP body exactly as the ``openai`` npm SDK sends it (``JSON.stringify(params)``)."""
    return json_stringify(
        build_params(model, context, options, raw_messages=raw_messages, pi_ai=pi_ai)
    )
