"""pi-ai's built-in model catalog (0.80.2), as the engine needs it.

The data file ``dialects/pi_0_80_models.json`` is generated from pi-ai's ``models.generated.js``
by ``tools/gen_pi_models.py``. ``get_model`` mirrors pi-ai's ``getModel(provider, id)``: the exact
provider and id, no aliasing.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["catalog", "catalog_version", "get_model", "models_for_provider", "providers"]

_DATA = Path(__file__).parent / "dialects" / "pi_0_80_models.json"


@cache
def _load() -> dict[str, Any]:
    with _DATA.open(encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def catalog() -> dict[str, dict[str, dict[str, Any]]]:
    """``{provider: {model id: model}}`` with ``api, input, reasoning, contextWindow, ...``."""
    models: dict[str, dict[str, dict[str, Any]]] = _load()["models"]
    return models


def catalog_version() -> str:
    return str(_load()["piAiVersion"])


def providers() -> list[str]:
    return list(catalog())


def models_for_provider(provider: str) -> list[dict[str, Any]]:
    return list(catalog().get(provider, {}).values())


def get_model(provider: Any, model_id: Any) -> dict[str, Any] | None:
    """The catalog model for ``provider``/``model_id`` (a copy), or ``None`` if pi-ai lacks it."""
    if not isinstance(provider, str) or not isinstance(model_id, str):
        return None
    found = catalog().get(provider, {}).get(model_id)
    return json.loads(json.dumps(found)) if found is not None else None
