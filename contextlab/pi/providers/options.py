"""pi-ai's ``streamSimple`` options: the ``maxTokens`` a request carries, the context estimate
it is clamped with, and the thinking levels a model offers (``dist/models.js``).

Ported from pi-ai's ``dist/api/simple-options.js`` (``buildBaseOptions``,
``clampMaxTokensToContext``, ``adjustMaxTokensForThinking``) and ``dist/utils/estimate.js``
(``estimateContextTokens``), keyed by the generation (``PiAi``): up to 0.75 an agent turn is
capped at ``min(model.maxTokens, 32000)``; 0.76 to 0.80.2 send none; from 0.80.3 the model's
``maxTokens`` is clamped to the room the estimated input leaves in the window (a 4096 margin; from
1.5.0 15 % of the input when that still leaves 32768), the estimate counting chars / 4 (chars /
3.5 from 1.3.0). MIT licence, (c) Mario Zechner / Earendil Works.

    max_tokens = turn_max_tokens(model, messages, pi_ai, system_prompt=..., tools=...)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_len, js_truthy, json_stringify
from contextlab.pi.providers.pi_ai import PiAi, resolve
from contextlab.pi.providers.transcript import system_message_text

__all__ = [
    "DEFAULT_THINKING_BUDGETS",
    "adjust_max_tokens_for_thinking",
    "assistant_chars",
    "calculate_context_tokens",
    "clamp_max_tokens",
    "clamp_thinking_level",
    "estimate_context_tokens",
    "estimate_message_tokens",
    "supported_thinking_levels",
    "turn_max_tokens",
]

ESTIMATED_IMAGE_CHARS = 4800
CONTEXT_SAFETY_TOKENS = 4096
CONTEXT_SAFETY_RATIO = 0.15
MIN_OUTPUT_WITH_RATIO_MARGIN = 32768
TURN_CAP = 32000
# Levels a model offers only when its thinkingLevelMap names them.
_OPT_IN = ("xhigh", "max")
_UNDEFINED = object()
MIN_ANSWER_TOKENS = 1024
DEFAULT_THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}


def _tokens_of_chars(chars: int, pi_ai: PiAi) -> int:
    """``Math.ceil(chars / CHARS_PER_TOKEN)``, in integers (``chars_per_token_x2`` is twice
    it)."""
    return -(-(chars * 2) // pi_ai.chars_per_token_x2)


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return js_len(content)
    chars = 0
    for block in content or []:
        if block.get("type") == "text":
            chars += js_len(block.get("text", ""))
        else:
            chars += ESTIMATED_IMAGE_CHARS
    return chars


def _tools_tokens(tools: Any, pi_ai: PiAi) -> int:
    if not tools:
        return 0
    return _tokens_of_chars(js_len(json_stringify(tools)), pi_ai)


def estimate_message_tokens(message: Mapping[str, Any], pi_ai: PiAi | str | None = None) -> int:
    """``estimateMessageTokens``: a system message's prompt text and tool changes, user and tool
    result text (4800 characters an image), an assistant's text, thinking and tool calls."""
    generation = resolve(pi_ai)
    role = message.get("role")
    if role == "system":
        return (
            _tokens_of_chars(js_len(system_message_text(message)), generation)
            + _tools_tokens(message.get("toolsAdded"), generation)
            + _tools_tokens(message.get("toolsRemoved"), generation)
        )
    if role in ("user", "toolResult"):
        return _tokens_of_chars(_content_chars(message.get("content")), generation)
    return _tokens_of_chars(assistant_chars(message), generation)


def assistant_chars(message: Mapping[str, Any], *, calls_only: bool = False) -> int:
    """The characters an assistant message counts for: text, thinking, and each tool call's
    name plus ``JSON.stringify`` of its arguments. pi-ai counts any other block as a call; the
    coding agent's compaction estimate (``calls_only``) only ``toolCall`` blocks."""
    chars = 0
    for block in message.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            chars += js_len(block.get("text", ""))
        elif kind == "thinking":
            chars += js_len(block.get("thinking", ""))
        elif kind == "toolCall" or not calls_only:
            arguments = json_stringify(block.get("arguments"))
            chars += js_len(block.get("name", "")) + js_len(arguments)
    return chars


def calculate_context_tokens(usage: Mapping[str, Any]) -> Any:
    """``calculateContextTokens``: ``totalTokens``, else the sum of the four buckets."""
    total = usage.get("totalTokens")
    if js_truthy(total):
        return total
    return (
        (usage.get("input") or 0)
        + (usage.get("output") or 0)
        + (usage.get("cacheRead") or 0)
        + (usage.get("cacheWrite") or 0)
    )


def _last_usage(messages: Sequence[Mapping[str, Any]]) -> tuple[int | None, Any]:
    """``getLastAssistantUsageInfo``: (index, tokens) of the last valid assistant usage not older
    than a message before it (a compaction summary inserted later invalidates older usage)."""
    latest_prefix = -math.inf
    usage_index: int | None = None
    usage_value: Any = 0
    for index, message in enumerate(messages):
        timestamp = message.get("timestamp")
        stamp = timestamp if isinstance(timestamp, (int, float)) else math.nan
        if message.get("role") == "assistant":
            usage = message.get("usage") or {}
            applies = stamp >= latest_prefix
            tokens = calculate_context_tokens(usage)
            if applies and message.get("stopReason") not in ("aborted", "error") and tokens > 0:
                usage_index, usage_value = index, tokens
        latest_prefix = max(latest_prefix, stamp) if not math.isnan(stamp) else math.nan
    return usage_index, usage_value


def estimate_context_tokens(
    messages: Sequence[Mapping[str, Any]],
    pi_ai: PiAi | str | None = None,
    *,
    system_prompt: str | None = None,
    tools: Sequence[Json] | None = None,
) -> int:
    """``estimateContextTokens(context).tokens``: the last valid assistant usage plus the
    estimate of what follows it; without one, the estimate of everything.

    Before the transcript API the context also holds ``system_prompt`` and ``tools``: without a
    usage they count too; after one, only the tools later tool results added
    (``addedToolNames``). With it, the system messages among ``messages`` count themselves."""
    generation = resolve(pi_ai)
    usage_index, usage_value = _last_usage(messages)
    if usage_index is not None:
        trailing = messages[usage_index + 1 :]
        tokens = usage_value + sum(estimate_message_tokens(m, generation) for m in trailing)
        if not generation.transcript and tools:
            added = {
                name
                for m in trailing
                if m.get("role") == "toolResult"
                for name in m.get("addedToolNames") or []
            }
            tokens += _tools_tokens([t for t in tools if t.get("name") in added], generation)
        return int(tokens)
    tokens = sum(estimate_message_tokens(m, generation) for m in messages)
    if not generation.transcript:
        if system_prompt:
            tokens += _tokens_of_chars(js_len(system_prompt), generation)
        tokens += _tools_tokens(tools, generation)
    return int(tokens)


def clamp_max_tokens(
    context_window: int, max_tokens: int, input_tokens: int, pi_ai: PiAi | str | None = None
) -> int:
    """``clampMaxTokensToContext``: the output cap left once the input and a safety margin are
    in the window (``PiAi.clamp_margin``: 4096, or max(4096, 15 % of the input) while that
    leaves 32768)."""
    if context_window <= 0:
        return max(1, max_tokens)
    if resolve(pi_ai).clamp_margin == "fixed":
        return min(max_tokens, max(1, context_window - input_tokens - CONTEXT_SAFETY_TOKENS))
    margin = max(CONTEXT_SAFETY_TOKENS, math.ceil(input_tokens * CONTEXT_SAFETY_RATIO))
    room = context_window - input_tokens - margin
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN:
        room = min(
            MIN_OUTPUT_WITH_RATIO_MARGIN, context_window - input_tokens - CONTEXT_SAFETY_TOKENS
        )
    return min(max_tokens, max(1, room))


def turn_max_tokens(
    model: Mapping[str, Any],
    messages: Sequence[Mapping[str, Any]],
    pi_ai: PiAi | str | None = None,
    *,
    requested: int | None = None,
    system_prompt: str | None = None,
    tools: Sequence[Json] | None = None,
) -> int | None:
    """``buildBaseOptions``' ``maxTokens`` for a call asking for ``requested`` (agent turns
    ask for none): as asked, the 32000 cap, or the clamp of ``requested ?? model.maxTokens``
    (``PiAi.turn_max_tokens``). None: nothing is sent (or the model's limits are unknown)."""
    generation = resolve(pi_ai)
    model_max = model.get("maxTokens")
    if generation.turn_max_tokens == "none":
        return requested
    if generation.turn_max_tokens == "model":
        if requested is not None:
            return requested
        return int(model_max) if model_max and model_max > 0 else None
    if generation.turn_max_tokens == "cap":
        if requested is not None:
            return requested
        return int(min(model_max, TURN_CAP)) if model_max and model_max > 0 else None
    cap = requested if requested is not None else model_max
    if cap is None:
        return None
    estimate = estimate_context_tokens(
        messages, generation, system_prompt=system_prompt, tools=tools
    )
    return clamp_max_tokens(int(model.get("contextWindow") or 0), int(cap), estimate, generation)


def adjust_max_tokens_for_thinking(
    base_max_tokens: int | None, model_max_tokens: int, level: str, custom: Json | None = None
) -> tuple[int, int]:
    """``adjustMaxTokensForThinking`` → ``(maxTokens, thinkingBudget)``: the budget of the level
    (``xhigh`` and ``max`` take ``high``'s) added to the cap within the model's, and at least
    1024 tokens left for the answer when that leaves no room."""
    budgets = {**DEFAULT_THINKING_BUDGETS, **(custom or {})}
    budget = budgets["high" if level in ("xhigh", "max") else level]
    if base_max_tokens is None:
        max_tokens = model_max_tokens
    else:
        max_tokens = min(base_max_tokens + budget, model_max_tokens)
    if max_tokens <= budget:
        budget = max(0, max_tokens - MIN_ANSWER_TOKENS)
    return max_tokens, budget


# --- thinking levels (dist/models.js) --------------------------------------------------------


def supported_thinking_levels(
    model: Mapping[str, Any], pi_ai: PiAi | str | None = None
) -> list[str]:
    """``getSupportedThinkingLevels``: the generation's levels a reasoning model offers; "xhigh"
    and "max" only when its ``thinkingLevelMap`` names them, any mapped to null never."""
    if not model.get("reasoning"):
        return ["off"]
    level_map = model.get("thinkingLevelMap") or {}
    out = []
    for level in resolve(pi_ai).thinking_levels:
        mapped = level_map.get(level, _UNDEFINED)
        if mapped is None:
            continue
        if level in _OPT_IN and mapped is _UNDEFINED:
            continue
        out.append(level)
    return out


def clamp_thinking_level(
    model: Mapping[str, Any], level: str, pi_ai: PiAi | str | None = None
) -> str:
    """``clampThinkingLevel``: the requested level, else the nearest higher one, else lower."""
    levels = resolve(pi_ai).thinking_levels
    available = supported_thinking_levels(model, pi_ai)
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
