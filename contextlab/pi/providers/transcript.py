"""pi-ai's transcript (0.87.0 on): the prompt and tool declarations travel as ``system``
messages among the others, and ``transformMessages`` keeps them in place.

Ported from ``@earendil-works/pi-ai@1.6.0`` ``dist/utils/transcript.js``
(``getCurrentSystemMessage``, ``getCurrentTools``, ``collapseSystemMessages``,
``resolveTranscriptTools``), ``dist/utils/text.js`` (``getSystemMessageText``,
``renderSystemMessageUpdate``) and ``dist/api/transform-messages.js`` (the 1.x
``transformMessages``; before 1.3.0 another model's thinking was sent as text, see ``PiAi``).
Both provider ports use them; MIT licence, (c) Mario Zechner / Earendil Works.

The 0.x ``transformMessages`` (no system messages, thinking of another model always sent as
text) is ``contextlab.pi.context.transform_messages``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contextlab.pi.context import replace_images
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_len, js_trim, js_truthy
from contextlab.pi.providers.pi_ai import PiAi

__all__ = [
    "NO_RESULT_TEXT",
    "collapse_system_messages",
    "content_text",
    "current_system_message",
    "current_tools",
    "has_tool_history",
    "render_system_message_update",
    "resolve_transcript_tools",
    "system_message_text",
    "transform_messages",
]

_UNDEFINED: Any = object()
NO_RESULT_TEXT = "No result provided"
NON_VISION_USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
NON_VISION_TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"


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


def has_tool_history(messages: Sequence[Mapping[str, Any]]) -> bool:
    """``hasToolHistory``: a tool result, or an assistant message with a tool call."""
    for message in messages:
        if message.get("role") == "toolResult":
            return True
        if message.get("role") == "assistant" and any(
            isinstance(block, dict) and block.get("type") == "toolCall"
            for block in message.get("content") or []
        ):
            return True
    return False


# --- transformMessages (dist/api/transform-messages.js) ---------------------------------------


# Long on purpose: it follows pi-ai 1.x's transformMessages statement by statement (with the older
# generations' differences inline), so that the two read side by side.
def transform_messages(
    messages: Sequence[Json],
    model: Mapping[str, Any],
    pi_ai: PiAi,
    normalize_tool_call_id: Callable[[str], str],
) -> list[Json]:
    """``transformMessages(messages, model, normalizeToolCallId)`` of the transcript
    generations: images of a model without image input become placeholders; another model's
    thinking is dropped (sent as text before 1.3.0), its text and tool calls kept (ids through
    the provider's ``normalize_tool_call_id``, a result following its call's new id); error and
    aborted replies are skipped, a call left without a result gets ``No result provided``, and a
    system message met while calls wait for their results goes after them."""
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
            if kind == "thinking" and pi_ai.foreign_thinking_as_text:
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
                    new_id = normalize_tool_call_id(call.get("id", ""))
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
