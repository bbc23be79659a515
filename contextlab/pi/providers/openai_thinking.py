"""The thinking fields of pi-ai's chat-completions body: one branch per ``thinkingFormat``
(``reasoning_effort``, z.ai's and DeepSeek's ``thinking``, OpenRouter's and Together's
``reasoning``, Qwen's and chat-template kwargs, ...) and the model's sampling parameters.

Ported from pi-ai's ``dist/api/openai-completions.js`` (``buildParams``,
``buildChatTemplateKwargs``) and ``dist/api/simple-options.js`` (``resolveSamplingParams``), keyed
by the generation (``PiAi``); MIT licence, (c) Mario Zechner / Earendil Works. Part of the
``openai_completions`` port.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_truthy
from contextlab.pi.providers.options import clamp_thinking_level
from contextlab.pi.providers.pi_ai import PiAi

__all__ = ["apply_thinking", "sampling_params"]

_UNDEFINED = object()
# Thinking formats ported for the transcript generations.
_TRANSCRIPT_THINKING_FORMATS = ("zai", "deepseek", "openrouter", "together", "openai")


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


# Long on purpose: one branch per thinking format, as pi-ai's buildParams has them.
def apply_thinking(
    params: Json, model: Mapping[str, Any], effort: str | None, compat: Json, pi_ai: PiAi
) -> None:
    if not model.get("reasoning"):
        return
    fmt = compat.get("thinkingFormat")
    if pi_ai.transcript and fmt not in _TRANSCRIPT_THINKING_FORMATS:
        raise NotImplementedError(f"thinking format {fmt!r}")
    level_map = model.get("thinkingLevelMap") or {}
    off = level_map.get("off", _UNDEFINED)
    if fmt == "zai":
        enabled: Json = {"type": "enabled"}
        if pi_ai.zai_clear_thinking:
            enabled["clear_thinking"] = False
        params["thinking"] = enabled if effort else {"type": "disabled"}
        if effort and compat["supportsReasoningEffort"]:
            mapped = level_map.get(effort, _UNDEFINED)
            value = effort if mapped is _UNDEFINED else mapped
            if isinstance(value, str):
                params["reasoning_effort"] = value
    elif fmt == "qwen":
        params["enable_thinking"] = bool(effort)
    elif fmt == "qwen-chat-template":
        params["chat_template_kwargs"] = {
            "enable_thinking": bool(effort),
            "preserve_thinking": True,
        }
    elif fmt == "chat-template":
        kwargs = _chat_template_kwargs(model, effort, compat)
        if kwargs:
            params["chat_template_kwargs"] = kwargs
    elif fmt == "deepseek":
        if effort:
            params["thinking"] = {"type": "enabled"}
        elif off is not None:
            params["thinking"] = {"type": "disabled"}
        if effort and compat["supportsReasoningEffort"]:
            params["reasoning_effort"] = _mapped(model, effort)
    elif fmt == "openrouter":
        if effort:
            params["reasoning"] = {"effort": _mapped(model, effort)}
        elif off is not None:
            params["reasoning"] = {"effort": "none" if off is _UNDEFINED else off}
    elif fmt == "ant-ling" and effort:
        value = level_map.get(effort)
        if isinstance(value, str):
            params["reasoning"] = {"effort": value}
    elif fmt == "together":
        params["reasoning"] = {"enabled": bool(effort)}
        if effort and compat["supportsReasoningEffort"]:
            params["reasoning_effort"] = _mapped(model, effort)
    elif fmt == "string-thinking":
        if effort:
            params["thinking"] = _mapped(model, effort)
        elif off is not None:
            params["thinking"] = "none" if off is _UNDEFINED else off
    elif effort and compat["supportsReasoningEffort"]:
        params["reasoning_effort"] = _mapped(model, effort)
    elif not effort and compat["supportsReasoningEffort"] and isinstance(off, str):
        params["reasoning_effort"] = off


def sampling_params(model: Mapping[str, Any], effort: str | None, pi_ai: PiAi) -> Json | None:
    """``resolveSamplingParams`` (``simple-options.js``): the model's sampling parameters (0.84
    on), with those of its clamped thinking level over them (1.0.3 on)."""
    if pi_ai.sampling == "none":
        return None
    base = model.get("samplingParams")
    by_level = None
    if pi_ai.sampling == "by-level":
        level = clamp_thinking_level(model, effort or "off", pi_ai)
        by_level = (model.get("samplingParamsByThinkingLevel") or {}).get(level)
    if not base and not by_level:
        return None
    return {**(base or {}), **(by_level or {})}
