"""One summarisation call on the wire: the body pi-ai sends for a compaction, turn-prefix or
branch-summary request, and the usage it reports for the reply.

A summary request is ``{systemPrompt, messages: [one user message], maxTokens}`` (the engine's
``contextlab.pi.summaries`` builds it); the summariser gets the session's thinking level.

- Pi 0.80.2 (``completeSimple`` with ``{maxTokens, reasoning?}``): the openai-completions body of
  ``openai_completions`` or the anthropic-messages body of ``anthropic_messages``; the thinking
  level is passed only to a model that reasons, and not when it is ``off``
  (``compaction.js``; branch summaries pass none).
- Pi 1.x (``completeSummarization``: no cache retention, a fresh routing id that puts no
  ``prompt_cache_key`` in the body; ``createSummarizationOptions``: no ``maxTokens``, so pi-ai's
  clamp of ``model.maxTokens``, computed by the caller, and the thinking level clamped to the
  model's levels): the openai-completions body of ``openai_completions`` with ``maxTokens`` as
  ``max_completion_tokens``, or the anthropic-messages body of ``anthropic_messages`` (no
  ``cache_control``; with a thinking budget the cap is clamped to the context window again; its
  betas, ``summary_betas``, go as a header to ``/v1/messages?beta=true``), both for the pi-ai
  generation ``variant`` (a ``PiAi`` or a name ``pi_ai.resolve`` knows).

Usage: pi-ai's ``parseChunkUsage`` (openai-completions), the anthropic-messages stream's usage
and ``calculateCost`` (models.js); 1.x also reports ``reasoning`` tokens (Anthropic: only when the
reply reports thinking tokens), ``cacheWrite1h`` (Anthropic) and ``cost.totalFromProvider``, and
``combine_usage`` is the coding agent's ``combineUsage`` (usage-totals.js) for a split turn's two
replies.
MIT licence, (c) Mario Zechner / Earendil Works.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from contextlab.pi.entries import Json
from contextlab.pi.providers import anthropic_messages, openai_completions
from contextlab.pi.providers.options import clamp_max_tokens, estimate_context_tokens
from contextlab.pi.providers.pi_ai import PiAi

__all__ = [
    "anthropic_usage",
    "calculate_cost",
    "combine_usage",
    "openai_usage",
    "summary_betas",
    "summary_reasoning",
    "summary_request_body",
    "usage_of",
]


def summary_reasoning(
    model: Mapping[str, Any], thinking_level: Any, variant: PiAi | str | None
) -> str | None:
    """The reasoning a summary call carries for the summariser's ``thinking_level``: only for a
    model that reasons and a level that is not ``off``; pi-ai 1.x (``variant``) clamps it to the
    model's supported levels (None if that leaves ``off``)."""
    if not model.get("reasoning") or not isinstance(thinking_level, str):
        return None
    if not thinking_level or thinking_level == "off":
        return None
    if variant is None:
        return thinking_level
    clamped = openai_completions.clamp_thinking_level(model, thinking_level, variant)
    return clamped if clamped != "off" else None


def summary_betas(model: Json, thinking_level: Any, variant: PiAi | str | None) -> list[str] | None:
    """The ``anthropic-beta`` features pi-ai 1.x sends (as a header, to
    ``/v1/messages?beta=true``) with a summary to an anthropic-messages ``model``:
    ``getBetaFeatures`` with thinking enabled when the call carries reasoning. None: not such a
    call (Pi 0.80.2 sends interleaved thinking with every request, on ``/v1/messages``)."""
    if variant is None or model.get("api") != "anthropic-messages":
        return None
    reasoning = summary_reasoning(model, thinking_level, variant)
    options = {"thinkingEnabled": reasoning is not None, "cacheRetention": "none"}
    return anthropic_messages.beta_features(model, options, variant)


def summary_request_body(
    model: Json,
    request: Mapping[str, Any],
    *,
    thinking_level: Any,
    variant: PiAi | str | None,
    tool_choice: str | None = None,
) -> Json:
    """The JSON body pi-ai sends to ``model`` (its ``api`` picks the provider) for one summary
    ``request``, keys in pi-ai's order; ``variant`` is the pi-ai 1.x generation (None: 0.80.2)."""
    reasoning = summary_reasoning(model, thinking_level, variant)
    api = model.get("api")
    # Pi 1.x's normalizeContext: the prompt as the transcript's leading system message.
    messages: list[Json] = [
        {"role": "system", "content": request["systemPrompt"], "timestamp": 0},
        *({**m, "timestamp": 0} for m in request["messages"]),
    ]
    if variant is not None and api == "anthropic-messages":
        return anthropic_messages.build_simple_params(
            model,
            {"messages": messages},
            {"maxTokens": request["maxTokens"], "reasoning": reasoning, "cacheRetention": "none"},
            pi_ai=variant,
            clamp_to_context=lambda cap: _clamp_to_context(model, messages, cap, variant),
        )
    if variant is not None and api == "openai-completions":
        stream_options = openai_completions.simple_options(
            model, reasoning=reasoning, max_tokens=request["maxTokens"], pi_ai=variant
        )
        body = openai_completions.build_request_body(
            model, {"messages": messages}, stream_options, pi_ai=variant
        )
        parsed: Json = json.loads(body)
        return parsed
    context = {"systemPrompt": request["systemPrompt"], "messages": request["messages"]}
    options: Json = {"maxTokens": request["maxTokens"]}
    if reasoning is not None:
        options["reasoning"] = reasoning
    if api == "anthropic-messages":
        return anthropic_messages.build_simple_params(model, context, options)
    if api == "openai-completions":
        # A summarisation request is one user message: transformMessages leaves it unchanged.
        stream_options = openai_completions.simple_options(
            model, reasoning=options.get("reasoning"), max_tokens=options["maxTokens"]
        )
        if tool_choice is not None:
            stream_options["toolChoice"] = tool_choice
        return openai_completions.build_params(model, context, stream_options)
    raise ValueError(f"model api {api!r} sends no HTTP request")


def _clamp_to_context(model: Json, messages: list[Json], cap: int, variant: PiAi | str) -> int:
    """pi-ai 1.x's ``clampMaxTokensToContext`` of ``cap`` for this summary transcript."""
    return clamp_max_tokens(
        int(model.get("contextWindow") or 0),
        cap,
        estimate_context_tokens(messages, variant),
        variant,
    )


def calculate_cost(model: Mapping[str, Any], usage: Json, variant: PiAi | str | None) -> Json:
    """``calculateCost``: price per million tokens times tokens, per bucket (a 1h cache write at
    twice the input price); pi-ai 1.x picks the tier the input falls in and adds
    ``totalFromProvider: false``. Sets and returns ``usage["cost"]``."""
    rates: Mapping[str, Any] = model.get("cost") or {}
    if variant is not None:
        threshold = -1
        inputs = usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
        for tier in rates.get("tiers") or []:
            above = tier.get("inputTokensAbove", 0)
            if inputs > above and above > threshold:
                rates, threshold = tier, above
    long_write = usage.get("cacheWrite1h") or 0
    short_write = usage["cacheWrite"] - long_write
    cost: Json = usage["cost"]
    cost["input"] = (rates.get("input", 0) / 1_000_000) * usage["input"]
    cost["output"] = (rates.get("output", 0) / 1_000_000) * usage["output"]
    cost["cacheRead"] = (rates.get("cacheRead", 0) / 1_000_000) * usage["cacheRead"]
    cost["cacheWrite"] = (
        rates.get("cacheWrite", 0) * short_write + rates.get("input", 0) * 2 * long_write
    ) / 1_000_000
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    if variant is not None:
        cost["totalFromProvider"] = False
    return cost


def usage_of(
    model: Mapping[str, Any],
    *,
    input: int,
    output: int,
    cache_read: int = 0,
    cache_write: int = 0,
    reasoning: int = 0,
    variant: PiAi | str | None = None,
) -> Json:
    """A reply's ``usage`` as pi-ai records it for these token counts (1.x: with
    ``reasoning``), its cost from ``model``'s prices."""
    usage: Json = {
        "input": input,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
    }
    if variant is not None:
        usage["reasoning"] = reasoning
    usage["totalTokens"] = input + output + cache_read + cache_write
    usage["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    calculate_cost(model, usage, variant)
    return usage


def anthropic_usage(
    model: Mapping[str, Any],
    *,
    input: int,
    output: int,
    cache_read: int = 0,
    cache_write: int = 0,
    cache_write_1h: int = 0,
    reasoning: int | None = None,
    variant: PiAi | str | None = None,
) -> Json:
    """A reply's ``usage`` as pi-ai's anthropic-messages stream records it. 1.x: the usage object
    it starts with (no ``reasoning``), ``cacheWrite1h`` added by ``message_start``, ``reasoning``
    by a ``message_delta`` that reports ``output_tokens_details.thinking_tokens``; 0.80.2: as
    ``usage_of``."""
    if variant is None:
        return usage_of(
            model, input=input, output=output, cache_read=cache_read, cache_write=cache_write
        )
    usage: Json = {
        "input": input,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": input + output + cache_read + cache_write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        "cacheWrite1h": cache_write_1h,
    }
    if reasoning is not None:
        usage["reasoning"] = reasoning
    calculate_cost(model, usage, variant)
    return usage


def openai_usage(
    model: Mapping[str, Any], raw: Mapping[str, Any], variant: PiAi | str | None
) -> Json:
    """``parseChunkUsage``: the usage of a chat-completions stream's usage chunk (``raw``, as
    the API sends it). Cached prompt tokens are cache reads, ``cache_write_tokens`` writes; the
    rest of the prompt is input."""
    details = raw.get("prompt_tokens_details") or {}
    prompt = raw.get("prompt_tokens") or 0
    cache_read = details.get("cached_tokens")
    if cache_read is None:
        cache_read = raw.get("prompt_cache_hit_tokens")
    if cache_read is None and variant is not None:
        cache_read = raw.get("cached_tokens")
    cache_read = cache_read or 0
    cache_write = details.get("cache_write_tokens") or 0
    completion_details = raw.get("completion_tokens_details") or {}
    return usage_of(
        model,
        input=max(0, prompt - cache_read - cache_write),
        output=raw.get("completion_tokens") or 0,
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=completion_details.get("reasoning_tokens") or raw.get("reasoning_tokens") or 0,
        variant=variant,
    )


def combine_usage(first: Mapping[str, Any], second: Mapping[str, Any]) -> Json:
    """``combineUsage``: the sum of two replies' usage (Pi 1.x's split-turn compaction), the
    optional splits kept when either side has them; a sum's cost is the provider's only when
    both parts' are."""
    out: Json = {
        key: first.get(key, 0) + second.get(key, 0)
        for key in ("input", "output", "cacheRead", "cacheWrite")
    }
    for key in ("cacheWrite1h", "reasoning"):
        if key in first or key in second:
            out[key] = (first.get(key) or 0) + (second.get(key) or 0)
    out["totalTokens"] = first.get("totalTokens", 0) + second.get("totalTokens", 0)
    a, b = first.get("cost") or {}, second.get("cost") or {}
    out["cost"] = {
        key: a.get(key, 0) + b.get(key, 0)
        for key in ("input", "output", "cacheRead", "cacheWrite", "total")
    }
    out["cost"]["totalFromProvider"] = (
        a.get("totalFromProvider") is True and b.get("totalFromProvider") is True
    )
    return out
