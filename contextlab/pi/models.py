"""pi-ai's built-in model catalog (0.80.2), as the engine needs it.

The data file ``dialects/pi_0_80_models.json`` is generated from pi-ai's ``models.generated.js``
by ``tools/gen_pi_models.py``. ``get_model`` mirrors pi-ai's ``getModel(provider, id)``: the exact
provider and id, no aliasing.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from contextlab.pi.entries import Json

__all__ = [
    "catalog",
    "find_model",
    "get_model",
    "load_models_json",
    "models_for_provider",
    "providers",
    "strip_json_comments",
]

_DATA = Path(__file__).parent / "dialects" / "pi_0_80_models.json"


@cache
def _load() -> Json:
    with _DATA.open(encoding="utf-8") as handle:
        data: Json = json.load(handle)
    return data


def catalog() -> dict[str, dict[str, Json]]:
    """``{provider: {model id: model}}`` with ``api, input, reasoning, contextWindow, ...``."""
    models: dict[str, dict[str, Json]] = _load()["models"]
    return models


def providers() -> list[str]:
    return list(catalog())


def models_for_provider(provider: str) -> list[Json]:
    return list(catalog().get(provider, {}).values())


def get_model(provider: Any, model_id: Any) -> Json | None:
    """The catalog model for ``provider``/``model_id`` (a copy), or ``None`` if pi-ai lacks it."""
    if not isinstance(provider, str) or not isinstance(model_id, str):
        return None
    found = catalog().get(provider, {}).get(model_id)
    return json.loads(json.dumps(found)) if found is not None else None


# --------------------------------------------------------------------------------------------
# models.json (custom models), as pi-coding-agent's ModelRegistry reads it
# --------------------------------------------------------------------------------------------

_ANY = r"[^\n\r\u2028\u2029]"  # JavaScript's `.` without the s flag
_COMMENTS = re.compile(rf'"(?:\\{_ANY}|[^"\\])*"|//[^\n]*')
_TRAILING_COMMAS = re.compile(r'"(?:\\' + _ANY + r'|[^"\\])*"|,(\s*[}\]])')


def strip_json_comments(text: str) -> str:
    """Pi's ``stripJsonComments``: drop ``//`` comments and trailing commas outside strings."""
    text = _COMMENTS.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else "", text)
    return _TRAILING_COMMAS.sub(
        lambda m: m.group(1) if m.group(1) is not None else m.group(0), text
    )


def load_models_json(agent_dir: str | Path | None) -> dict[tuple[str, str], Json]:
    """Models ``<agent_dir>/models.json`` adds or overrides, keyed by ``(provider, id)``.

    Follows ``ModelRegistry.parseModels`` / ``applyModelOverride``: a custom model's ``api`` comes
    from the model, else its provider, else the provider's first built-in model (no api or no
    baseUrl: skipped); defaults ``input ["text"]``, ``contextWindow 128000``, ``maxTokens 16384``,
    zero cost. ``modelOverrides`` patch built-in models. An unreadable or invalid file adds nothing
    (Pi reports it and keeps the built-in models). Schema validation is not repeated here.
    """
    if agent_dir is None:
        return {}
    path = Path(agent_dir) / "models.json"
    try:
        config = json.loads(strip_json_comments(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}
    providers_config = config.get("providers") if isinstance(config, dict) else None
    if not isinstance(providers_config, dict):
        return {}
    found: dict[tuple[str, str], Json] = {}
    for provider, provider_config in providers_config.items():
        if not isinstance(provider_config, dict):
            continue
        built_in = models_for_provider(provider)
        overrides = provider_config.get("modelOverrides")
        if isinstance(overrides, dict):
            for model in built_in:
                override = overrides.get(model["id"])
                if isinstance(override, dict):
                    found[(provider, model["id"])] = _apply_override(model, override)
        for model_def in provider_config.get("models") or []:
            if not isinstance(model_def, dict) or not model_def.get("id"):
                continue
            api = model_def.get("api") or provider_config.get("api")
            api = api if api is not None else (built_in[0]["api"] if built_in else None)
            base_url = model_def.get("baseUrl") or provider_config.get("baseUrl")
            if not api or not (base_url or built_in):
                continue
            found[(provider, model_def["id"])] = {
                "id": model_def["id"],
                "name": model_def.get("name", model_def["id"]),
                "api": api,
                "provider": provider,
                "reasoning": model_def.get("reasoning", False),
                "input": model_def.get("input", ["text"]),
                "cost": model_def.get(
                    "cost", {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
                ),
                "contextWindow": model_def.get("contextWindow", 128000),
                "maxTokens": model_def.get("maxTokens", 16384),
            }
    return found


def _apply_override(model: Json, override: Json) -> Json:
    result: Json = json.loads(json.dumps(model))
    for key in ("name", "reasoning", "input", "contextWindow", "maxTokens"):
        if key in override and override[key] is not None:
            result[key] = override[key]
    cost = override.get("cost")
    if isinstance(cost, dict):
        result["cost"] = {
            k: cost[k] if cost.get(k) is not None else model["cost"].get(k)
            for k in ("input", "output", "cacheRead", "cacheWrite")
        }
    return result


def find_model(provider: Any, model_id: Any, agent_dir: str | Path | None = None) -> Json | None:
    """``ModelRegistry.find``: ``agent_dir``/models.json first (custom wins), then the catalog."""
    if agent_dir is not None and isinstance(provider, str) and isinstance(model_id, str):
        custom = load_models_json(agent_dir).get((provider, model_id))
        if custom is not None:
            return custom
    return get_model(provider, model_id)
