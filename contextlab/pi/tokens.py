"""Token estimates and the context size Pi uses to decide on auto-compaction.

Truth: ``dist/core/compaction/compaction.js`` of Pi 0.80.2 (``estimateTokens``,
``calculateContextTokens``, ``getLastAssistantUsage``, ``estimateContextTokens``, ``shouldCompact``,
``DEFAULT_COMPACTION_SETTINGS``). Lengths are JavaScript ``.length`` (UTF-16 code units).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_len, json_stringify

__all__ = [
    "DEFAULT_KEEP_RECENT_TOKENS",
    "DEFAULT_RESERVE_TOKENS",
    "ESTIMATED_IMAGE_CHARS",
    "ContextEstimate",
    "assistant_usage",
    "calculate_context_tokens",
    "estimate_context_tokens",
    "estimate_tokens",
    "get_last_assistant_usage",
    "should_compact",
]

DEFAULT_RESERVE_TOKENS = 16384
DEFAULT_KEEP_RECENT_TOKENS = 20000
ESTIMATED_IMAGE_CHARS = 4800


def _length(value: Any) -> int:
    # `.length` of a string; other values (undefined, numbers) have none: NaN poisons the sum.
    if isinstance(value, str):
        return js_len(value)
    if isinstance(value, list):
        return len(value)
    raise _NaN


class _NaNError(Exception):
    pass


_NaN = _NaNError()


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return js_len(content)
    chars = 0
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
            chars += js_len(block["text"])
        elif kind == "text" and block.get("text"):
            chars += _length(block["text"])
        elif kind == "image":
            chars += ESTIMATED_IMAGE_CHARS
    return chars


def _stringify_length(value: Any) -> int:
    """``JSON.stringify(value).length``; ``.length`` of undefined throws (NaN here). At any
    depth: json_stringify writes deep values from an explicit stack."""
    return _length(json_stringify(value))


def _ceil_quarter(chars: int) -> int:
    return math.ceil(chars / 4)


def estimate_tokens(message: Json) -> int | float:
    """Pi's ``estimateTokens``: ``ceil(chars / 4)`` with chars counted per role (UTF-16 units).

    Returns ``nan`` where JavaScript would compute NaN (a field that is not a string).
    """
    try:
        role = message.get("role")
        if role in ("user", "custom", "toolResult"):
            return _ceil_quarter(_content_chars(message.get("content")))
        if role == "assistant":
            chars = 0
            for block in message.get("content") or []:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "text":
                    chars += _length(block.get("text"))
                elif kind == "thinking":
                    chars += _length(block.get("thinking"))
                elif kind == "toolCall":
                    # JSON.stringify(undefined) is undefined: `.length` of it throws in Pi.
                    chars += _length(block.get("name")) + (
                        _stringify_length(block["arguments"])
                        if "arguments" in block
                        else _length(None)
                    )
            return _ceil_quarter(chars)
        if role == "bashExecution":
            return _ceil_quarter(_length(message.get("command")) + _length(message.get("output")))
        if role in ("branchSummary", "compactionSummary"):
            return _ceil_quarter(_length(message.get("summary")))
    except _NaNError:
        return math.nan
    return 0


def calculate_context_tokens(usage: Json) -> int | float:
    """``usage.totalTokens || input + output + cacheRead + cacheWrite``."""
    total: int | float | None = usage.get("totalTokens")
    if total:
        return total
    try:
        parts = [usage[k] for k in ("input", "output", "cacheRead", "cacheWrite")]
    except KeyError:
        return math.nan
    if not all(isinstance(p, int | float) for p in parts):
        return math.nan
    total_of_parts: int | float = sum(parts)
    return total_of_parts


def assistant_usage(message: Any) -> Json | None:
    """The usage of a non-error, non-aborted assistant message with a positive total, else None."""
    if (
        not isinstance(message, dict)
        or message.get("role") != "assistant"
        or "usage" not in message
    ):
        return None
    usage = message.get("usage")
    if (
        message.get("stopReason") in ("aborted", "error")
        or not isinstance(usage, dict)
        or not usage
    ):
        return None
    tokens = calculate_context_tokens(usage)
    if not (tokens > 0):
        return None
    return usage


def get_last_assistant_usage(entries: Sequence[Json]) -> Json | None:
    """Scan entries backwards (``message`` entries only) for the last valid assistant usage."""
    for entry in reversed(entries):
        if entry.get("type") == "message":
            usage = assistant_usage(entry.get("message"))
            if usage is not None:
                return usage
    return None


@dataclass(frozen=True)
class ContextEstimate:
    tokens: int | float
    usage_tokens: int | float
    trailing_tokens: int | float
    last_usage_index: int | None

    def as_dict(self) -> Json:
        return {
            "tokens": self.tokens,
            "usageTokens": self.usage_tokens,
            "trailingTokens": self.trailing_tokens,
            "lastUsageIndex": self.last_usage_index,
        }


def estimate_context_tokens(messages: Sequence[Json]) -> ContextEstimate:
    """Last valid assistant usage plus estimates of every message after it (or all estimates)."""
    for index in range(len(messages) - 1, -1, -1):
        usage = assistant_usage(messages[index])
        if usage is not None:
            usage_tokens = calculate_context_tokens(usage)
            trailing: int | float = 0
            for message in messages[index + 1 :]:
                trailing += estimate_tokens(message)
            return ContextEstimate(usage_tokens + trailing, usage_tokens, trailing, index)
    estimated: int | float = 0
    for message in messages:
        estimated += estimate_tokens(message)
    return ContextEstimate(estimated, 0, estimated, None)


def should_compact(
    tokens: int | float,
    context_window: int | float,
    reserve_tokens: int | float = DEFAULT_RESERVE_TOKENS,
    enabled: bool = True,
) -> bool:
    """``enabled && tokens > contextWindow - reserveTokens`` (strict)."""
    if not enabled:
        return False
    return bool(tokens > context_window - reserve_tokens)
